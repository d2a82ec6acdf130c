// Chargebacks (Stripe's charge.dispute.created / .closed): the disputed payment's order becomes
// charged_back with its dispute (order.charged_back once per dispute); a closed dispute records its outcome
// (won, lost) on the order. A closed dispute seen first opens and closes it at once.
import type { ChargeDispute } from '../../adapters/provider/stripe/events';
import { orderObject } from '../../resources/order';
import type { Database } from '../../store/database';
import { closeOrderDispute, findOrderByTransaction, markOrderChargedBack, type OrderDoc } from '../../store/orders';
import { emitEventOnce } from '../events/emit-once';
import type { EventDeps } from '../events/events';

/** The order as the dispute leaves it; null when no order of the store has the payment. */
export async function recordDispute(
  deps: EventDeps & { db: Database },
  storeId: string,
  transactionId: string,
  dispute: ChargeDispute,
): Promise<OrderDoc | null> {
  const order = await findOrderByTransaction(deps.db, storeId, transactionId);
  if (!order) return null;
  const opened = {
    id: dispute.id,
    status: dispute.status,
    reason: dispute.reason,
    amount: dispute.amount,
    currency: dispute.currency,
    created: dispute.created,
    closed_at: null,
  };
  const marked = (await markOrderChargedBack(deps.db, storeId, order._id, opened)) ?? order;
  if (marked.status === 'charged_back' && marked.dispute?.id === dispute.id) {
    const event = { storeId, type: 'order.charged_back', object: orderObject(marked), request: null };
    await emitEventOnce(deps, `${order._id}:order.charged_back:${dispute.id}`, event);
  }
  if (!dispute.closed) return marked;
  const at = Math.floor(Date.now() / 1000);
  return closeOrderDispute(deps.db, storeId, order._id, {
    id: dispute.id,
    status: dispute.status,
    reason: dispute.reason,
    amount: dispute.amount,
    at,
  });
}
