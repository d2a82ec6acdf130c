// What this tests: a one-off charge is decided by the subscription's own workflow, so a pause and a
// charge cannot both win. A charge held at the provider makes a pause sent meanwhile wait until the
// charge is done; a charge whose API check passed just before a pause is refused by the workflow with
// 400 subscription_not_chargeable and reaches no provider. Real FerretDB, Temporal dev server, HTTP.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestConnection, TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../../adapters/provider/types';
import { merchantChargeKey } from '../../../domain/charges';
import { startCharge } from '../../../services/charges/charges';
import { findSubscription, subscriptionsCollection } from '../../../store/subscriptions';
import { chargesCollection } from '../../../store/subscription-charges';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { gate, type Gate } from '../../support/gate';
import { seedCatalog, seedSubscription, type TestCatalog } from '../../support/subscriptions';
import { createTestWorker } from '../../support/worker';

let mongo: TestMongo;
let temporal: TestTemporal;
let worker: Worker;
let running: Promise<void>;
let api: TestApi;
let store: TestStore;
let catalog: TestCatalog;
const taskQueue = uniqueTaskQueue('charge-pause-race');
/** Charges of this amount wait at the provider until the test opens the gate. */
const HELD_AMOUNT = 3131;
let held: Gate = gate();
let heldArrived: Gate = gate();

function holdingProvider(inner: PaymentProvider): PaymentProvider {
  return {
    ...inner,
    async chargeSavedCard(input) {
      if (input.amount === HELD_AMOUNT) {
        heldArrived.open();
        await held.promise;
      }
      return inner.chargeSavedCard(input);
    },
  };
}

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  const provider = holdingProvider(createTestConnection({ db: mongo.db }));
  worker = await createTestWorker(mongo, temporal, taskQueue, { provider });
  running = worker.run();
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  store = await createTestStore(mongo.db);
  catalog = await seedCatalog(mongo.db, store.store._id);
});

afterAll(async () => {
  held.open();
  worker?.shutdown();
  await running?.catch(() => undefined);
  await api?.close();
  await temporal?.close();
  await mongo?.close();
});

const subscription = () =>
  seedSubscription({ db: mongo.db, temporal: temporal.client, taskQueue }, { store: store.store, offer: catalog.trial, product: catalog.product });
const ledgerOf = (key: string) =>
  mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ store_id: store.store._id, key: merchantChargeKey(key) });

it('a pause sent while a charge is at the provider waits for it: the charge is made before the pause, never after', async () => {
  held = gate();
  heldArrived = gate();
  const sub = await subscription();
  const key = `race-${Date.now()}`;
  const order: string[] = [];
  const charging = call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
    json: { amount: HELD_AMOUNT },
    headers: { 'idempotency-key': key },
  }).then((res) => {
    order.push('charge');
    return res;
  });
  await heldArrived.promise;
  let chargedWhenPaused = -1;
  const pausing = call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/pause`).then(async (res) => {
    order.push('pause');
    chargedWhenPaused = await ledgerOf(key);
    return res;
  });
  // The pause cannot finish while the charge holds the subscription's workflow.
  await new Promise((resolve) => setImmediate(resolve));
  expect(order).toEqual([]);
  held.open();
  const [charged, paused] = await Promise.all([charging, pausing]);
  expect([charged.status, paused.status]).toEqual([201, 200]);
  // When the pause answered, the charge was already made (the two answers travel separate paths back).
  expect(chargedWhenPaused).toBe(1);
  expect(await ledgerOf(key)).toBe(1);
  const doc = (await findSubscription(mongo.db, store.store._id, sub._id))!;
  expect(doc.status).toBe('paused');
  expect(doc.history.find((h) => h.action === 'paused')!.at).toBeGreaterThanOrEqual(charged.body.created);
});

it('a charge that passed the API check just before a pause is refused by the subscription workflow: 400 subscription_not_chargeable, nothing at the provider', async () => {
  const sub = await subscription();
  expect((await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/pause`)).status).toBe(200);
  // The API's fast check reads the document as it was a moment before the pause (active): only the
  // subscription's workflow, which applied the pause, can refuse the charge now.
  await subscriptionsCollection(mongo.db).updateOne({ _id: sub._id }, { $set: { status: 'active' } });
  const key = `late-${Date.now()}`;
  const charge = () =>
    call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, { json: { amount: 900 }, headers: { 'idempotency-key': key } });
  const refused = await charge();
  expect([refused.status, refused.body.error?.code]).toEqual([400, 'subscription_not_chargeable']);
  expect(await ledgerOf(key)).toBe(0);
  expect(await chargesCollection(mongo.db).countDocuments({ store_id: store.store._id, key: merchantChargeKey(key) })).toBe(0);
  expect((await charge()).headers.get('idempotent-replayed')).toBe('true');
  // Asked again after the run closed with its stored 400 lost, the refusal is read from the closed run.
  await waitFor(
    async () =>
      (await temporal.client.workflow.getHandle(`charge/${store.store._id}/${merchantChargeKey(key)}`).describe()).status.name === 'COMPLETED',
    { description: 'charge run closed' },
  );
  await expect(
    startCharge(
      { db: mongo.db, temporal: temporal.client, taskQueue },
      { storeId: store.store._id, subscriptionId: sub._id, key: merchantChargeKey(key), amount: 900, source: 'api', billingReason: 'manual' },
    ),
  ).rejects.toMatchObject({ code: 'subscription_not_chargeable' });
});
