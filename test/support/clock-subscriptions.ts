// Customers and subscriptions on a test clock, as the clock tests set them up: the customer over the API
// (test_clock given), the subscription made as the API makes one once its first period is paid, with a
// card saved on the test connection for its renewals.
import { expect } from 'vitest';
import type { Client } from '@temporalio/client';
import { createTestConnection } from '../../adapters/provider/test-connection';
import { createSubscription } from '../../services/subscriptions/subscriptions';
import type { OfferDoc, ProductDoc, StoreDoc } from '../../store/collections';
import { findCustomer } from '../../store/customers';
import type { Database } from '../../store/database';
import { call, type TestApi } from './api';

/** A customer on `clock` made through the API (201); its id and the object answered. */
export async function createClockCustomer(api: TestApi, key: string, clock: string, emailPrefix: string) {
  const created = await call(api, key, 'POST', '/v1/customers', {
    json: {
      email: `${emailPrefix}-${Math.random().toString(36).slice(2, 10)}@example.com`,
      name: 'Ana Clock',
      phone: '+5511999990000',
      document: { type: 'cpf', number: '529.982.247-25' },
      test_clock: clock,
    },
  });
  expect(created.status).toBe(201);
  return { id: (created.body as { id: string }).id, body: created.body };
}

export interface PaidSubscription {
  store: StoreDoc;
  customerId: string;
  offer: OfferDoc;
  product: ProductDoc;
  /** The card number saved for renewals. */
  card: string;
  /** When the first period was paid (ms); the clock's time for a subscription on one. */
  nowMs?: number;
}

/** The subscription's id; its workflow is started on `taskQueue`. */
export async function subscribeWithSavedCard(
  deps: { db: Database; temporal: Client; taskQueue: string },
  { store, customerId, offer, product, card, nowMs }: PaidSubscription,
): Promise<string> {
  const provider = createTestConnection({ db: deps.db });
  const saved = await provider.saveCard({ storeId: store._id, customerId, card: { number: card } });
  if (!saved.ok) throw new Error(saved.message);
  const customer = await findCustomer(deps.db, store._id, customerId);
  const doc = await createSubscription(
    { ...deps, provider },
    { store, customer: customer!, offer, product, paymentMethod: saved.card, firstPeriodPaid: true, now: nowMs },
  );
  return doc._id;
}
