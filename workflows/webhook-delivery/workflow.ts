// One webhook delivery, `webhook-delivery/<uuid>`: up to 8 attempts on the DESIGN.md schedule (jitter
// derived from the delivery id and attempt), each one activity that claims the attempt the workflow
// names, POSTs and records the outcome. A `resend` signal starts over at once, also within
// RESEND_WINDOW_MS after the end; cancelling (the endpoint was deleted) stops it.
import { condition, continueAsNew, isCancellation, proxyActivities, setCurrentDetails, setHandler, uuid4, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { WORKER_GONE_AFTER } from '../lib/timeouts';
import { jitterFor, MAX_ATTEMPTS } from '../../domain/webhook-retry';
import { at, showProgress, shownStatus } from '../lib/business-view';
import { startedSince } from '../lib/input-version';
import { RESEND_WINDOW_MS, resendSignal, stateQuery, type WebhookDeliveryInput, type WebhookDeliveryState } from './messages';

const { attemptWebhookDelivery } = proxyActivities<Activities>({
  // The POST has 10 s; reads and writes around it take little (p99 1.2 s under load). A worker that
  // dies mid-attempt is noticed through missed heartbeats, and the attempt is made again elsewhere.
  startToCloseTimeout: '20 seconds',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 30 },
});

const TERMINAL = new Set<WebhookDeliveryState['status']>(['succeeded', 'exhausted']);

// Versioning PINNED (workflows/versioned.ts): one event's delivery (retries, then 72 h open for a resend) ends on the build that started it.
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryState> {
  let resendRequested = input.resend ?? false;
  let attempt = input.attempt ?? 1;
  let state: WebhookDeliveryState = {
    id: input.deliveryId,
    status: 'pending',
    attempts: 0,
    next_attempt_at: null,
    last_attempt_at: null,
    delivered_at: null,
    last_response_status: null,
    last_error: null,
    last_duration_ms: null,
    event: null,
    webhook_endpoint: null,
    stopped: false,
  };
  setHandler(resendSignal, () => {
    resendRequested = true;
  });
  setHandler(stateQuery, () => state);

  try {
    for (;;) {
      if (!resendRequested && TERMINAL.has(state.status)) {
        const resent = await condition(() => resendRequested, RESEND_WINDOW_MS, { summary: 'resend window (72 h)' });
        if (!resent) return state;
        // Each resend of an ended delivery is a fresh run: history stays small however often it is resent.
        return await continueAsNew<typeof webhookDeliveryWorkflow>({ ...input, resend: true, attempt: 1 });
      }
      const reset = resendRequested;
      resendRequested = false;
      if (reset) attempt = 1;
      showAttempt(input, `${reset ? 'Resend: ' : ''}attempt ${attempt} of ${MAX_ATTEMPTS} running`);
      const result = await attemptWebhookDelivery.executeWithOptions({ summary: `attempt ${attempt}${reset ? ' (resend)' : ''}` }, [
        {
          deliveryId: input.deliveryId,
          storeId: input.storeId,
          endpointId: input.endpointId,
          reset,
          // uuid4 here is seeded by the workflow, so replays pass the same token.
          resendToken: reset ? uuid4() : undefined,
          attempt,
          jitter: jitterFor(input.deliveryId, attempt),
        },
      ]);
      state = result.state;
      showProgress(state.status, stepOf(state), input);
      if (result.outcome === 'gone') return state;
      // The next attempt follows the last one recorded (this one, unless the record says otherwise).
      attempt = state.attempts + 1;
      if (result.outcome === 'failed' && result.nextAttemptInMs !== null && result.nextAttemptInMs > 0) {
        await condition(() => resendRequested, result.nextAttemptInMs, { summary: `until attempt ${attempt}` });
      }
      if (workflowInfo().continueAsNewSuggested) {
        return await continueAsNew<typeof webhookDeliveryWorkflow>({ ...input, resend: resendRequested, attempt });
      }
    }
  } catch (error) {
    if (isCancellation(error)) return { ...state, stopped: true };
    throw error;
  }
}

/**
 * An attempt about to run: `delivering`; from input version 2 a first attempt stays `pending` (its step
 * says it runs): one search-attribute upsert less for a delivery answered at once.
 */
function showAttempt(input: WebhookDeliveryInput, step: string): void {
  if (startedSince(input, 2) && shownStatus() === 'pending') return setCurrentDetails(step);
  showProgress('delivering', step, input);
}

/** The current step as a line: how the last attempt went and what comes next. */
function stepOf(state: WebhookDeliveryState): string {
  const answer = state.last_response_status !== null ? `HTTP ${state.last_response_status}` : (state.last_error ?? 'no answer');
  if (state.status === 'succeeded') return `Delivered on attempt ${state.attempts} at ${at(state.delivered_at! * 1000)}; open for resends for 72 h`;
  if (state.status === 'exhausted') return `Gave up after ${state.attempts} attempts (last: ${answer}); open for resends for 72 h`;
  const next = state.next_attempt_at !== null ? `, next at ${at(state.next_attempt_at * 1000)}` : '';
  return `Attempt ${state.attempts} of ${MAX_ATTEMPTS} failed (${answer})${next}`;
}
