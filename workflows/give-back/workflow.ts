// The give-back workflow `give-back/<store>/<transaction id>` (PINNED, short-lived): a provider capture
// that reached a checkout session, order or subscription whose workflow had already ended. One keyed
// activity decides and acts: an order here that is paid keeps the money; otherwise it is refunded at the
// provider under the charge's own refund key, the order (if any) recorded as refunded with order.refunded
// once; then the buyer is told by e-mail (with no order, a checkout attempt's buyer, from its session).
// Money moves only here, never in the events endpoint.
import { patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { WORKER_GONE_AFTER } from '../lib/timeouts';
import { buyerEmailKey, sendBuyerEmail } from '../lib/buyer-emails';
import type { GiveBackOutcome, GiveBackWorkflowInput } from './messages';
import { lateRefundEmailKey } from '../checkout-session/messages';

/** Runs begun before this told no buyer of a capture given back without an order (a checkout attempt's). */
const SESSION_EMAIL_PATCH = 'give-back-session-email';

// The provider unreachable is retried (5 s doubling to an hour) for at most 30 days; past that the run
// fails, visible to operators (docs/runbook-checkout.md), and the capture is still at the provider.
const money = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: '30 days',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '1 hour' },
});

export async function giveBackWorkflow(input: GiveBackWorkflowInput): Promise<GiveBackOutcome> {
  const outcome = await money.giveBackLateCapture(input);
  const orderId = outcome.status === 'given_back' ? outcome.orderId : null;
  if (orderId) {
    const key = buyerEmailKey('late-payment-refund');
    await sendBuyerEmail((emails) => emails.sendLateRefundEmail({ storeId: input.storeId, orderId, key }), { key, orderId });
  }
  const attempt = outcome.status === 'given_back' ? outcome.attempt : null;
  if (attempt && patched(SESSION_EMAIL_PATCH)) {
    // The checkout session's own key: an attempt it gave back already was told of once.
    const { sessionId, n, amount, currency } = attempt;
    const key = lateRefundEmailKey(sessionId, n);
    const email = { storeId: input.storeId, sessionId, customerId: null, amount, currency, key };
    await sendBuyerEmail((emails) => emails.sendSessionLateRefundEmail(email), { key, sessionId });
  }
  return outcome;
}
