// The rules of refunds a merchant starts: what an order can still give back, which refusal an amount
// gets, and which event a counted refund emits. Pure: the service reads the order and applies them.

/** Refunds the merchant may make on one order (each at least one minor unit): the bound of the order's refund list. */
export const MAX_REFUNDS_PER_ORDER = 100;

/** What the rules need of an order. */
export interface RefundableOrder {
  status: string;
  amount_total: number;
  /** Given back so far. */
  amount_refunded: number;
  refunds: number;
  /** Whether the payment is known at the provider (a transaction to refund). */
  has_transaction: boolean;
}

export type RefundRefusal = { code: 'order_not_refundable' | 'refund_amount_too_large' | 'parameter_invalid'; message: string; param: string | null };

/** Statuses whose money can still be given back. */
const REFUNDABLE_STATUSES = ['paid', 'partially_refunded'];

/** What is left to refund. */
export const refundableAmount = (order: RefundableOrder): number => Math.max(0, order.amount_total - order.amount_refunded);

/** Why this refund cannot be made (null: it can); `amount` undefined means the rest of the order. */
export function refundRefusal(order: RefundableOrder, amount: number | undefined): RefundRefusal | null {
  if (!REFUNDABLE_STATUSES.includes(order.status)) {
    return {
      code: 'order_not_refundable',
      message: `The order is ${order.status}: only a paid or partially refunded order can be refunded.`,
      param: null,
    };
  }
  if (!order.has_transaction) return { code: 'order_not_refundable', message: 'The order has no payment at the provider to refund.', param: null };
  if (order.refunds >= MAX_REFUNDS_PER_ORDER) {
    return { code: 'order_not_refundable', message: `The order has had ${MAX_REFUNDS_PER_ORDER} refunds, the most one order takes.`, param: null };
  }
  if (amount !== undefined && (!Number.isInteger(amount) || amount <= 0)) {
    return { code: 'parameter_invalid', message: 'The amount is a positive integer of minor units.', param: 'amount' };
  }
  const left = refundableAmount(order);
  if ((amount ?? left) > left || left === 0) {
    return { code: 'refund_amount_too_large', message: `The amount is more than the ${left} left to refund on the order.`, param: 'amount' };
  }
  return null;
}

/** The event a counted refund emits: order.refunded for the one that completes the order's refund, else order.partially_refunded. */
export const refundEventType = (amountRefundedAfter: number, amountTotal: number): 'order.refunded' | 'order.partially_refunded' =>
  amountRefundedAfter >= amountTotal ? 'order.refunded' : 'order.partially_refunded';

/** The backoff of a refund the provider answered pending: asked again by key after each wait (ms), at most this many times. */
export const PENDING_REFUND_FIRST_CHECK_MS = 60_000;
export const PENDING_REFUND_MAX_CHECK_MS = 24 * 3_600_000;
export const PENDING_REFUND_CHECKS = 60;

/** The wait before the `n`th check (0-based) of a pending refund: doubling from a minute up to a day. */
export const pendingRefundWaitMs = (n: number): number => Math.min(PENDING_REFUND_MAX_CHECK_MS, PENDING_REFUND_FIRST_CHECK_MS * 2 ** Math.min(n, 20));
