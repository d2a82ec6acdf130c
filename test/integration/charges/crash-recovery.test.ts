// What this tests: recovery of the one-off charge path when a worker dies (SIGKILL) holding its
// event activity after writing the events: the charge is already succeeded, the request waits. A
// second worker finishes the charge workflow within 15 s of the kill; one provider charge, one
// charge, one order and one subscription_charge.succeeded, and the waiting request answers 201.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { merchantChargeKey } from '../../../domain/charges';
import { TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import { chargeWorkflowId } from '../../../workflows/charge/messages';
import { collections } from '../../../store/collections';
import { ordersCollection } from '../../../store/orders';
import { chargesCollection } from '../../../store/subscription-charges';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { crashScenario, RECOVERY_BOUND_MS, type CrashScenario } from '../../support/crash-recovery';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from '../../support/env';
import { seedCatalog, seedSubscription } from '../../support/subscriptions';

let mongo: TestMongo;
let temporal: TestTemporal;
let api: TestApi;
let store: TestStore;
let scenario: CrashScenario | null = null;
const taskQueue = uniqueTaskQueue('crash-charge');

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  store = await createTestStore(mongo.db);
});

afterAll(async () => {
  await scenario?.stop();
  await api?.close();
  await temporal?.close();
  await mongo?.close();
});

it('a worker killed holding emitChargeEvents: the charge workflow completes on the survivor within 15 s, charged once', async () => {
  const catalog = await seedCatalog(mongo.db, store.store._id);
  const sub = await seedSubscription({ db: mongo.db, taskQueue }, { store: store.store, offer: catalog.trial, product: catalog.product });
  scenario = await crashScenario(mongo, temporal, taskQueue, 'emitChargeEvents');

  const key = `crash-${Date.now()}`;
  const pending = call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
    json: { amount: 2500 },
    headers: { 'idempotency-key': key },
  });
  await scenario.killWhenHeld();
  const chargeKey = merchantChargeKey(key);
  const { ms } = await scenario.recovered('one-off charge', async () => {
    const charge = await chargesCollection(mongo.db).findOne({ store_id: store.store._id, key: chargeKey });
    const run = charge ? await temporal.client.workflow.getHandle(chargeWorkflowId(store.store._id, chargeKey)).describe() : null;
    return run?.status.name === 'COMPLETED' ? run : null;
  });
  expect(ms).toBeLessThan(RECOVERY_BOUND_MS);

  const res = await pending;
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({ status: 'succeeded', amount: 2500 });
  expect(await mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ key: chargeKey })).toBe(1);
  expect(await chargesCollection(mongo.db).countDocuments({ key: chargeKey })).toBe(1);
  expect(await ordersCollection(mongo.db).countDocuments({ subscription: sub._id })).toBe(1);
  const events = collections(mongo.db).events;
  expect(await events.countDocuments({ store_id: store.store._id, type: 'subscription_charge.succeeded' })).toBe(1);
  expect(await events.countDocuments({ store_id: store.store._id, type: 'invoice.paid' })).toBe(1);
}, 180_000);
