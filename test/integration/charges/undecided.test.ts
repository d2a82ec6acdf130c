// What this tests: a one-off charge whose provider answers after the route's wait is answered 201 with
// the charge as it stands (pending, no settled_at) to the request that started it, never 409; the charge
// goes on to succeed with one capture; a duplicate later replays it; and the key's lease is renewed while
// its request runs, so a duplicate past the first lease gets 409 instead of running the handler again.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestWorker } from '../../support/worker';
import { collections } from '../../../store/collections';
import { ordersCollection } from '../../../store/orders';
import { chargesCollection } from '../../../store/subscription-charges';
import { createTestConnection, TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../../adapters/provider/types';
import { merchantChargeKey } from '../../../domain/charges';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { seedCatalog, seedSubscription, type TestCatalog } from '../../support/subscriptions';
import type { ApiConfig } from '../../../api/config';

let mongo: TestMongo;
let temporal: TestTemporal;
let store: TestStore;
let catalog: TestCatalog;
const workers: { worker: Worker; running: Promise<void> }[] = [];
const apis: TestApi[] = [];

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  store = await createTestStore(mongo.db);
  catalog = await seedCatalog(mongo.db, store.store._id);
});

afterAll(async () => {
  for (const { worker } of workers) worker.shutdown();
  await Promise.all(workers.map(({ running }) => running.catch(() => undefined)));
  await Promise.all(apis.map((api) => api.close()));
  await temporal?.close();
  await mongo?.close();
});

/** The test connection, answering one-off charges (keys under `api/`) only after `delayMs`. */
function slowProvider(delayMs: number): PaymentProvider {
  const real = createTestConnection({ db: mongo.db });
  return {
    ...real,
    async chargeSavedCard(input) {
      if (input.idempotencyKey.startsWith('api/')) await new Promise((resolve) => setTimeout(resolve, delayMs));
      return real.chargeSavedCard(input);
    },
  };
}

/** An API and a worker on their own task queue, the worker's provider answering charges after `delayMs`. */
async function stack(name: string, delayMs: number, config: Partial<ApiConfig> = {}) {
  const taskQueue = uniqueTaskQueue(name);
  const worker = await createTestWorker(mongo, temporal, taskQueue, { provider: slowProvider(delayMs) });
  workers.push({ worker, running: worker.run() });
  const api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue, config });
  apis.push(api);
  const sub = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: catalog.trial, product: catalog.product },
  );
  const charge = (key: string) =>
    call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
      json: { amount: 3210, description: 'Slow' },
      headers: { 'idempotency-key': key },
    });
  return { api, sub, charge };
}

const captures = (key: string) =>
  mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ store_id: store.store._id, key: merchantChargeKey(key) });
const keyRecord = (key: string) => collections(mongo.db).idempotency.findOne({ _id: `${store.store._id}:${key}` });

it('a provider answering after 25 s: the first request gets 201 pending at the 20 s wait, the charge then succeeds with one capture, a duplicate at 35 s replays it', async () => {
  const { api, sub, charge } = await stack('charge-undecided', 25_000);
  const key = `slow-${Date.now()}`;
  const started = Date.now();

  const first = await charge(key);
  expect(first.status).toBe(201);
  expect(first.body).toMatchObject({ object: 'subscription_charge', status: 'pending', settled_at: null, amount: 3210, subscription: sub._id });
  expect(Date.now() - started).toBeGreaterThanOrEqual(20_000);

  // Past the first request's 30 s lease: its key holds the stored answer, nothing runs again.
  await waitFor(async () => Date.now() - started >= 35_000, { timeoutMs: 40_000, description: '35 s after the first request' });
  const duplicate = await charge(key);
  expect([200, 409]).toContain(duplicate.status);
  if (duplicate.status === 200) expect(duplicate.body.id).toBe(first.body.id);

  const settled = await waitFor(
    async () => {
      const res = await call(api, store.key, 'GET', `/v1/subscription_charges/${first.body.id}`);
      return res.body.status === 'succeeded' ? res.body : null;
    },
    { timeoutMs: 30_000, description: 'the charge to succeed' },
  );
  expect(settled.settled_at).not.toBeNull();
  expect(settled.order).toMatch(/^ord_/);
  expect(await captures(key)).toBe(1);
  expect(await chargesCollection(mongo.db).countDocuments({ store_id: store.store._id, key: merchantChargeKey(key) })).toBe(1);
  expect(await ordersCollection(mongo.db).countDocuments({ store_id: store.store._id, subscription: sub._id })).toBe(1);

  // Replays show the charge as it is now: 200, succeeded.
  const replay = await charge(key);
  expect([replay.status, replay.headers.get('idempotent-replayed'), replay.body.id, replay.body.status]).toEqual([
    200,
    'true',
    first.body.id,
    'succeeded',
  ]);
}, 120_000);

it("the key's lease is renewed while its request runs: a duplicate past the first lease gets 409, never a second run", async () => {
  // Scaled down: a 2 s lease, a 6 s wait and a provider answering after 9 s keep the same order of events.
  const { charge } = await stack('charge-lease', 9_000, { idempotencyLeaseMs: 2_000, chargeWaitMs: 6_000 });
  const key = `lease-${Date.now()}`;
  const first = charge(key);

  const claimed = await waitFor(keyRecord.bind(null, key), { timeoutMs: 10_000, description: 'the key claimed' });
  await waitFor(
    async () => {
      const record = await keyRecord(key);
      return record !== null && record.locked_until > claimed.locked_until && Date.now() > claimed.locked_until;
    },
    { timeoutMs: 10_000, intervalMs: 100, description: 'the lease renewed and its first term over' },
  );
  const duplicate = await charge(key);
  expect([duplicate.status, duplicate.body.error?.code]).toEqual([409, 'idempotency_key_in_use']);

  const answered = await first;
  expect([answered.status, answered.body.status]).toEqual([201, 'pending']);
  expect((await keyRecord(key))?.request_id).toBe(claimed.request_id);
  await waitFor(async () => (await captures(key)) === 1, { timeoutMs: 20_000, description: 'the one capture' });
}, 60_000);
