// One subscription charge (`charge/<store>/<key>`): the provider charge, its order and the charge
// document in one keyed activity (a one-off charge decided by the subscription's own workflow), then
// its events; a charge left in review waits for the provider's notice (asking the provider by key
// daily, voided as refused at the window's end) and settles; an approved one then sends the store's
// purchase confirmation. Every request under the key attaches to this run through the `outcome` update,
// which past the request's wait shows the charge as it stands (pending) and lets it go on.
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  log,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import { settledReview } from '../lib/reviews';
import { failureMessage, PROVIDER_TRIES_PER_ROUND, retryableFailure, unknownRetryMs } from '../lib/unknown-rounds';
import { hasChange } from '../lib/input-version';
import { at, money, showProgress } from '../lib/business-view';
import { isOneOffRefusalCode } from '../../domain/subscriptions';
import type { Activities } from '../../activities';
import { WORKER_GONE_AFTER } from '../lib/timeouts';
import { buyerEmailKey, sendBuyerEmail, sendsBuyerEmails } from '../lib/buyer-emails';
import type { ProviderNotice } from '../../adapters/provider/types';
import {
  chargeOutcomeUpdate,
  chargeProviderSettledSignal,
  chargeStateQuery,
  type ChargeAnswer,
  type ChargeDecision,
  type ChargeWorkflowInput,
  type ChargeWorkflowState,
} from './messages';

// The charge itself is a local activity: it runs inside the workflow task, so the outcome reaches
// the waiting request without activity-task round trips through the server. It is keyed, so a
// worker dying mid-charge only means the workflow task is retried by another worker and the charge
// runs again: the provider returns the first result for the key, and the derived order id and the
// charge's unique key turn the writes into no-ops.
const payments = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '30 seconds' },
});
/**
 * Runs begun before this retried the provider step (local, and the subscription hand-off) without end, a
 * few seconds apart: a lookup that stays unknown (Stripe's search unavailable) grew the history until
 * Temporal ended the run. Patched runs try a few times, then wait on a timer (unknownRetryMs) and try again.
 */
export const BOUNDED_PROVIDER_RETRIES_PATCH = 'charge-bounded-provider-retries';
/** Rounds one run takes before it continues as new (the rounds carried over): about 9 days, under 3,000 events. */
export const UNKNOWN_ROUNDS_PER_RUN = 40;
const boundedPayments = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '30 seconds', maximumAttempts: PROVIDER_TRIES_PER_ROUND },
});
// Events and settlement are regular activities: their attempt count survives a dead worker, which is
// what lets a retry look for an event the dead attempt may have written (emitEventOnce). 10 s is
// three times the slowest seen under load (p99 1.2 s, max 3 s), so a slow database is not raced.
const records = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

// A one-off charge goes through its subscription's workflow, which may take its time (a renewal
// holding its mutex); a refusal there fails at once (non-retryable, the spec's code as its type).
const subscriptionWorkflow = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

const boundedSubscriptionWorkflow = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: PROVIDER_TRIES_PER_ROUND },
});

type Refusal = Extract<ChargeAnswer, { kind: 'refused' }>;

/**
 * The provider charge, once: a one-off charge through the subscription's workflow (so a pause and a
 * charge never both win), a usage charge directly (usage rule 6: charged whatever the status).
 */
async function chargeOnce(input: ChargeWorkflowInput, bounded: boolean): Promise<ChargeDecision | Refusal> {
  // Runs that began before the subscription's check charged directly; their replay must keep doing so.
  if (input.source === 'usage' || !hasChange(input, 2, 'charge-checked-by-subscription'))
    return (bounded ? boundedPayments : payments).executeSubscriptionCharge(input);
  try {
    return await (bounded ? boundedSubscriptionWorkflow : subscriptionWorkflow).chargeThroughSubscription(input);
  } catch (error) {
    const cause = error instanceof ActivityFailure ? error.cause : null;
    if (!(cause instanceof ApplicationFailure) || !isOneOffRefusalCode(cause.type)) throw error;
    return { kind: 'refused', code: cause.type, message: cause.message };
  }
}

/** Shows and logs a round whose outcome stayed unknown; the operator sees it as `unknown_outcome` and in the `state` query. */
function showUnknown(input: ChargeWorkflowInput, problem: NonNullable<ChargeWorkflowState['problem']>): void {
  const line = `Outcome unknown after ${problem.rounds} round(s) of ${PROVIDER_TRIES_PER_ROUND} tries (${problem.message}): asked again at ${at(problem.retry_at)}`;
  showProgress('unknown_outcome', line, input);
  log.warn('charge outcome unknown; asked again later by key', { key: input.key, ...problem });
}

