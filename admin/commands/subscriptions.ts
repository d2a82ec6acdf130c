// subscriptions create / provider settle: what the operator does by hand with subscriptions and the
// test payment connection. Both need TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE)
// to reach the workflows: creating starts the subscription's workflow, a notice is a signal.
import { Client, Connection } from '@temporalio/client';
import type { Database } from '../../store/database';
import { findCheckoutSessionForPage } from '../../store/checkout-sessions';
import { findCustomer } from '../../store/customers';
import { findOffer, findProduct } from '../../store/offers';
import { findStore } from '../../store/stores';
import { createTestConnection, storeOfTestTransaction } from '../../adapters/provider/test-connection';
import type { SettlementStatus } from '../../adapters/provider/types';
import { findOrderById } from '../../store/orders';
import { findChargeById } from '../../store/subscription-charges';
import { subscriptionObject } from '../../resources/subscription';
import { createSubscription } from '../../services/subscriptions/subscriptions';
import { deliverOrGiveBack } from '../../services/provider/notices';
import { temporalConnectionOptions } from '../../adapters/temporal-connection';
import { positional, str, type Command, type CommandContext } from './types';

/** Runs `fn` with a Temporal client (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE). */
export async function withTemporal<T>(ctx: CommandContext, fn: (client: Client, taskQueue: string) => Promise<T>): Promise<T> {
  const address = ctx.env.TEMPORAL_ADDRESS;
  if (!address) throw new Error('TEMPORAL_ADDRESS is not set (the command reaches the workflows through Temporal)');
  const connection = await Connection.connect(temporalConnectionOptions(ctx.env));
  try {
    const client = new Client({ connection, namespace: ctx.env.TEMPORAL_NAMESPACE ?? 'default' });
    return await fn(client, ctx.env.TEMPORAL_TASK_QUEUE ?? 'billing');
  } finally {
    await connection.close();
  }
}

/** The transaction behind a charge (sch_), order (ord_), checkout session (cs_) or transaction (tx_) id. */
async function transactionOf(db: Database, ref: string): Promise<{ storeId: string; transactionId: string }> {
  if (ref.startsWith('sch_')) {
    const charge = await findChargeById(db, ref);
    if (!charge) throw new Error(`no charge ${ref}`);
    if (!charge.transaction) throw new Error(`charge ${ref} has no provider transaction (it was refused before the card)`);
    return { storeId: charge.store_id, transactionId: charge.transaction };
  }
  if (ref.startsWith('ord_')) {
    const order = await findOrderById(db, ref);
    if (!order) throw new Error(`no order ${ref}`);
    if (order.provider_transaction_id) return { storeId: order.store_id, transactionId: order.provider_transaction_id };
    if (order.external_order_id?.startsWith('sch_')) return transactionOf(db, order.external_order_id);
    if (order.external_order_id?.startsWith('tx_')) return { storeId: order.store_id, transactionId: order.external_order_id };
    if (order.checkout_session) return transactionOf(db, order.checkout_session);
    throw new Error(`order ${ref} has no provider transaction`);
  }
  if (ref.startsWith('cs_')) {
    const session = await findCheckoutSessionForPage(db, ref);
    if (!session) throw new Error(`no checkout session ${ref}`);
    const transactionId = session.payment?.transaction_id;
    if (!transactionId) throw new Error(`checkout session ${ref} has no pending provider transaction`);
    return { storeId: session.store_id, transactionId };
  }
  if (ref.startsWith('tx_')) {
    const storeId = await storeOfTestTransaction(db, ref);
    if (!storeId) throw new Error(`no transaction ${ref} at the test connection`);
    return { storeId, transactionId: ref };
  }
  throw new Error(`'${ref}' is not a charge (sch_), order (ord_), checkout session (cs_) or transaction (tx_) id`);
}

