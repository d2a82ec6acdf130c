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
  /** The test clock of the customer it was charged to: paid through a test connection, never in the plan quota. */
  test_clock?: string | null;
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
