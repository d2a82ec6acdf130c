// What this tests: recovery of a subscription's cycle charge (the renewal path: keyed
// `renewal/<sub>/<cycle>/<k>`) when a worker dies (SIGKILL) holding chargeSubscriptionCycle after the
// provider approved. A second worker repeats the activity under the same key within 15 s of the kill:
// the cycle is paid once, one provider charge, one order, one invoice.paid.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_CHARGES_COLLECTION } from '../../adapters/provider/test-connection';
import { collections } from '../../store/collections';
import { ordersCollection } from '../../store/orders';
import { findSubscription } from '../../store/subscriptions';
import { createTestStore, type TestStore } from '../support/api';
import { crashScenario, RECOVERY_BOUND_MS, type CrashScenario } from '../support/crash-recovery';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from '../support/env';
import { seedCatalog, seedSubscription } from '../support/subscriptions';

let mongo: TestMongo;
let temporal: TestTemporal;
let store: TestStore;
let scenario: CrashScenario | null = null;
const taskQueue = uniqueTaskQueue('crash-renewal');

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  store = await createTestStore(mongo.db);
});

afterAll(async () => {
  await scenario?.stop();
  await temporal?.close();
  await mongo?.close();
});

it('a worker killed holding chargeSubscriptionCycle after the approval: the cycle is paid on the survivor within 15 s, charged once', async () => {
  const catalog = await seedCatalog(mongo.db, store.store._id);
  scenario = await crashScenario(mongo, temporal, taskQueue, 'chargeSubscriptionCycle');
  // No trial: the subscription's workflow charges its first cycle at once.
  const sub = await seedSubscription({ db: mongo.db, temporal: temporal.client, taskQueue }, { store: store.store, offer: catalog.monthly, product: catalog.product });
  await scenario.killWhenHeld();
  const { ms } = await scenario.recovered('subscription cycle charge', async () => {
    const doc = await findSubscription(mongo.db, store.store._id, sub._id);
    return doc?.status === 'active' && doc.cycles_completed === 1 ? doc : null;
  });
  expect(ms).toBeLessThan(RECOVERY_BOUND_MS);

  expect(await mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ key: { $regex: `^renewal/${sub._id}/` } })).toBe(1);
  expect(await ordersCollection(mongo.db).countDocuments({ subscription: sub._id })).toBe(1);
  expect(await collections(mongo.db).events.countDocuments({ store_id: store.store._id, type: 'invoice.paid' })).toBe(1);
}, 180_000);
