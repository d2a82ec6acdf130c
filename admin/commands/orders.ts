// orders refund: the merchant's refund of an order, whole or in part, through the refund service (the
// same one the dashboard will call): typed refusals, then the refund's workflow. Needs TEMPORAL_ADDRESS
// (and TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE) to start it.
import { ApiError } from '../../domain/errors';
import { findOrderById } from '../../store/orders';
import type { RefundObject } from '../../resources/refund';
import { refundOrder } from '../../services/refunds/refunds';
import { withTemporal } from './subscriptions';
import { positional, str, type Command } from './types';

/** --amount as minor units: a positive integer, else the typed refusal the service would give. */
function amountOption(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const amount = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(amount) || amount <= 0) {
    throw new ApiError('parameter_invalid', '--amount is a positive integer of minor units (e.g. 1500 for 15.00).', { param: 'amount' });
  }
  return amount;
}

export const orderCommands: Record<string, Command> = {
  'orders refund': {
    summary: 'refund an order, whole or in part (<ord_ id> [--amount N minor units] [--reason text] [--cancel: also cancel its subscription])',
    options: { amount: { type: 'string' }, reason: { type: 'string' }, cancel: { type: 'boolean' } },
    async run(ctx) {
      const orderId = positional(ctx, 0, 'order id (ord_)');
      const amount = amountOption(str(ctx, 'amount', false));
      const order = await findOrderById(ctx.db, orderId);
      if (!order) throw new ApiError('resource_missing', `No such order: ${orderId}`, { param: 'order' });
      return withTemporal(ctx, (temporal, taskQueue) =>
        refundOrder(
          { db: ctx.db, temporal, taskQueue },
          { storeId: order.store_id, orderId, amount, reason: str(ctx, 'reason', false) ?? null, cancelSubscription: ctx.values.cancel === true },
        ),
      );
    },
    format: (result) => {
      const r = result as RefundObject;
      const order = r.order_status ? `, order ${r.order_status} (${r.order_amount_refunded} refunded)` : '';
      return `refund ${r.id}  ${r.status}  ${r.amount} ${r.currency} of ${r.order}${order}${r.subscription_canceled ? ', subscription canceled' : ''}`;
    },
  },
};
