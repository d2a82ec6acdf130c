// What a refund the provider made does here: counted on its order once (refunded when whole, partially
// refunded otherwise), its event emitted once per refund (order.refunded or order.partially_refunded), and,
// when the merchant asked, the order's subscription canceled. Called by the refund workflow's activities.
import type { Client } from '@temporalio/client';
import { orderObject } from '../../resources/order';
import { refundEventType } from '../../domain/refunds';
import { applyOrderRefund } from '../../store/orders';
import { findSubscription } from '../../store/subscriptions';
import type { Database } from '../../store/database';
import { emitEventOnce } from '../events/emit-once';
import type { EventDeps } from '../events/events';
import { subscriptionClient } from '../subscriptions/client';
import { cancelUpdate } from '../../workflows/subscription/messages';
import type { RefundWorkflowInput } from '../../workflows/refund/messages';

export interface RefundRecordDeps extends EventDeps {
  db: Database;
  temporal: Client;
  taskQueue: string;
}

export interface RecordedRefund {
  eventType: 'order.refunded' | 'order.partially_refunded';
  /** The order after the refund: its status and amount_refunded (never the buyer's data: this goes to Temporal). */
  orderStatus: string;
  amountRefunded: number;
}

/** Counts the refund on its order (once per refund id) and emits its event once (keyed by the refund). */
export async function recordRefund(
  deps: RefundRecordDeps,
  { input, providerRefundId }: { input: RefundWorkflowInput; providerRefundId: string | null },
): Promise<RecordedRefund> {
  const applied = await applyOrderRefund(deps.db, input.storeId, input.orderId, {
    id: input.refundId,
    providerRefundId,
    amount: input.amount,
    at: Math.floor(input.createdAt / 1000),
  });
  if (!applied) throw new Error(`order ${input.orderId} not found`);
  const eventType = refundEventType(applied.entry.amount_refunded_after, applied.order.amount_total);
  const order = orderObject(applied.order);
  await emitEventOnce(deps, `${input.refundId}:${eventType}`, { storeId: input.storeId, type: eventType, object: order, request: null });
  return { eventType, orderStatus: order.status, amountRefunded: order.amount_refunded };
}

/** The subscription the merchant asked to cancel with the refund: canceled now (false when it already ended or is gone). */
export async function cancelSubscriptionOfRefund(deps: RefundRecordDeps, input: RefundWorkflowInput): Promise<boolean> {
  if (!input.cancelSubscription) return false;
  const doc = await findSubscription(deps.db, input.storeId, input.cancelSubscription);
  if (!doc) return false;
  if (doc.status === 'canceled' || doc.status === 'expired') return false;
  try {
    await subscriptionClient(deps.temporal, deps.taskQueue).act(
      doc,
      cancelUpdate,
      { reason: null, comment: `refund ${input.refundId}`, request: null },
      `${input.refundId}/cancel`,
    );
    return true;
  } catch (error) {
    // The workflow refused (it ended meanwhile): nothing left to cancel.
    if ((error as { code?: string }).code === 'provider_error') return false;
    throw error;
  }
}
