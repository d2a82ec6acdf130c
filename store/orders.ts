// Orders: written by charges, renewals and checkout; read-only through the API.
import type { Db } from 'mongodb';
import type { StoredMetadata } from '../domain/metadata';
import { insertOnce } from './insert-once';
import { createdFilter, definedFields, findPage, NEWEST_FIRST, type CreatedRange, type PageResult, type PageWindow } from './pagination';

export type OrderStatus = 'pending' | 'paid' | 'failed' | 'canceled' | 'refunded' | 'partially_refunded' | 'charged_back';

export interface OrderItem {
  kind: string;
  description: string;
  quantity: number;
  unit_amount: number;
  amount: number;
}

export interface OrderDoc {
  _id: string;
  store_id: string;
  status: OrderStatus;
  paid_at: number | null;
  currency: string;
  amount_subtotal: number;
  amount_discount: number;
  amount_total: number;
  billing_reason: string;
  order_type: 'checkout' | 'api' | 'renewal';
  recurrence: 'one_off' | 'scheduled' | 'unscheduled';
  subscription: string | null;
  customer: string | null;
  customer_email: string | null;
  offer: string | null;
  product: string | null;
  items: OrderItem[];
  payment_method_type: 'card' | 'pix' | null;
  installments: number | null;
  external_order_id: string | null;
  status_source: 'provider' | 'dashboard';
  client_reference_id: string | null;
  checkout_session: string | null;
  coupon: string | null;
  metadata: StoredMetadata;
  livemode: boolean;
  created: number;
  /** Transaction at the payment provider (renewals and charges); lets a provider notice find the order. */
  provider_transaction_id?: string | null;
  /** The key the order's payment was charged under (its provider account is pinned by it); absent on older orders. */
  charge_key?: string | null;
  /** The test clock of the customer it was charged to: paid through a test connection, never in the plan quota. */
  test_clock?: string | null;
  /** Minor units given back so far (absent: none, or the whole total on an order refunded whole before refunds were counted). */
  amount_refunded?: number | null;
  /** Each refund recorded on the order, once per refund (ours by rf_ id, Stripe's by its re_ id). */
  refund_entries?: OrderRefundEntry[];
  /** The chargeback opened against the payment, if any. */
  dispute?: OrderDispute | null;
}

/** One refund as the order recorded it: what it gave back and what the order had been refunded after it. */
export interface OrderRefundEntry {
  /** rf_ id (the refund workflow's). */
  id: string;
  /** The provider's refund id (re_ at Stripe and the test connection). */
  provider_refund_id: string | null;
  amount: number;
  /** The order's amount_refunded once this refund was counted: equal to amount_total means it completed the refund. */
  amount_refunded_after: number;
  created: number;
}

/** A chargeback: the provider's dispute id, its status (open ones, then won or lost), reason and amount. */
export interface OrderDispute {
  id: string;
  status: string;
  reason: string | null;
  amount: number;
  currency: string;
  created: number;
  closed_at: number | null;
}

export function ordersCollection(db: Db) {
  return db.collection<OrderDoc>('orders');
}

export async function findOrder(db: Db, storeId: string, id: string): Promise<OrderDoc | null> {
  return ordersCollection(db).findOne({ _id: id, store_id: storeId });
}

/** What GET /v1/orders filters by. */
export interface OrderListFilter {
  customer?: string;
  subscription?: string;
  status?: OrderStatus;
  created?: CreatedRange;
}

/** A page of the store's orders, newest first. */
export function listOrders(db: Db, storeId: string, filter: OrderListFilter, window: PageWindow): Promise<PageResult<OrderDoc>> {
  const { customer, subscription, status, created } = filter;
  const conditions = { ...createdFilter(created), ...definedFields({ customer, subscription, status }) };
  return findPage(ordersCollection(db), { storeId, filter: conditions, order: NEWEST_FIRST, ...window });
}

/** Inserts an order whose id was derived from its cause; a retry finds it already there. */
export async function insertOrderOnce(db: Db, doc: OrderDoc): Promise<OrderDoc> {
  return insertOnce(ordersCollection(db), doc, () => findOrder(db, doc.store_id, doc._id));
}

