// Refunds made at the provider's own dashboard (Stripe's charge.refunded), counted here the same way as
// the merchant's own: each refund of the charge not yet on its order starts a refund workflow that only
// counts it (its id derived from the provider's refund id, so a repeated event starts nothing new), with its
// event and the buyer's e-mail. Refunds we made carry our refund key and are counted by their own workflow.
import type { Client } from '@temporalio/client';
import { hashedId } from '../../domain/ids';
import type { StripeRefundRecord } from '../../adapters/provider/stripe/events';
import type { OrderDoc } from '../../store/orders';
import { refundClient } from './client';

/** A refund made at the provider: its rf_ id is derived from the provider's refund id, the same every time. */
export const providerMadeRefundId = (storeId: string, providerRefundId: string) => hashedId('rf', `${storeId}:${providerRefundId}`);

/** The refunds to count: succeeded, made at the provider (no refund key of ours), not yet on the order. */
export function refundsToCount(order: OrderDoc, refunds: StripeRefundRecord[]): StripeRefundRecord[] {
  const counted = new Set((order.refund_entries ?? []).map((entry) => entry.provider_refund_id));
  return refunds.filter((refund) => refund.status === 'succeeded' && !refund.refundKey && !counted.has(refund.id));
}

/** Starts the counting workflow of each refund made at the provider (bounded by the charge's refund list, at most 300). */
export async function countProviderRefunds(
  deps: { temporal: Client; taskQueue: string },
  order: OrderDoc,
  transactionId: string,
  refunds: StripeRefundRecord[],
): Promise<number> {
  const toCount = refundsToCount(order, refunds);
  const client = refundClient(deps.temporal, deps.taskQueue);
  for (const refund of toCount) {
    await client.start(
      {
        refundId: providerMadeRefundId(order.store_id, refund.id),
        storeId: order.store_id,
        orderId: order._id,
        transactionId,
        amount: refund.amount,
        currency: order.currency,
        reason: null,
        cancelSubscription: null,
        testClock: order.test_clock ?? null,
        madeAtProvider: { providerRefundId: refund.id },
        createdAt: refund.created * 1000,
      },
      order.customer,
    );
  }
  return toCount.length;
}
