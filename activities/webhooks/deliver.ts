// One delivery attempt, as the delivery workflow's activity: (on a resend, reset the record to pending
// with attempts 0), claim the next attempt (pending/failed to delivering, attempts + 1, one update),
// close at once if the endpoint is disabled, POST the stored body signed with the endpoint's secrets,
// and record the outcome: succeeded (endpoint failures reset), failed (next attempt time), or
// exhausted (endpoint failures +1, auto-disable at 20). The workflow is the delivery's one writer, so
// reads and writes go by `_id` alone (FerretDB's only indexed filter). A retried activity makes the
// same attempt again: duplicates are possible, loss is not.
import { Context } from '@temporalio/activity';
import type { Db } from 'mongodb';
import { MAX_ATTEMPTS, retryDelayAfter } from '../../domain/webhook-retry';
import type { WebhookDeliveryState } from '../../workflows/webhook-delivery-messages';
import { findEvent, renderEventBody } from '../store/events';
import {
  claimNextAttempt,
  countEndpointExhaustion,
  disabledChanges,
  failureChanges,
  findEndpoint,
  markFailureCounted,
  recordAttemptOutcome,
  resetDelivery,
  resetEndpointFailures,
  successChanges,
  type DeliveryChanges,
  type WebhookDeliveryDoc,
} from '../store/webhooks';
import type { WebhookHttpClient } from './http';
import { SIGNATURE_HEADER, signDelivery } from './signing';

export interface AttemptInput {
  deliveryId: string;
  storeId: string;
  /** Lets the endpoint be read while the attempt is claimed; read from the delivery when absent. */
  endpointId?: string;
  /** Resend: back to pending, attempts 0, before trying. */
  reset: boolean;
  /** Fraction in [0, 0.1] stretching the delay before the next attempt (drawn by the workflow). */
  jitter: number;
}

export type AttemptOutcomeKind = 'succeeded' | 'failed' | 'exhausted' | 'disabled' | 'gone' | 'unchanged';

export interface AttemptResult {
  outcome: AttemptOutcomeKind;
  state: WebhookDeliveryState;
  /** After `failed`: how long to wait before the next attempt. */
  nextAttemptInMs: number | null;
  /** Where the time went (benchmark): reads and claim, the POST, the writes after it. */
  timings: { prepareMs: number; httpMs: number; recordMs: number };
}

export function deliveryState(doc: WebhookDeliveryDoc | null, id: string): WebhookDeliveryState {
  if (!doc) {
    return {
      id,
      status: 'exhausted',
      attempts: 0,
      next_attempt_at: null,
      last_attempt_at: null,
      delivered_at: null,
      last_response_status: null,
      last_error: null,
      last_duration_ms: null,
      event: null,
      webhook_endpoint: null,
      stopped: true,
    };
  }
  return {
    id: doc._id,
    status: doc.status,
    attempts: doc.attempts,
    next_attempt_at: doc.next_attempt_at,
    last_attempt_at: doc.last_attempt_at,
    delivered_at: doc.delivered_at,
    last_response_status: doc.last_response_status,
    last_error: doc.last_error,
    last_duration_ms: doc.last_duration_ms,
    event: doc.event,
    webhook_endpoint: doc.webhook_endpoint,
    stopped: false,
  };
}

export interface AttemptDeps {
  db: Db;
  http: WebhookHttpClient;
  now?: () => number;
}

/**
 * Heartbeats every 2 seconds while the attempt runs (one that ends sooner sends none), so a worker
 * that dies is noticed by the heartbeat timeout while a slow but live one is not; a no-op outside an
 * activity. The activity's cancellation aborts the POST.
 */
function heartbeating<T>(work: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
  let context: Context | null = null;
  try {
    context = Context.current();
  } catch {
    context = null;
  }
  if (!context) return work(undefined);
  const timer = setInterval(() => context!.heartbeat(), 2_000);
  return work(context.cancellationSignal).finally(() => clearInterval(timer));
}

