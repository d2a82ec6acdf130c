// What this tests: a provider keeps idempotency keys for a while only (Stripe: 24 hours) while a charge's
// retries never give up. A one-off charge whose first request was captured but whose answer was lost, retried
// once the provider no longer knows the key, is looked up by its key first: one capture, charge succeeded.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestWorker } from '../../support/worker';
import { createTestConnection, TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../../adapters/provider/types';
import { merchantChargeKey } from '../../../domain/charges';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { seedCatalog, seedSubscription, type TestCatalog } from '../../support/subscriptions';

let mongo: TestMongo;
let temporal: TestTemporal;
let store: TestStore;
let catalog: TestCatalog;
let worker: { worker: Worker; running: Promise<void> } | undefined;
let api: TestApi | undefined;

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  store = await createTestStore(mongo.db);
  catalog = await seedCatalog(mongo.db, store.store._id);
});

afterAll(async () => {
  worker?.worker.shutdown();
  await worker?.running.catch(() => undefined);
  await api?.close();
  await temporal?.close();
  await mongo?.close();
});

/**
 * The test connection as a provider whose memory of keys has lapsed: the first request under a one-off
 * charge's key is captured but its answer lost; a later request under that key is taken as a new one.
 */
function forgetfulProvider(): PaymentProvider {
  const real = createTestConnection({ db: mongo.db });
  const answered = new Set<string>();
  return {
    ...real,
    async chargeSavedCard(input) {
      if (!input.idempotencyKey.startsWith('api/')) return real.chargeSavedCard(input);
      if (answered.has(input.idempotencyKey)) return real.chargeSavedCard({ ...input, idempotencyKey: `${input.idempotencyKey}#after-expiry` });
      answered.add(input.idempotencyKey);
      await real.chargeSavedCard(input);
      throw new Error('connection reset after the request was sent');
    },
  };
}

const capturesStartingWith = (key: string) =>
  mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ store_id: store.store._id, key: { $regex: `^${merchantChargeKey(key)}` } });

it('a retry after the provider forgot the key finds the first capture by key: one capture, the charge succeeded', async () => {
  const taskQueue = uniqueTaskQueue('forgotten-keys');
  const created = await createTestWorker(mongo, temporal, taskQueue, { provider: forgetfulProvider() });
  worker = { worker: created, running: created.run() };
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  const sub = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: catalog.trial, product: catalog.product },
  );
  const key = `forgotten-${Date.now()}`;

  const res = await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
    json: { amount: 4321, description: 'Lost answer' },
    headers: { 'idempotency-key': key },
  });
  expect(res.status).toBe(201);
  const settled = await waitFor(
    async () => {
      const got = await call(api!, store.key, 'GET', `/v1/subscription_charges/${res.body.id}`);
      return got.body.status === 'succeeded' ? got.body : null;
    },
    { timeoutMs: 30_000, description: 'the charge to succeed' },
  );
  expect(settled.amount).toBe(4321);
  expect(await capturesStartingWith(key)).toBe(1);
}, 60_000);