/**
 * The store's plan quota for [from, to) (Unix seconds): "each approved charge counts as one order",
 * so the orders paid then, by order_type. Counted from the orders themselves (each approved charge
 * writes exactly one, keyed), so a retried charge can never count twice; a later refund does not un-count.
 * Orders of test clocks' customers never count (test money; `test_clock: null` also matches orders without the field),
 * nor do free-trial sign-ups' orders of amount 0 (no charge was made).
 */
export async function countPaidOrders(
  db: Db,
  storeId: string,
  from: number,
  to: number,
): Promise<{ total: number; by_type: Record<OrderDoc['order_type'], number> }> {
  const types: OrderDoc['order_type'][] = ['checkout', 'api', 'renewal'];
  const counts = await Promise.all(
    types.map((type) =>
      ordersCollection(db).countDocuments({
        store_id: storeId,
        paid_at: { $gte: from, $lt: to },
        order_type: type,
        test_clock: null,
        amount_total: { $gt: 0 },
      }),
    ),
  );
  const by_type = Object.fromEntries(types.map((type, i) => [type, counts[i]])) as Record<OrderDoc['order_type'], number>;
  return { total: counts.reduce((a, b) => a + b, 0), by_type };
}

/** pending -> paid, failed or canceled, once (compare-and-set on status); returns the order as it now is. */
export async function settlePendingOrder(
  db: Db,
  storeId: string,
  id: string,
  status: 'paid' | 'failed' | 'canceled',
  paidAt: number | null,
): Promise<OrderDoc | null> {
  const updated = await ordersCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId, status: 'pending' },
    { $set: { status, paid_at: paidAt } },
    { returnDocument: 'after' },
  );
  return updated ?? findOrder(db, storeId, id);
}

/**
 * failed -> paid for the renewal attempt the buyer confirmed later (3-D Secure in the portal): only the order of
 * that provider transaction, only from failed, so a repeat changes nothing; the order as it is otherwise.
 */
export async function payConfirmedRenewalOrder(db: Db, storeId: string, id: string, transactionId: string, paidAt: number): Promise<OrderDoc | null> {
  const updated = await ordersCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId, status: 'failed', provider_transaction_id: transactionId },
    { $set: { status: 'paid', paid_at: paidAt } },
    { returnDocument: 'after' },
  );
  return updated ?? findOrder(db, storeId, id);
}

/** paid -> refunded (the money went back); the order as it is when it was already refunded. */
export async function markOrderRefunded(db: Db, storeId: string, id: string): Promise<OrderDoc | null> {
  const updated = await ordersCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId, status: 'paid' },
    { $set: { status: 'refunded' } },
    { returnDocument: 'after' },
  );
  return updated ?? findOrder(db, storeId, id);
}

/**
 * A payment captured after its order closed (canceled, failed, or pending with its workflow gone) and given
 * back: the order becomes refunded (compare-and-set); the order as it is when it was already refunded or paid.
 */
export async function markLateCaptureRefunded(db: Db, storeId: string, id: string): Promise<OrderDoc | null> {
  const updated = await ordersCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId, status: { $in: ['pending', 'failed', 'canceled'] } },
    { $set: { status: 'refunded' } },
    { returnDocument: 'after' },
  );
  return updated ?? findOrder(db, storeId, id);
}

/** The store's order paid by a provider transaction: a checkout's (external_order_id) or a charge's or renewal's. */
export function findOrderByTransaction(db: Db, storeId: string, transactionId: string): Promise<OrderDoc | null> {
  return ordersCollection(db).findOne({ store_id: storeId, $or: [{ provider_transaction_id: transactionId }, { external_order_id: transactionId }] });
}

/** The order a checkout paid belongs to the subscription that checkout became. */
export async function linkOrderToSubscription(db: Db, storeId: string, orderId: string, subscriptionId: string): Promise<void> {
  await ordersCollection(db).updateOne({ _id: orderId, store_id: storeId }, { $set: { subscription: subscriptionId } });
}

/** A customer's latest orders, newest first (the portal). */
export function ordersOfCustomer(db: Db, storeId: string, customerId: string, limit = 50): Promise<OrderDoc[]> {
  return ordersCollection(db).find({ store_id: storeId, customer: customerId }).sort({ created: -1, _id: -1 }).limit(limit).toArray();
}

/** An order by its id alone, whichever store it is in (the operator CLI names only the ord_ id). */
export async function findOrderById(db: Db, id: string): Promise<OrderDoc | null> {
  return ordersCollection(db).findOne({ _id: id });
}

