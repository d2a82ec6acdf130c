// Test fixtures for subscriptions and charges: a catalog (products in one family and outside it,
// recurring offers with and without trial or cycle limit), customers, saved test cards, and
// subscriptions created the way the admin CLI does (createSubscription, which starts the workflow).
import type { Client } from '@temporalio/client';
import type { Db } from 'mongodb';
import { createOffer, createProduct } from '../../store/catalog';
import type { OfferDoc, ProductDoc, StoreDoc } from '../../store/collections';
import { insertCustomer, newCustomerDoc } from '../../store/customers';
import { createTestConnection } from '../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../adapters/provider/types';
import { createSubscription, recordSubscription } from '../../services/subscriptions/subscriptions';
import type { SubscriptionDoc } from '../../store/subscriptions';

export interface TestCatalog {
  product: ProductDoc;
  sibling: ProductDoc;
  stranger: ProductDoc;
  monthly: OfferDoc;
  monthlyPremium: OfferDoc;
  monthlyCheaper: OfferDoc;
  trial: OfferDoc;
  limited: OfferDoc;
  siblingOffer: OfferDoc;
  strangerOffer: OfferDoc;
  custom: OfferDoc;
}

export async function seedCatalog(db: Db, storeId: string): Promise<TestCatalog> {
  const product = await createProduct(db, { storeId, name: 'Image API', family: 'platform' });
  const sibling = await createProduct(db, { storeId, name: 'Video API', family: 'platform' });
  const stranger = await createProduct(db, { storeId, name: 'Cooking Course', family: 'courses' });
  const recurring = (productId: string, name: string, amount: number, extra: Partial<Parameters<typeof createOffer>[1]> = {}) =>
    createOffer(db, {
      storeId,
      productId,
      name,
      type: 'recurring',
      billingCycle: 'monthly',
      prices: [
        { currency: 'brl', amount, default: true },
        { currency: 'usd', amount: Math.round(amount / 5), default: false },
      ],
      ...extra,
    });
  return {
    product,
    sibling,
    stranger,
    monthly: await recurring(product._id, 'Image API monthly', 4990),
    monthlyPremium: await recurring(product._id, 'Image API premium', 9990),
    monthlyCheaper: await recurring(product._id, 'Image API lite', 1990),
    trial: await recurring(product._id, 'Image API with trial', 4990, { trialDays: 7 }),
    limited: await recurring(product._id, 'Image API 3 months', 4990, { cycleLimit: 3 }),
    siblingOffer: await recurring(sibling._id, 'Video API monthly', 7990),
    strangerOffer: await recurring(stranger._id, 'Cooking monthly', 2990),
    custom: await recurring(product._id, 'Image API every 10 days', 1000, { billingCycle: 'custom', customBillingDays: 10 }),
  };
}

let customerSeq = 0;

export interface SubscriptionFixtureDeps {
  db: Db;
  /** Starts the subscription's workflow when given. */
  temporal?: Client;
  taskQueue: string;
  provider?: PaymentProvider;
}

/** A customer with a saved test card and a subscription to `offer` (its workflow started when temporal is given). */
export async function seedSubscription(
  deps: SubscriptionFixtureDeps,
  input: { store: StoreDoc; offer: OfferDoc; product: ProductDoc; card?: string | null; currency?: string; now?: number },
): Promise<SubscriptionDoc> {
  const provider = deps.provider ?? createTestConnection({ db: deps.db });
  const email = `buyer${++customerSeq}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const { customer } = await insertCustomer(deps.db, newCustomerDoc(input.store._id, { email, name: 'Ana Buyer', phone: '+5511999990000' }, {}));
  let card = null;
  if (input.card !== null) {
    const saved = await provider.saveCard({ storeId: input.store._id, customerId: customer._id, card: { number: input.card ?? '4242424242424242' } });
    if (!saved.ok) throw new Error(saved.message);
    card = saved.card;
  }
  const subscription = {
    store: input.store,
    customer,
    offer: input.offer,
    product: input.product,
    currency: input.currency,
    paymentMethod: card,
    now: input.now,
  };
  if (!deps.temporal) return recordSubscription({ db: deps.db }, subscription);
  return createSubscription({ db: deps.db, provider, temporal: deps.temporal, taskQueue: deps.taskQueue }, subscription);
}
