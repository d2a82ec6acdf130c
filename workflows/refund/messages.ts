// The refund workflow's operator interface: its id (`refund/<store>/<refund id>`), its input and result,
// the provider key a refund is made under and the `state` query.
import { defineQuery } from '@temporalio/workflow';
import type { VersionedInput } from '../lib/input-version';

export const refundWorkflowId = (storeId: string, refundId: string) => `refund/${storeId}/${refundId}`;

/** The key the refund is made under at the provider (its idempotency key, metadata.refund_key). */
export const refundKeyOf = (refundId: string) => `refund/${refundId}`;

export interface RefundWorkflowInput extends VersionedInput {
  /** rf_ id: minted by the service for a merchant's refund, derived from the provider's for one made there. */
  refundId: string;
  storeId: string;
  orderId: string;
  /** The captured payment (pi_ at Stripe, tx_ at the test connection). */
  transactionId: string;
  /** The key the payment was charged under (its provider account's pin); absent when unknown or in older runs. */
  chargeKey?: string | null;
  amount: number;
  currency: string;
  /** The merchant's words (kept with the refund at the provider). */
  reason: string | null;
  /** The subscription to cancel once the money is back (`--cancel`); null keeps it as it is. */
  cancelSubscription: string | null;
  /** The test clock of the order's customer: the refund goes through a test connection. */
  testClock: string | null;
  /** A refund already made at the provider (its dashboard): only counted here, never asked again. */
  madeAtProvider: { providerRefundId: string } | null;
  /** Unix milliseconds the refund was asked for. */
  createdAt: number;
}

export type RefundWorkflowResult =
  | {
      status: 'succeeded';
      refundId: string;
      providerRefundId: string | null;
      amount: number;
      eventType: 'order.refunded' | 'order.partially_refunded';
      /** The order after this refund (ids and amounts only: the buyer's data stays in MongoDB). */
      orderStatus: string;
      amountRefunded: number;
      subscriptionCanceled: boolean;
    }
  | { status: 'failed'; refundId: string; amount: number; code: string; message: string };

export interface RefundWorkflowState {
  phase: 'refunding' | 'pending_at_provider' | 'recording' | 'done';
  result: RefundWorkflowResult | null;
}

export const refundStateQuery = defineQuery<RefundWorkflowState>('state');
