// One delivery attempt, the delivery workflow's activity: (resend: reset once per token) claim attempt N
// by a conditional update, close at once if the endpoint is disabled, POST the signed body, record the
// outcome if still delivering N: succeeded (endpoint failures reset), failed, or exhausted (counted once,
// auto-disable at 20). A retry whose attempt has an outcome POSTs nothing; one left delivering POSTs
// again: duplicates are possible, loss is not.
import { Context } from '@temporalio/activity';
import type { Database } from '../../store/database';
import { MAX_ATTEMPTS, retryDelayAfter } from '../../domain/webhook-retry';
import { deliveryState, type WebhookDeliveryState } from '../../resources/webhook-delivery';
import { findEvent, renderEventBody } from '../../store/events';
import { countEndpointExhaustion, findEndpoint, resetEndpointFailures } from '../../store/webhook-endpoints';
import {
  claimAttempt,
  disabledChanges,
  failureChanges,
  findDelivery,
  markFailureCounted,
  recordAttemptOutcome,
  resetDelivery,
  successChanges,
  type DeliveryChanges,
  type WebhookDeliveryDoc,
} from '../../store/webhook-deliveries';
import type { WebhookHttpClient } from '../../adapters/webhooks/http';
import { SIGNATURE_HEADER, signDelivery } from '../../adapters/webhooks/signing';

export interface AttemptInput {
  deliveryId: string;
  storeId: string;
  /** Lets the endpoint be read while the attempt is claimed; read from the delivery when absent. */
  endpointId?: string;
  /** Resend: back to pending, attempts 0, before trying (then `attempt` is 1). */
  reset: boolean;
  /** Names the resend, so a retried activity does not reset twice; required with `reset`. */
  resendToken?: string;
  /**
   * The attempt to make (1-based), as the workflow counts them. Absent only in tasks scheduled by an
   * older workflow version: the one after those recorded.
   */
  attempt?: number;
  /** Fraction in [0, 0.1] stretching the delay before the next attempt (chosen by the workflow). */
  jitter: number;
}

/** What became of the attempt; `unchanged`: the delivery was neither waiting for it nor had its outcome. */
export type AttemptOutcomeKind = 'succeeded' | 'failed' | 'exhausted' | 'disabled' | 'gone' | 'unchanged';

export interface AttemptResult {
  outcome: AttemptOutcomeKind;
  state: WebhookDeliveryState;
  /** After `failed`: how long to wait before the next attempt. */
  nextAttemptInMs: number | null;
  /** Where the time went (benchmark): reads and claim, the POST, the writes after it. */
  timings: { prepareMs: number; httpMs: number; recordMs: number };
}

export interface AttemptDeps {
  db: Database;
  http: WebhookHttpClient;
  now?: () => number;
}

/** The activity's cancellation (delivered with the worker's heartbeats) aborts the POST; none outside an activity. */
function cancellationSignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

export function attemptWebhookDelivery(deps: AttemptDeps, input: AttemptInput): Promise<AttemptResult> {
  return attempt(deps, input, cancellationSignal());
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

  // The outcome as recorded (by this execution or an earlier one); after `failed`, the rest of the wait.
  const recorded = async (doc: WebhookDeliveryDoc, extra: Partial<AttemptResult> = {}): Promise<AttemptResult> => {
    // An exhaustion recorded by an execution that died before counting it is counted now (once).
    if (await markFailureCounted(db, storeId, doc)) {
      await countEndpointExhaustion(db, storeId, doc.webhook_endpoint);
    }
    const kinds: Partial<Record<WebhookDeliveryDoc['status'], AttemptOutcomeKind>> = {
      succeeded: 'succeeded',
      failed: 'failed',
      exhausted: 'exhausted',
    };
    const wait = doc.status === 'failed' ? Math.max(0, (doc.next_attempt_at ?? 0) * 1000 - now()) : null;
    return result(kinds[doc.status] ?? 'unchanged', doc, { nextAttemptInMs: wait, ...extra });
  };

  if (input.reset) {
    if (!input.resendToken) throw new Error('a resend needs a resendToken');
    if (!(await resetDelivery(db, storeId, deliveryId, input.resendToken, now()))) return result('gone', null);
  }
  const endpointRead = input.endpointId ? findEndpoint(db, storeId, input.endpointId) : null;
  endpointRead?.catch(() => undefined);

  const expected = input.reset ? 1 : (input.attempt ?? ((await findDelivery(db, storeId, deliveryId))?.attempts ?? 0) + 1);
  const claim = await claimAttempt(db, storeId, deliveryId, expected, now());
  if (claim.kind === 'gone') return result('gone', null);
  if (claim.kind === 'recorded') return recorded(claim.doc);
  const claimed = claim.doc;
  const attemptNo = claimed.attempts;
  const endpoint = await (endpointRead ?? findEndpoint(db, storeId, claimed.webhook_endpoint));
  if (!endpoint) return result('gone', null);

  const settle = async (kind: AttemptOutcomeKind, changes: DeliveryChanges, extra: Partial<AttemptResult> = {}) => {
    const record = await recordAttemptOutcome(db, deliveryId, attemptNo, changes);
    if (!record.doc) return result('gone', null);
    // An overlapping execution recorded this attempt first: its outcome is the delivery's.
    if (!record.applied) return recorded(record.doc);
    return kind === 'exhausted' ? recorded(record.doc, extra) : result(kind, record.doc, extra);
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
    // Always, whatever the endpoint read before the POST said: another delivery may have exhausted meanwhile.
    await resetEndpointFailures(db, storeId, endpoint._id);
    return { ...done, timings: timings() };
  }

  const delay = attemptNo < MAX_ATTEMPTS ? retryDelayAfter(attemptNo, input.jitter) : null;
  const done = await settle(delay === null ? 'exhausted' : 'failed', failureChanges(outcome, delay === null ? null : now() + delay), {
    nextAttemptInMs: delay,
  });
  return { ...done, timings: timings() };
}
