// The one way to reach a charge's workflow: start it, or attach to the running one, with the
// outcome update (update-with-start) and wait for the provider's answer, up to a limit past which the
// workflow answers the charge as it stands. Ids and messages come from workflows/charge/messages.ts.
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { chargeMetadata } from '../operations/workflow-summaries';
import { BillingStatusKey } from '../../workflows/search-attributes';
import { INPUT_VERSION } from '../../workflows/lib/input-version';
import { ApiError } from '../../domain/errors';
import type { SubscriptionDoc } from '../../store/subscriptions';
import { chargeOutcomeUpdate, chargeWorkflowId, type ChargeAnswer, type ChargeWorkflowInput } from '../../workflows/charge/messages';
import { subscriptionSearchAttributes } from '../operations/search-attributes';

/** The charge's run has closed (Temporal refuses to run its id again): MongoDB holds the answer. */
export type ChargeRunClosed = { kind: 'closed'; error: unknown };

/** How long past its wait a request gives the workflow to show the charge before deciding its workers are away. */
const WORKERS_GRACE_MS = 15_000;

/** No worker took the charge in time (it still runs once one does): a 503 releases the key, and the retry attaches to it. */
export const chargeWorkersAway = () =>
  new ApiError(
    'service_unavailable',
    'The charge was started but is not being processed yet. Retry after 5 seconds with the same Idempotency-Key to get it.',
    {
      headers: { 'Retry-After': '5' },
    },
  );

function isAlreadyStarted(error: unknown): boolean {
  for (let e = error as { name?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.name === 'WorkflowExecutionAlreadyStartedError') return true;
  }
  return false;
}

/** Rejects with 503 when the workflow has not answered well past `maxWaitMs` (its own wait); no limit when absent. */
async function withinWait<T>(waiting: Promise<T>, maxWaitMs: number | undefined): Promise<T> {
  if (maxWaitMs === undefined) return waiting;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      waiting,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(chargeWorkersAway()), maxWaitMs + WORKERS_GRACE_MS);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function chargeClient(temporal: Client, taskQueue: string) {
  /**
   * Starts the charge (or attaches to its running workflow) and waits for its outcome. A closed run
   * answers `closed`: requests under one key attach to the running charge, a finished one never runs again.
   */
  async function start(
    input: ChargeWorkflowInput,
    subscription: Pick<SubscriptionDoc, '_id' | 'store_id' | 'customer'>,
    maxWaitMs?: number,
  ): Promise<ChargeAnswer | ChargeRunClosed> {
    try {
      const waiting = temporal.workflow.executeUpdateWithStart(chargeOutcomeUpdate, {
        args: [
          { fingerprint: input.fingerprint, requestId: input.requestId, ...(maxWaitMs === undefined ? {} : { answerUndecidedAfterMs: maxWaitMs }) },
        ],
        startWorkflowOperation: new WithStartWorkflowOperation('chargeWorkflow', {
          workflowId: chargeWorkflowId(input.storeId, input.key),
          taskQueue,
          args: [{ ...input, version: INPUT_VERSION }],
          // MongoDB answers for a closed run, and keeps answering after Temporal's retention drops it.
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: [...subscriptionSearchAttributes(subscription), { key: BillingStatusKey, value: 'charging' }],
          ...chargeMetadata(input),
        }),
      });
      // Past the grace the update goes on unobserved; its eventual failure is not ours to report.
      waiting.catch(() => undefined);
      return await withinWait(waiting, maxWaitMs);
    } catch (error) {
      if (error instanceof ApiError || !isAlreadyStarted(error)) throw error;
      return { kind: 'closed', error };
    }
  }

  /** The refusal a closed run ended with (the subscription's workflow refused the charge), while Temporal keeps the run. */
  async function closedRefusal(storeId: string, key: string): Promise<Extract<ChargeAnswer, { kind: 'refused' }> | null> {
    try {
      const result: unknown = await temporal.workflow.getHandle(chargeWorkflowId(storeId, key)).result();
      return result && typeof result === 'object' && (result as { kind?: string }).kind === 'refused'
        ? (result as Extract<ChargeAnswer, { kind: 'refused' }>)
        : null;
    } catch {
      return null;
    }
  }

  return { start, closedRefusal };
}