// Versioning PINNED (workflows/versioned.ts): one charge (and its review wait) is short next to a deploy cycle: it ends on the build that took the money.
export async function chargeWorkflow(input: ChargeWorkflowInput): Promise<ChargeDecision | Refusal> {
  let decision: ChargeDecision | null = null;
  let refusal: Refusal | null = null;
  let notice: ProviderNotice | null = null;
  let phase: ChargeWorkflowState['phase'] = 'charging';
  /** The charge written as it stands for a request whose wait ran out; written once, whoever asks. */
  let undecided: Promise<ChargeDecision> | null = null;
  const known = () => decision !== null || refusal !== null;
  const answerOf = (shown: ChargeDecision, requestId: string | null): ChargeAnswer => ({
    kind: 'charge',
    charge: shown.charge,
    outcome: shown.outcome,
    replayed: requestId !== input.requestId,
    originalRequestId: input.requestId,
  });

  setHandler(chargeOutcomeUpdate, async ({ fingerprint, requestId, answerUndecidedAfterMs }) => {
    if (fingerprint !== input.fingerprint) return { kind: 'reused' as const };
    // Requests from before this answer never had a wait; their replay must keep waiting for the outcome.
    if (answerUndecidedAfterMs === undefined || !hasChange(input, 2, 'charge-answers-undecided')) await condition(known);
    else if (!(await condition(known, answerUndecidedAfterMs)))
      return answerOf(await (undecided ??= records.recordUndecidedCharge(input)), requestId);
    if (refusal) return refusal;
    return answerOf(decision!, requestId);
  });
  setHandler(chargeProviderSettledSignal, (settled) => {
    notice = settled;
  });
  let problem: ChargeWorkflowState['problem'] = null;
  setHandler(chargeStateQuery, () => ({
    phase,
    charge: decision?.charge ?? null,
    outcome: decision?.outcome ?? null,
    ...(problem ? { problem } : {}),
  }));

  showProgress('charging', `Charging ${money(input.amount, input.currency)} (${input.source}) under key ${input.key}`, input);
  // A charge still unknown is never taken as nothing charged: asked again by key, rounds apart on a timer.
  const bounded = input.unknownRounds !== undefined || hasChange(input, 3, BOUNDED_PROVIDER_RETRIES_PATCH);
  let charged: ChargeDecision | Refusal | null = null;
  let rounds = input.unknownRounds ?? 0;
  let roundsThisRun = 0;
  while (charged === null) {
    try {
      charged = await chargeOnce(input, bounded);
    } catch (error) {
      if (!bounded || !retryableFailure(error)) throw error;
      rounds += 1;
      roundsThisRun += 1;
      const waitMs = unknownRetryMs(rounds);
      problem = { rounds, message: failureMessage(error), retry_at: Date.now() + waitMs };
      showUnknown(input, problem);
      if (roundsThisRun >= UNKNOWN_ROUNDS_PER_RUN) {
        // A bounded history: the next run goes on counting (its waits stay long); waiting requests are answered first.
        await condition(allHandlersFinished, '1 hour');
        await continueAsNew<typeof chargeWorkflow>({
          ...input,
          unknownRounds: rounds,
          answeredUndecided: Boolean(undecided) || input.answeredUndecided,
        });
      }
      await sleep(waitMs);
    }
  }
  problem = null;
  if ('kind' in charged) {
    refusal = charged;
    phase = 'settled';
    showProgress('refused', `Refused: ${charged.code}`, input);
    // A request was shown the charge pending: it fails with the refusal's code, and its event goes out.
    if (undecided || input.answeredUndecided) {
      await (undecided ?? records.recordUndecidedCharge(input));
      const failed = await records.refuseUndecidedCharge({ charge: input, code: charged.code, message: charged.message });
      await records.emitChargeEvents({ storeId: input.storeId, chargeId: failed.charge.id });
    }
    await condition(allHandlersFinished);
    return refusal;
  }
  decision = charged;
  await records.emitChargeEvents({ storeId: input.storeId, chargeId: decision.charge.id });

  if (decision.outcome === 'review') {
    phase = 'awaiting_settlement';
    showProgress('in_review', `In review at the provider since ${at(Date.now())}: asked by key daily, voided after 7 days`, input);
    const transaction = decision.charge.transaction!;
    const noticed = () => (notice !== null && notice.transactionId === transaction ? notice : null);
    let settled: ProviderNotice;
    // Runs that began before lookups waited for the notice alone; their replay must keep doing so.
    if (hasChange(input, 2, 'review-lookups')) {
      const reviewWait = {
        storeId: input.storeId,
        idempotencyKey: input.key,
        transactionId: transaction,
        notifyRef: workflowInfo().workflowId,
        startedMs: Date.now(),
        noticed,
        testClock: input.testClock,
      };
      settled = await settledReview(reviewWait);
    } else {
      await condition(() => noticed() !== null);
      settled = noticed()!;
    }
    decision = await records.settleSubscriptionCharge({ storeId: input.storeId, chargeId: decision.charge.id, notice: settled });
    await records.emitChargeEvents({ storeId: input.storeId, chargeId: decision.charge.id });
  }
  phase = 'settled';
  showProgress(
    decision.charge.status,
    `Charge ${decision.charge.id} ${decision.charge.status}${decision.charge.order ? `, order ${decision.charge.order}` : ''}`,
    input,
  );
  await confirmApprovedCharge(input, decision);
  await condition(allHandlersFinished);
  return decision;
}

/** "The subscriber gets the store's purchase confirmation e-mail": once, after the charge's events. */
async function confirmApprovedCharge(input: ChargeWorkflowInput, decision: ChargeDecision): Promise<void> {
  const { storeId } = input;
  const orderId = decision.charge.order;
  if (decision.charge.status !== 'succeeded' || !orderId || !sendsBuyerEmails(input)) return;
  const key = buyerEmailKey('payment-confirmation');
  await sendBuyerEmail((emails) => emails.sendPaymentConfirmation({ storeId, orderId, key }), { key, orderId });
}
