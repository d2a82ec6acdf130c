// What this tests: exactly-once charging when the worker process is killed (SIGKILL) right after the
// provider approved and before the order and charge were written. A new worker retries the charge
// activity: one provider charge, one order, one charge document, one invoice.paid, and the waiting
// HTTP request answers 201 with that charge (or 409 in use when recovery outlasts its wait, and a retry
// under the key then gets it).
import { merchantChargeKey } from '../../../domain/charges';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ChildGroup } from '../../../temporal-dev/processes';
import { chargeAfterRecovery, startFaultWorker } from '../../support/fault-worker-process';
import { createTestWorker } from '../../support/worker';
import { collections } from '../../../store/collections';
import { ordersCollection } from '../../../store/orders';
import { chargesCollection } from '../../../store/subscription-charges';
import { TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { seedCatalog, seedSubscription } from '../../support/subscriptions';

let mongo: TestMongo;
let temporal: TestTemporal;
let api: TestApi;
let store: TestStore;
let doomed: ChildGroup | null = null;
let survivor: Worker | null = null;
let survivorRun: Promise<void> | null = null;
const taskQueue = uniqueTaskQueue('charge-fault-worker');

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  store = await createTestStore(mongo.db);
});

afterAll(async () => {
  await doomed?.stop({ signal: 'SIGKILL' });
  survivor?.shutdown();
  await survivorRun?.catch(() => undefined);
  await api?.close();
  await temporal?.close();
  await mongo?.close();
});

it('a worker killed between the provider approval and the order write: after a new worker, exactly one charge, order and invoice.paid', async () => {
  const catalog = await seedCatalog(mongo.db, store.store._id);
  // Trialing and without its own workflow: only the charge runs on this task queue.
  const sub = await seedSubscription({ db: mongo.db, taskQueue }, { store: store.store, offer: catalog.trial, product: catalog.product });

  const fault = await startFaultWorker(mongo.db.databaseName, taskQueue);
  doomed = fault.group;

  const key = `fault-${Date.now()}`;
  const pending = call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
    json: { amount: 4321 },
    headers: { 'idempotency-key': key },
  });

  const exit = await doomed.exited;
  expect(exit.signal ?? (fault.output().includes('dying') ? 'SIGKILL' : null)).toBe('SIGKILL');
  expect(fault.output()).toContain('approved tx_');
  // The money was taken; nothing else was written.
  expect(await mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ key: merchantChargeKey(key) })).toBe(1);
  expect(await chargesCollection(mongo.db).countDocuments({ key: merchantChargeKey(key) })).toBe(0);
  expect(await ordersCollection(mongo.db).countDocuments({ subscription: sub._id })).toBe(0);

  survivor = await createTestWorker(mongo, temporal, taskQueue);
  survivorRun = survivor.run();
  // The waiting request gets the charge, or (recovery outlasting its wait) 409 in use; a retry under the key then gets it.
  const first = await pending;
  expect([201, 409]).toContain(first.status);
  const res = first.status === 201 ? first : await chargeAfterRecovery(api, store.key, sub._id, key, 4321);

  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({ status: 'succeeded', amount: 4321, order: expect.stringMatching(/^ord_/) });
  const ledger = await mongo.db
    .collection(TEST_CHARGES_COLLECTION)
    .find({ key: merchantChargeKey(key) })
    .toArray();
  expect(ledger).toHaveLength(1);
  expect(res.body.transaction).toBe(ledger[0].transaction_id);
  expect(await chargesCollection(mongo.db).countDocuments({ key: merchantChargeKey(key) })).toBe(1);
  expect(await ordersCollection(mongo.db).countDocuments({ subscription: sub._id })).toBe(1);
  await waitFor(
    async () => (await collections(mongo.db).events.countDocuments({ store_id: store.store._id, type: 'subscription_charge.succeeded' })) === 1,
    { description: 'charge event' },
  );
  expect(await collections(mongo.db).events.countDocuments({ store_id: store.store._id, type: 'invoice.paid' })).toBe(1);
  // A child process (tsx start, bundling, a dead worker's timeouts) on a loaded 2-core box: ~30 s
  // typically; the limit leaves room so load does not turn into a failure.
}, 120_000);
