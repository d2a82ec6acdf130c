// Fixtures for metered-usage tests: a recurring offer, a customer with a saved test card and a
// subscription whose first period is paid (dated at a chosen time), meters and usage items written
// the way the API writes them.
import type { Client } from '@temporalio/client';
import type { Db } from 'mongodb';
import { createOffer, createProduct } from '../../store/catalog';
import type { OfferDoc, StoreDoc } from '../../store/collections';
import { insertCustomer, newCustomerDoc } from '../../store/customers';
import { createTestConnection } from '../../adapters/provider/test-connection';
import { createSubscription, recordSubscription } from '../../services/subscriptions/subscriptions';
import type { SubscriptionDoc } from '../../store/subscriptions';
import type { CustomerDoc } from '../../store/collections';

export async function seedUsageOffer(db: Db, storeId: string, extra: Partial<Parameters<typeof createOffer>[1]> = {}): Promise<OfferDoc> {
  const product = await createProduct(db, { storeId, name: 'Image API', family: 'platform' });
  return createOffer(db, {
    storeId,
    productId: product._id,
    name: 'Image API monthly',
    type: 'recurring',
    billingCycle: 'monthly',
    prices: [
      { currency: 'brl', amount: 4990, default: true },
      { currency: 'usd', amount: 990, default: false },
    ],
    ...extra,
  });
}

let seq = 0;

export async function seedCustomer(db: Db, storeId: string): Promise<CustomerDoc> {
  const email = `usage${++seq}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const { customer } = await insertCustomer(db, newCustomerDoc(storeId, { email, name: 'Ana Buyer', phone: '+5511999990000' }, {}));
  return customer;
}

export interface UsageSubscriptionInput {
  store: StoreDoc;
  offer: OfferDoc;
  customer?: CustomerDoc;
  /** Test card number; null for none (PIX). */
  card?: string | null;
  currency?: string;
  /** Milliseconds; the first period starts here. */
  now?: number;
  /** Whether the first period is paid at creation (active with a period) or left to the workflow. */
  firstPeriodPaid?: boolean;
}

/** A subscription with its first period paid from `now`; its workflow starts when `temporal` is given. */
export async function seedUsageSubscription(
  deps: { db: Db; temporal?: Client; taskQueue: string },
  input: UsageSubscriptionInput,
): Promise<{ subscription: SubscriptionDoc; customer: CustomerDoc }> {
  const provider = createTestConnection({ db: deps.db });
  const customer = input.customer ?? (await seedCustomer(deps.db, input.store._id));
  let card = null;
  if (input.card !== null) {
    const saved = await provider.saveCard({ storeId: input.store._id, customerId: customer._id, card: { number: input.card ?? '4242424242424242' } });
    if (!saved.ok) throw new Error(saved.message);
    card = saved.card;
  }
  const product = {
    _id: input.offer.product_id,
    store_id: input.store._id,
    name: 'Image API',
    description: null,
    family: 'platform',
    active: true,
    created: 0,
  };
  const fields = {
    store: input.store,
    customer,
    offer: input.offer,
    product,
    currency: input.currency,
    paymentMethod: card,
    now: input.now,
    firstPeriodPaid: input.firstPeriodPaid ?? true,
  };
  const subscription = deps.temporal
    ? await createSubscription({ db: deps.db, provider, temporal: deps.temporal, taskQueue: deps.taskQueue }, fields)
    : await recordSubscription({ db: deps.db }, fields);
  return { subscription, customer };
}
