// The one way to reach a checkout session's workflow: start it (with its search attributes), take it
// back when its document was not stored, expire it, the hosted page's `pay` update (answered within a
// bound, else "not yet") and whether an attempt is in flight. Ids and messages come from
// workflows/checkout-session/messages.ts.
import { WorkflowUpdateFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import {
  CHECKOUT_SESSION_WORKFLOW,
  checkoutSessionWorkflowId,
  expireUpdate,
  NOT_OPEN_FAILURE,
  payUpdate,
  stateQuery,
  type CheckoutWorkflowInput,
  type PayAnswer,
  type PayInput,
} from '../../workflows/checkout-session/messages';
import { taskQueueFor } from '../../workflows/test-clock/messages';
import type { CheckoutSessionObject } from '../../resources/checkout-session';
import { checkoutMetadata, checkoutSearchAttributes } from '../operations/workflow-summaries';
import { INPUT_VERSION } from '../../workflows/lib/input-version';

/** True when the workflow refused an action because the session is no longer open. */
export function isNotOpenRefusal(error: unknown): boolean {
  return refusalType(error) === NOT_OPEN_FAILURE;
}

/** The workflow's refusal type (NOT_OPEN_FAILURE, PAYMENT_IN_PROGRESS_FAILURE...), or null for any other error. */
function refusalType(error: unknown): string | null {
  if (!(error instanceof WorkflowUpdateFailedError)) return null;
  return (error.cause as { type?: string } | undefined)?.type ?? null;
}

/** An attempt the provider has not answered for: its charge running, or its tries out of time (being confirmed). */
export type UnsettledAttempt = 'charging' | 'unknown';

/** The pay update as the page sees it: answered, refused by the validator, or no answer within the bound. */
export type PayReply = { kind: 'answered'; answer: PayAnswer } | { kind: 'refused'; type: string; message: string } | { kind: 'unanswered' };

/** `promise`'s value within `ms`, else `fallback`; a later failure of `promise` is ignored. */
async function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  promise.catch(() => undefined);
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function checkoutSessionClient(temporal: Client, taskQueue: string) {
  const handle = (sessionId: string): WorkflowHandle => temporal.workflow.getHandle(checkoutSessionWorkflowId(sessionId));

  return {
    /**
     * One payment attempt through the workflow. Temporal away or a slow provider is `unanswered`
     * after `waitMs`: the workflow, if it took the update, finishes the attempt on its own.
     */
    async pay(sessionId: string, input: PayInput, waitMs: number): Promise<PayReply> {
      const update = handle(sessionId)
        .executeUpdate(payUpdate, { args: [input] })
        .then(
          (answer): PayReply => ({ kind: 'answered', answer }),
          (error: unknown): PayReply => {
            const type = refusalType(error);
            return type ? { kind: 'refused', type, message: ((error as Error).cause as Error | undefined)?.message ?? '' } : { kind: 'unanswered' };
          },
        );
      return within(update, waitMs, { kind: 'unanswered' });
    },

    /** The attempt not yet answered for (charging or unknown), false when none is, null when the workflow could not be asked in time. */
    async attemptInFlight(sessionId: string, waitMs: number): Promise<UnsettledAttempt | false | null> {
      const unsettled = (status: string): status is UnsettledAttempt => status === 'charging' || status === 'unknown';
      const asked = handle(sessionId)
        .query(stateQuery)
        .then(
          (state) => state.attempts.map((attempt) => attempt.status).find(unsettled) ?? false,
          () => null,
        );
      return within(asked, waitMs, null);
    },

    /** Starts the session's workflow; a start that finds the id running attaches, a closed one is refused. */
    async start(input: CheckoutWorkflowInput, doc: Parameters<typeof checkoutMetadata>[0]): Promise<void> {
      await temporal.workflow.start(CHECKOUT_SESSION_WORKFLOW, {
        taskQueue: taskQueueFor(taskQueue, input.testClock),
        workflowId: checkoutSessionWorkflowId(input.sessionId),
        args: [{ ...input, version: INPUT_VERSION }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: checkoutSearchAttributes(input.storeId, input.sessionId, doc.customer),
        ...checkoutMetadata(doc),
      });
    },

    /** Takes back a workflow whose session document was not stored (best effort). */
    async terminate(sessionId: string, reason: string): Promise<void> {
      await handle(sessionId)
        .terminate(reason)
        .catch(() => undefined);
    },

    /** The `expire` update; a refusal (see isNotOpenRefusal) or a closed workflow is the caller's to word. */
    async expire(sessionId: string): Promise<CheckoutSessionObject> {
      return handle(sessionId).executeUpdate(expireUpdate);
    },

    /** Asks the workflow to expire an overdue session; its answer (or refusal) does not matter. */
    async requestExpiry(sessionId: string): Promise<void> {
      await handle(sessionId)
        .executeUpdate(expireUpdate)
        .then(
          () => undefined,
          () => undefined,
        );
    },
  };
}