export function attemptWebhookDelivery(deps: AttemptDeps, input: AttemptInput): Promise<AttemptResult> {
  return heartbeating((signal) => attempt(deps, input, signal));
}

async function attempt(deps: AttemptDeps, input: AttemptInput, signal: AbortSignal | undefined): Promise<AttemptResult> {
  const { db } = deps;
  const now = deps.now ?? Date.now;
  const { deliveryId, storeId } = input;
  const started = performance.now();
  const result = (outcome: AttemptOutcomeKind, doc: WebhookDeliveryDoc | null, extra: Partial<AttemptResult> = {}): AttemptResult => ({
    outcome,
    state: deliveryState(doc, deliveryId),
    nextAttemptInMs: null,
    timings: { prepareMs: Math.round(performance.now() - started), httpMs: 0, recordMs: 0 },
    ...extra,
  });

  if (input.reset && !(await resetDelivery(db, storeId, deliveryId, now()))) return result('gone', null);
  const endpointRead = input.endpointId ? findEndpoint(db, storeId, input.endpointId) : null;
  endpointRead?.catch(() => undefined);

  const claim = await claimNextAttempt(db, storeId, deliveryId, now());
  let claimed = claim.claimed;
  if (!claimed) {
    const current = claim.current;
    if (!current) return result('gone', null);
    if (current.status === 'succeeded' || current.status === 'exhausted') {
      // A retry of an activity that recorded the exhaustion but died before counting it: count it now.
      if (current.status === 'exhausted' && !current.failure_counted && (await markFailureCounted(db, storeId, deliveryId))) {
        await countEndpointExhaustion(db, storeId, current.webhook_endpoint);
      }
      return result('unchanged', current);
    }
    // `delivering`: this attempt was claimed by an execution that died (or timed out) mid-POST: make it again.
    claimed = current;
  }
  const attemptNo = claimed.attempts;
  const endpoint = await (endpointRead ?? findEndpoint(db, storeId, claimed.webhook_endpoint));
  if (!endpoint) return result('gone', null);

  const settle = async (kind: AttemptOutcomeKind, changes: DeliveryChanges, extra: Partial<AttemptResult> = {}) => {
    await recordAttemptOutcome(db, deliveryId, changes);
    return result(kind, { ...claimed, ...changes } as WebhookDeliveryDoc, extra);
  };

  if (endpoint.status === 'disabled') return settle('disabled', disabledChanges(claimed, attemptNo));

  const body = claimed.body ?? (await findEvent(db, storeId, claimed.event).then((event) => (event ? renderEventBody(event) : null)));
  if (typeof body !== 'string') return result('gone', null);
  const prepareMs = Math.round(performance.now() - started);

  const sentAt = now();
  const outcome = await deps.http.post({ url: endpoint.url, body, headers: { [SIGNATURE_HEADER]: signDelivery(body, endpoint, sentAt) }, signal });
  const httpDone = performance.now();
  const timings = (): AttemptResult['timings'] => ({ prepareMs, httpMs: outcome.durationMs, recordMs: Math.round(performance.now() - httpDone) });

  if (outcome.ok) {
    const done = await settle('succeeded', successChanges(outcome, now()));
    if (endpoint.consecutive_failures !== 0) await resetEndpointFailures(db, storeId, endpoint._id);
    return { ...done, timings: timings() };
  }

  const delay = attemptNo < MAX_ATTEMPTS ? retryDelayAfter(attemptNo, input.jitter) : null;
  const done = await settle(delay === null ? 'exhausted' : 'failed', failureChanges(outcome, delay === null ? null : now() + delay), {
    nextAttemptInMs: delay,
  });
  // Counted once per exhaustion even if this activity is retried.
  if (delay === null && (await markFailureCounted(db, storeId, deliveryId))) await countEndpointExhaustion(db, storeId, endpoint._id);
  return { ...done, timings: timings() };
}