/** Statuses a refund or a chargeback can reach: the money was taken. */
export const CAPTURED_ORDER_STATUSES: readonly OrderStatus[] = ['paid', 'partially_refunded', 'refunded', 'charged_back'];

/** What an order has been refunded (an order refunded whole before refunds were counted: its total). */
export const amountRefundedOf = (order: Pick<OrderDoc, 'amount_refunded' | 'status' | 'amount_total'>): number =>
  order.amount_refunded ?? (order.status === 'refunded' ? order.amount_total : 0);

/** The status a refund leaves: refunded when whole, partially refunded otherwise; a chargeback keeps its status. */
function statusAfterRefund(order: OrderDoc, after: number): OrderStatus {
  if (order.status === 'charged_back') return order.status;
  return after >= order.amount_total ? 'refunded' : 'partially_refunded';
}

/** Tries of the compare-and-set before giving up to the caller's retry (another refund landed each time). */
const REFUND_CAS_TRIES = 5;

/**
 * Counts one refund on the order, once per refund id (a retry finds its entry and changes nothing): a
 * compare-and-set on what was refunded before, so concurrent refunds each count once and never past the total.
 */
export async function applyOrderRefund(
  db: Db,
  storeId: string,
  orderId: string,
  refund: { id: string; providerRefundId: string | null; amount: number; at: number },
): Promise<{ order: OrderDoc; entry: OrderRefundEntry } | null> {
  for (let attempt = 0; attempt < REFUND_CAS_TRIES; attempt++) {
    const order = await findOrder(db, storeId, orderId);
    if (!order) return null;
    const known = order.refund_entries?.find((entry) => entry.id === refund.id);
    if (known) return { order, entry: known };
    if (!CAPTURED_ORDER_STATUSES.includes(order.status)) throw new Error(`order ${orderId} is ${order.status}: nothing was captured to refund`);
    const after = Math.min(order.amount_total, amountRefundedOf(order) + refund.amount);
    const entry: OrderRefundEntry = {
      id: refund.id,
      provider_refund_id: refund.providerRefundId,
      amount: refund.amount,
      amount_refunded_after: after,
      created: refund.at,
    };
    const updated = await ordersCollection(db).findOneAndUpdate(
      { _id: orderId, store_id: storeId, status: order.status, amount_refunded: order.amount_refunded ?? null },
      { $set: { amount_refunded: after, status: statusAfterRefund(order, after) }, $push: { refund_entries: entry } },
      { returnDocument: 'after' },
    );
    if (updated) return { order: updated, entry };
  }
  throw new Error(`order ${orderId} kept changing while a refund was counted; retry`);
}

/** A chargeback opened: the captured order becomes charged_back with its dispute; null when it was already (or is not captured). */
export async function markOrderChargedBack(db: Db, storeId: string, orderId: string, dispute: OrderDispute): Promise<OrderDoc | null> {
  const order = await findOrder(db, storeId, orderId);
  if (!order || order.dispute?.id === dispute.id || !CAPTURED_ORDER_STATUSES.includes(order.status)) return null;
  return ordersCollection(db).findOneAndUpdate(
    { _id: orderId, store_id: storeId, status: order.status, ...(order.dispute ? { 'dispute.id': order.dispute.id } : { dispute: null }) },
    { $set: { status: 'charged_back', dispute } },
    { returnDocument: 'after' },
  );
}

/** A chargeback closed: its outcome (won, lost) recorded on the order's dispute; the order as it now is. */
export async function closeOrderDispute(
  db: Db,
  storeId: string,
  orderId: string,
  close: { id: string; status: string; reason: string | null; amount: number; at: number },
): Promise<OrderDoc | null> {
  const order = await findOrder(db, storeId, orderId);
  if (!order?.dispute || order.dispute.id !== close.id) return order;
  const dispute: OrderDispute = {
    ...order.dispute,
    status: close.status,
    reason: close.reason ?? order.dispute.reason,
    amount: close.amount,
    closed_at: close.at,
  };
  const updated = await ordersCollection(db).findOneAndUpdate(
    { _id: orderId, store_id: storeId, 'dispute.id': close.id, 'dispute.status': order.dispute.status },
    { $set: { dispute } },
    { returnDocument: 'after' },
  );
  return updated ?? findOrder(db, storeId, orderId);
}
