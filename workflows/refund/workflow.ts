// One refund (`refund/<store>/<refund id>`): the money given back once at the provider under the refund's
// own key (an unknown answer is looked up by that key before any retry, never assumed), asked again by key
// with a growing wait while the provider says pending, then counted on the order with its event (once
// per refund), the buyer's e-mail and, when asked, the subscription's cancellation. A refund made at the
// provider's own dashboard runs the same steps from the counting on.
import { ApplicationFailure, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { RefundOutcome } from '../../adapters/provider/types';
import { PENDING_REFUND_CHECKS, pendingRefundWaitMs } from '../../domain/refunds';
import { money, showProgress } from '../lib/business-view';
import { buyerEmailKey, sendBuyerEmail } from '../lib/buyer-emails';
import { WORKER_GONE_AFTER } from '../lib/timeouts';
import { refundStateQuery, type RefundWorkflowInput, type RefundWorkflowResult, type RefundWorkflowState } from './messages';

// The provider call and its lookups: an unknown answer (timeout, 5xx) is retried with backoff, and a
// retry asks the provider by the refund key before refunding again (services/refunds/provider.ts). Bounded
// as the give-back is: past 30 days of the provider away the run fails, visible to operators (the refund's
// state query, the failed run); a refund that did reach the provider still counts on the order by its event.
const provider = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '30 days',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});
// Writes to MongoDB (the order, its event) and the subscription's cancellation: retried until they get through.
const records = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/** The provider's answer for the refund: made now (keyed), or the one made at its dashboard. */
async function refundedAtProvider(input: RefundWorkflowInput): Promise<RefundOutcome> {
  if (input.madeAtProvider) return { status: 'refunded', refundId: input.madeAtProvider.providerRefundId, amount: input.amount };
  return provider.refundAtProvider(input);
}

/** A pending refund asked again by key, waiting longer each time, at most PENDING_REFUND_CHECKS times. */
async function settledRefund(input: RefundWorkflowInput, first: RefundOutcome): Promise<RefundOutcome> {
  let outcome = first;
  for (let check = 0; outcome.status === 'pending'; check++) {
    if (check >= PENDING_REFUND_CHECKS) {
      throw ApplicationFailure.nonRetryable(
        `refund ${input.refundId} is still pending at the provider after ${check} checks`,
        'refund_still_pending',
      );
    }
    await sleep(pendingRefundWaitMs(check));
    outcome = (await provider.lookupRefundByKey(input)) ?? outcome;
  }
  return outcome;
}

// Versioning PINNED (workflows/versioned.ts): one refund is short next to a deploy cycle: it ends on the build that moved the money.
export async function refundWorkflow(input: RefundWorkflowInput): Promise<RefundWorkflowResult> {
  const state: RefundWorkflowState = { phase: 'refunding', result: null };
  setHandler(refundStateQuery, () => state);
  showProgress('refunding', `Refunding ${money(input.amount, input.currency)} of ${input.orderId}`, input);

  const answered = await refundedAtProvider(input);
  if (answered.status === 'pending') {
    state.phase = 'pending_at_provider';
    showProgress('pending', `Refund ${answered.refundId} pending at the provider: asked again by key`, input);
  }
  const outcome = await settledRefund(input, answered);
  if (outcome.status === 'failed') {
    state.phase = 'done';
    state.result = { status: 'failed', refundId: input.refundId, amount: input.amount, code: outcome.code, message: outcome.message };
    showProgress('failed', `Refund failed at the provider: ${outcome.code}`, input);
    return state.result;
  }
  state.phase = 'recording';
  const recorded = await records.recordRefund({ input, providerRefundId: outcome.refundId });
  const key = buyerEmailKey('refund');
  await sendBuyerEmail((emails) => emails.sendRefundEmail({ storeId: input.storeId, orderId: input.orderId, amount: input.amount, key }), {
    key,
    orderId: input.orderId,
  });
  const subscriptionCanceled = input.cancelSubscription ? await records.cancelSubscriptionOfRefund(input) : false;
  state.result = {
    status: 'succeeded',
    refundId: input.refundId,
    providerRefundId: outcome.refundId,
    amount: input.amount,
    ...recorded,
    subscriptionCanceled,
  };
  state.phase = 'done';
  showProgress('succeeded', `Refunded ${money(input.amount, input.currency)}: order ${input.orderId} ${recorded.orderStatus}`, input);
  return state.result;
}