export const subscriptionCommands: Record<string, Command> = {
  'subscriptions create': {
    summary:
      'create a subscription paying with a test card read from standard input and start its workflow (--store --customer --offer [--currency])',
    options: {
      store: { type: 'string' },
      customer: { type: 'string' },
      offer: { type: 'string' },
      card: { type: 'string' },
      currency: { type: 'string' },
    },
    async run(ctx) {
      const storeId = str(ctx, 'store')!;
      const store = await findStore(ctx.db, storeId);
      if (!store) throw new Error(`no store ${storeId}`);
      const customer = await findCustomer(ctx.db, storeId, str(ctx, 'customer')!);
      if (!customer) throw new Error(`no customer ${str(ctx, 'customer')} in store ${storeId}`);
      const offer = await findOffer(ctx.db, storeId, str(ctx, 'offer')!);
      if (!offer) throw new Error(`no offer ${str(ctx, 'offer')} in store ${storeId}`);
      if (offer.type !== 'recurring') throw new Error(`offer ${offer._id} is not recurring`);
      const product = await findProduct(ctx.db, storeId, offer.product_id);
      if (!product) throw new Error(`offer ${offer._id} has no product`);
      const currency = str(ctx, 'currency', false)?.toLowerCase();
      if (currency && !offer.prices.some((p) => p.currency === currency)) throw new Error(`offer ${offer._id} has no price in ${currency}`);

      // A number in the arguments would show in the process list (ps) and the shell's history.
      if (ctx.values.card !== undefined)
        throw new Error('pass the card number on standard input, not as --card (arguments show in the process list)');
      const number = (await ctx.stdin()).trim();
      if (!number) throw new Error('no card number on standard input (echo 4242424242424242 | npm run admin -- subscriptions create ...)');
      const provider = createTestConnection({ db: ctx.db });
      // The card number goes to the provider only; what is kept is its pm_ id, brand and last4.
      const saved = await provider.saveCard({
        storeId,
        customerId: customer._id,
        providerCustomerId: customer.provider_customer_id,
        card: { number },
      });
      if (!saved.ok) throw new Error(`the provider refused the card: ${saved.message}`);
      const doc = await withTemporal(ctx, (client, taskQueue) =>
        createSubscription(
          { db: ctx.db, provider, temporal: client, taskQueue },
          { store, customer, offer, product, currency, paymentMethod: saved.card },
        ),
      );
      return subscriptionObject(doc);
    },
    format: (result) => {
      const s = result as ReturnType<typeof subscriptionObject>;
      return `subscription ${s.id}  ${s.status}  ${s.offer?.name}  ${s.amount} ${s.currency}  next billing ${s.next_billing_at ?? '-'}`;
    },
  },

  'provider settle': {
    summary:
      'send the test connection notice settling a pending charge, order, checkout or transaction (<sch_|ord_|cs_|tx_ id> --outcome paid|refused|expired)',
    options: { outcome: { type: 'string' } },
    async run(ctx) {
      const ref = positional(ctx, 0, 'charge, order, checkout session or transaction id');
      const outcome = str(ctx, 'outcome')! as SettlementStatus;
      if (!['paid', 'refused', 'expired'].includes(outcome)) throw new Error('--outcome is paid, refused or expired');
      const { storeId, transactionId } = await transactionOf(ctx.db, ref);
      const settled = await createTestConnection({ db: ctx.db }).settle({ storeId, transactionId, outcome });
      if (!settled.ok) throw new Error(settled.reason);
      const { notice } = settled;
      // The notice reaches the waiting workflow (its notifyRef) as the providerSettled signal.
      if (notice.notifyRef) {
        // A workflow that has ended: a paid notice is given back by the give-back workflow, never dropped.
        await withTemporal(ctx, (temporal, taskQueue) => deliverOrGiveBack({ temporal, taskQueue }, notice, storeId, true));
      }
      return { ref, store: storeId, notice, signaled: notice.notifyRef };
    },
    format: (result) => {
      const r = result as { ref: string; notice: { transactionId: string; status: string }; signaled: string | null };
      return `${r.ref}: transaction ${r.notice.transactionId} ${r.notice.status}${r.signaled ? `, notice sent to ${r.signaled}` : ''}`;
    },
  },
};
