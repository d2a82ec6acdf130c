// invoice.paid / invoice.payment_failed for an order, shared by checkout, renewals and one-off charges.
import { orderObject } from '../../resources/order';
import type { EventRequest } from '../../store/events';
import type { OrderDoc } from '../../store/orders';
import { emitEventOnce } from './emit-once';
import type { EventDeps } from './events';

/**
 * The order's event, once. Keyed by order and type by default, so any number of executions may try;
 * `singleExecution` (the caller is the one activity that emits this fact) skips the claim document
 * and relies on the activity's attempt count instead.
 */
export async function emitOrderEvent(
  deps: EventDeps,
  order: OrderDoc,
  request: EventRequest | null = null,
  options: { singleExecution?: boolean } = {},
): Promise<void> {
  if (order.status !== 'paid' && order.status !== 'failed') return;
  const type = order.status === 'paid' ? 'invoice.paid' : 'invoice.payment_failed';
  const input = { storeId: order.store_id, type, object: orderObject(order), request };
  if (options.singleExecution) await emitEventOnce(deps, input);
  else await emitEventOnce(deps, `${order._id}:${type}`, input);
}
