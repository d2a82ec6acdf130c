// A refund the merchant starts (admin CLI now, the dashboard later): the order's rules checked first
// (typed refusals: not refundable, amount over what remains), then the refund's workflow started, which
// gives the money back once at the provider and counts it on the order; the answer is the refund as it
// stands after a short wait (pending when the provider has not finished, still followed by the workflow).
import type { Client } from '@temporalio/client';
import { ApiError } from '../../domain/errors';
import { newId } from '../../domain/ids';
import { refundRefusal } from '../../domain/refunds';
import type { RefundObject } from '../../resources/refund';
import { findCheckoutSession } from '../../store/checkout-sessions';
import type { Database } from '../../store/database';
import { amountRefundedOf, findOrder, type OrderDoc } from '../../store/orders';
import { findCharge } from '../../store/subscription-charges';
import type { RefundWorkflowInput, RefundWorkflowResult } from '../../workflows/refund/messages';
import { refundClient } from './client';

export interface RefundDeps {
  db: Database;
  temporal: Client;
  taskQueue: string;
}

export interface RefundRequest {
  storeId: string;
  orderId: string;
  /** Minor units; absent refunds what remains. */
  amount?: number;
  reason?: string | null;
  /** Cancel the order's subscription once refunded (a refund alone never cancels it). */
  cancelSubscription?: boolean;
  /** How long to wait for the provider's answer before answering pending (default 30 s). */
  waitMs?: number;
}

const DEFAULT_WAIT_MS = 30_000;
/** The merchant's reason is kept at the provider (Stripe: 500 characters of metadata). */
export const REFUND_REASON_MAX = 500;

/** The captured payment an order was paid by: the renewal's or charge's transaction, the checkout's. */
export async function transactionOfOrder(db: Database, order: OrderDoc): Promise<string | null> {
  if (order.provider_transaction_id) return order.provider_transaction_id;
  const external = order.external_order_id;
  if (external?.startsWith('sch_')) return (await findCharge(db, order.store_id, external))?.transaction ?? null;
  if (external && /^(pi|tx)_/.test(external)) return external;
  if (order.checkout_session) return (await findCheckoutSession(db, order.store_id, order.checkout_session))?.payment?.transaction_id ?? null;
  return null;
}

/** The key the order's payment was charged under: recorded on the order, else its subscription charge's; null when unknown. */
export async function chargeKeyOfOrder(db: Database, order: OrderDoc): Promise<string | null> {
  if (order.charge_key) return order.charge_key;
  const external = order.external_order_id;
  if (external?.startsWith('sch_')) return (await findCharge(db, order.store_id, external))?.key ?? null;
  return null;
}

function checkRequest(order: OrderDoc, transactionId: string | null, request: RefundRequest): number {
  const refusal = refundRefusal(
    {
      status: order.status,
      amount_total: order.amount_total,
      amount_refunded: amountRefundedOf(order),
      refunds: order.refund_entries?.length ?? 0,
      has_transaction: transactionId !== null,
    },
    request.amount,
  );
  if (refusal) throw new ApiError(refusal.code, refusal.message, { param: refusal.param });
  if ((request.reason?.length ?? 0) > REFUND_REASON_MAX) {
    throw new ApiError('parameter_invalid', `The reason is at most ${REFUND_REASON_MAX} characters.`, { param: 'reason' });
  }
  if (request.cancelSubscription && !order.subscription) {
    throw new ApiError('parameter_invalid', 'The order belongs to no subscription to cancel.', { param: 'cancel' });
  }
  return request.amount ?? order.amount_total - amountRefundedOf(order);
}

/** The provider refused: more than it has left (a refund made meanwhile), or another reason in its words. */
function refusedByProvider(result: Extract<RefundWorkflowResult, { status: 'failed' }>): ApiError {
  if (result.code === 'amount_too_large' || result.code === 'charge_already_refunded') {
    return new ApiError('refund_amount_too_large', `The provider refused the refund: ${result.message}`, { param: 'amount' });
  }
  return new ApiError('refund_failed', `The provider refused the refund (${result.code}): ${result.message}`);
}

function refundObject(input: RefundWorkflowInput, result: RefundWorkflowResult | null): RefundObject {
  const done = result?.status === 'succeeded' ? result : null;
  const failed = result?.status === 'failed' ? result : null;
  return {
    id: input.refundId,
    object: 'refund',
    status: result ? result.status : 'pending',
    amount: input.amount,
    currency: input.currency,
    order: input.orderId,
    reason: input.reason,
    provider_refund: done?.providerRefundId ?? null,
    failure_code: failed?.code ?? null,
    failure_message: failed?.message ?? null,
    order_status: done?.orderStatus ?? null,
    order_amount_refunded: done?.amountRefunded ?? null,
    subscription_canceled: done?.subscriptionCanceled ?? false,
    created: Math.floor(input.createdAt / 1000),
  };
}

/** Refunds the order, whole or in part: see the module header. A refusal by the provider is a typed error. */
export async function refundOrder(deps: RefundDeps, request: RefundRequest): Promise<RefundObject> {
  const order = await findOrder(deps.db, request.storeId, request.orderId);
  if (!order) throw new ApiError('resource_missing', `No such order: ${request.orderId}`, { param: 'order' });
  const transactionId = await transactionOfOrder(deps.db, order);
  const amount = checkRequest(order, transactionId, request);
  const createdAt = Date.now();
  const input: RefundWorkflowInput = {
    refundId: newId('rf', createdAt),
    storeId: order.store_id,
    orderId: order._id,
    transactionId: transactionId!,
    chargeKey: await chargeKeyOfOrder(deps.db, order),
    amount,
    currency: order.currency,
    reason: request.reason ?? null,
    cancelSubscription: request.cancelSubscription ? order.subscription : null,
    testClock: order.test_clock ?? null,
    madeAtProvider: null,
    createdAt,
  };
  const client = refundClient(deps.temporal, deps.taskQueue);
  await client.start(input, order.customer);
  const result = await client.answer(input.storeId, input.refundId, request.waitMs ?? DEFAULT_WAIT_MS);
  if (result?.status === 'failed') throw refusedByProvider(result);
  return refundObject(input, result);
}
