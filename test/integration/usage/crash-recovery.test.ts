// What this tests: recovery of closing a usage period when a worker dies (SIGKILL) holding
// closeUsagePeriod after the close (period closed in the database, not yet charged, Temporal not
// told). A second worker repeats the close (a no-op on a closed period) and charges the period within
// 15 s of the kill: one provider charge under `usage/<period>`, one charge, one order, each event once.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import { usageChargeKey } from '../../../domain/charges';
import { collections } from '../../../store/collections';
import { createMeter } from '../../../store/meters';
import { ordersCollection } from '../../../store/orders';
import { chargesCollection } from '../../../store/subscription-charges';
import { findUsageState, usagePeriodsCollection } from '../../../store/usage';
import { runSubscriptionAction } from '../../../services/subscriptions/subscriptions';
import { usageClient } from '../../../services/usage/client';
import { ingestMeterEvents } from '../../../services/usage/ingestion';
import { putUsageItem } from '../../../services/usage/items';
import { cancelUpdate } from '../../../workflows/subscription/messages';
import { usageWorkflowId } from '../../../workflows/usage-periods/messages';
import { createTestStore, type TestStore } from '../../support/api';
import { crashScenario, RECOVERY_BOUND_MS, type CrashScenario } from '../../support/crash-recovery';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { seedUsageOffer, seedUsageSubscription } from '../../support/usage';

let mongo: TestMongo;
let temporal: TestTemporal;
let store: TestStore;
let scenario: CrashScenario | null = null;
const taskQueue = uniqueTaskQueue('crash-usage');

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

it('a worker killed holding closeUsagePeriod after the close: the period is charged on the survivor within 15 s, charged once', async () => {
  const storeId = store.store._id;
  const offer = await seedUsageOffer(mongo.db, storeId);
  const meter = await createMeter(mongo.db, { storeId, displayName: 'Images processed', eventName: 'image.crash' });
  scenario = await crashScenario(mongo, temporal, taskQueue, 'closeUsagePeriod');
  const deps = { db: mongo.db, temporal: temporal.client, taskQueue };
  const { subscription: sub, customer } = await seedUsageSubscription(deps, { store: store.store, offer });
  // The item starts the usage workflow (on the doomed worker), which opens the cycle's period.
  await putUsageItem(deps, storeId, sub._id, { meter: meter._id, unit_amount: 250 });
  await waitFor(async () => (await findUsageState(mongo.db, storeId, sub._id))?.open ?? null, {
    timeoutMs: 20_000,
    description: 'the usage period open',
  });
  const ingested = await ingestMeterEvents(deps, storeId, [{ event_name: meter.event_name, payload: { customer_id: customer._id, value: 4 } }]);
  expect(ingested.map((result) => result.status)).not.toContain('error');
  // A cancellation closes the period at once (subscription_ended), where its end would wait out a two-minute grace.
  await runSubscriptionAction(deps, sub, cancelUpdate, {});
  await usageClient(temporal.client, taskQueue).signalRecompute(sub);
  await scenario.killWhenHeld();
  const { ms, value: period } = await scenario.recovered('usage period close', async () => {
    const found = await usagePeriodsCollection(mongo.db).findOne({ store_id: storeId, subscription: sub._id });
    return found?.status === 'closed' && found.charge_state === 'charged' ? found : null;
  });
  expect(ms).toBeLessThan(RECOVERY_BOUND_MS);

  expect(period).toMatchObject({ close_reason: 'subscription_ended', amount_total: 1000, charge_refusal: null });
  expect(await temporal.client.workflow.getHandle(usageWorkflowId(sub._id)).result()).toEqual({ finished: 'ended' });
  expect(await usagePeriodsCollection(mongo.db).countDocuments({ subscription: sub._id })).toBe(1);
  const charges = await chargesCollection(mongo.db).find({ store_id: storeId, subscription: sub._id }).toArray();
  expect(charges.map((charge) => [charge._id, charge.key, charge.amount, charge.status])).toEqual([
    [period.charge, usageChargeKey(period._id), 1000, 'succeeded'],
  ]);
  const ledger = await mongo.db.collection(TEST_CHARGES_COLLECTION).find({ store_id: storeId }).toArray();
  expect(ledger.map((entry) => entry.key)).toEqual([usageChargeKey(period._id)]);
  const orders = await ordersCollection(mongo.db).find({ subscription: sub._id }).toArray();
  expect(orders.map((order) => [order.status, order.amount_total])).toEqual([['paid', 1000]]);
  const events = collections(mongo.db).events;
  expect(await events.countDocuments({ store_id: storeId, type: 'subscription_charge.succeeded' })).toBe(1);
  expect(await events.countDocuments({ store_id: storeId, type: 'invoice.paid' })).toBe(1);
}, 180_000);
