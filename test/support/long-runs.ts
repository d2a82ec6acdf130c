// Helpers for tests that run a subscription past its run length: one-off charges sent as the charge activity sends them, and the runs' histories.
import type { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import type { Db } from 'mongodb';
import { merchantChargeKey } from '../../domain/charges';
import { newId } from '../../domain/ids';
import { subscriptionClient } from '../../services/subscriptions/client';
import { findSubscription, type SubscriptionDoc } from '../../store/subscriptions';
import type { ChargeDecision, ChargeWorkflowInput } from '../../workflows/charge/messages';
import { RUN_ROLLING_OVER } from '../../workflows/lib/run-length';

const EventType = proto.api.enums.v1.EventType;
type History = proto.api.history.v1.IHistory;

/** Runs `task(0..count-1)` with at most `limit` at once, in order of index within each lane. */
export async function inLanes<T>(count: number, limit: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < count; i = next++) results[i] = await task(i);
  };
  await Promise.all(Array.from({ length: limit }, lane));
  return results;
}

/** A one-off charge as services/charges/charges.ts hands it to its charge workflow, keyed `<prefix>-<subscription>-<i>`. */
export function oneOffCharge(prefix: string, sub: SubscriptionDoc, i: number, amount = 100 + i): ChargeWorkflowInput {
  const key = merchantChargeKey(`${prefix}-${sub._id}-${i}`);
  return {
    chargeId: newId('sch'),
    storeId: sub.store_id,
    subscriptionId: sub._id,
    customerId: sub.customer,
    subscription: {
      paymentMethodId: sub.default_payment_method!.id,
      customerEmail: sub.customer_email,
      offerId: sub.offer.id,
      productId: sub.product.id,
      clientReferenceId: sub.client_reference_id,
    },
    key,
    fingerprint: key,
    amount,
    currency: sub.currency,
    description: null,
    lines: [],
    metadata: {},
    source: 'api',
    billingReason: 'manual',
    createdAt: Date.now(),
    requestId: null,
    idempotencyKey: null,
  };
}

/** Whether the error, or any cause under it, is the workflow's retryable refusal while its run drains. */
export function rollingOver(error: unknown): boolean {
  for (let e = error as { cause?: unknown; type?: string } | undefined; e; e = e.cause as typeof e) if (e.type === RUN_ROLLING_OVER) return true;
  return false;
}

export interface ActivityCharging {
  temporal: Client;
  taskQueue: string;
  db: Db;
  /** Called on each refusal that is retried (tests count them). */
  onRetry?: () => void;
}

/**
 * The charge workflow's `chargeThroughSubscription` activity, with its retry: a refusal while the run
 * drains is retryable (the activity fails and Temporal runs it again); anything else fails the test.
 */
export async function chargeAsTheActivityDoes(deps: ActivityCharging, input: ChargeWorkflowInput): Promise<ChargeDecision> {
  const client = subscriptionClient(deps.temporal, deps.taskQueue);
  for (let attempt = 0; ; attempt++) {
    try {
      return await client.charge(input, async () => (await findSubscription(deps.db, input.storeId, input.subscriptionId))!);
    } catch (error) {
      if (attempt > 20 || !rollingOver(error)) throw error;
      deps.onRetry?.();
      await new Promise((resolve) => setTimeout(resolve, 100)); // the activity's retry interval, not a synchronization
    }
  }
}

/** The id of the run this run continued as new from, if it did. */
export const continuedFrom = (history: History): string | undefined =>
  history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;

/** Every run of the workflow, oldest first, following each run's continued-from link back from the latest. */
export async function runHistories(client: Client, workflowId: string): Promise<History[]> {
  const runs: History[] = [];
  let runId: string | undefined;
  for (;;) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    runs.unshift(history);
    runId = continuedFrom(history);
    if (!runId) return runs;
  }
}

/** The history of the run that `runId` continued as new into. */
export async function runContinuedFrom(client: Client, workflowId: string, runId: string): Promise<History> {
  const next = (await runHistories(client, workflowId)).find((history) => continuedFrom(history) === runId);
  if (!next) throw new Error(`no run continued from ${runId}`);
  return next;
}

export const acceptedUpdates = (history: History) =>
  history.events!.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED).length;

export const continuedAsNew = (history: History) => history.events!.at(-1)?.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW;
