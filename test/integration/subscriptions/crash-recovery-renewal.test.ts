// What this tests: recovery of a renewal at the period's end when a worker dies (SIGKILL) holding
// chargeSubscriptionCycle after the provider approved (money taken, renewal order written, Temporal
// not told). A second worker repeats the charge under its key `renewal/<sub>/2/0` within 15 s of the
// kill: the period advances once, one provider charge, one renewal order, one invoice.paid.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import { collections } from '../../../store/collections';
import { ordersCollection } from '../../../store/orders';
import { findSubscription } from '../../../store/subscriptions';
import { createTestStore, type TestStore } from '../../support/api';
import { crashScenario, RECOVERY_BOUND_MS, type CrashScenario } from '../../support/crash-recovery';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from '../../support/env';
import { seedUsageOffer, seedUsageSubscription } from '../../support/usage';

const DAY_S = 24 * 60 * 60;
/** How far ahead of its creation the subscription's first (paid) period ends: the renewal is due then. */
const RENEWAL_IN_MS = 5_000;

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

it('a worker killed holding the renewal charge after the approval: the period advances on the survivor within 15 s, charged once', async () => {
  const offer = await seedUsageOffer(mongo.db, store.store._id, { name: 'Image API daily', billingCycle: 'custom', customBillingDays: 1 });
  scenario = await crashScenario(mongo, temporal, taskQueue, 'chargeSubscriptionCycle');
  // First period paid (as checkout leaves it) a day ago: its workflow's renewal timer fires in seconds, on the doomed worker.
  const { subscription: sub } = await seedUsageSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer, now: Date.now() - DAY_S * 1000 + RENEWAL_IN_MS },
  );
  await scenario.killWhenHeld();
  const { ms, value: renewed } = await scenario.recovered('subscription renewal', async () => {
    const doc = await findSubscription(mongo.db, store.store._id, sub._id);
    return doc?.cycles_completed === 2 ? doc : null;
  });
  expect(ms).toBeLessThan(RECOVERY_BOUND_MS);

  const periodEnd = sub.current_period_end!;
  expect(renewed).toMatchObject({
    status: 'active',
    current_period_start: periodEnd,
    current_period_end: periodEnd + DAY_S,
    next_billing_at: periodEnd + DAY_S,
  });
  const ledger = await mongo.db
    .collection(TEST_CHARGES_COLLECTION)
    .find({ key: { $regex: `^renewal/${sub._id}/` } })
    .toArray();
  expect(ledger.map((entry) => entry.key)).toEqual([`renewal/${sub._id}/2/0`]);
  const orders = await ordersCollection(mongo.db).find({ subscription: sub._id }).toArray();
  expect(orders.map((order) => [order.billing_reason, order.status, order.amount_total])).toEqual([['renewal', 'paid', 4990]]);
  const paid = await collections(mongo.db).events.find({ store_id: store.store._id, type: 'invoice.paid' }).toArray();
  expect(paid.map((event) => (JSON.parse(event.data_json) as { object: { id: string } }).object.id)).toEqual([orders[0]._id]);
}, 180_000);
