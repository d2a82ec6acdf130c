// What this tests: a one-off charge made by the subscription's workflow as a local activity (issue 30,
// patch `one-off-charge-local`) on its unlucky paths. The charge is a marker in the subscription's history,
// not an activity task; a provider slower than the workflow task timeout (10 s) still charges once with
// no task timed out (the SDK heartbeats the task); a worker killed right after the provider approved loses
// the workflow task, a survivor runs the keyed local activity again: one capture, one charge, one order.
import { temporal as proto } from '@temporalio/proto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestConnection, TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../../adapters/provider/types';
import { merchantChargeKey } from '../../../domain/charges';
import { ordersCollection } from '../../../store/orders';
import { chargesCollection } from '../../../store/subscription-charges';
import { subscriptionWorkflowId } from '../../../workflows/subscription/messages';
import { createTestWorker } from '../../support/worker';
import { recordHistory } from '../../support/histories';
import { chargeAfterRecovery, startFaultWorker } from '../../support/fault-worker-process';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { seedCatalog, seedSubscription, type TestCatalog } from '../../support/subscriptions';

const { EventType } = proto.api.enums.v1;

let mongo: TestMongo;
let temporal: TestTemporal;
let store: TestStore;
let catalog: TestCatalog;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  store = await createTestStore(mongo.db);
  catalog = await seedCatalog(mongo.db, store.store._id);
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await temporal?.close();
  await mongo?.close();
});

/** A worker and an API on a queue of their own (the worker's provider as given). */
async function stack(name: string, provider?: PaymentProvider): Promise<{ api: TestApi; taskQueue: string }> {
  const taskQueue = uniqueTaskQueue(name);
  const worker = await createTestWorker(mongo, temporal, taskQueue, provider ? { provider } : {});
  const running = worker.run();
  cleanups.push(async () => {
    worker.shutdown();
    await running;
  });
  const api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  cleanups.push(() => api.close());
  return { api, taskQueue };
}

/** How the subscription's history holds its charges: local-activity markers, activity tasks, lost workflow tasks. */
async function chargeSteps(subscriptionId: string) {
  const { events } = await temporal.client.workflow.getHandle(subscriptionWorkflowId(subscriptionId)).fetchHistory();
  const all = events ?? [];
  const localCharges = all.filter((e) => {
    const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
    return (
      e.markerRecordedEventAttributes?.markerName === 'core_local_activity' &&
      Buffer.from(data ?? [])
        .toString()
        .includes('executeSubscriptionCharge')
    );
  });
  const activityCharges = all.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'executeSubscriptionCharge');
  const lostTasks = all.filter(
    (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT || e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
  );
  return { localCharges: localCharges.length, activityCharges: activityCharges.length, lostTasks: lostTasks.length };
}

/** One capture, one charge document and one order under the key, and the charge succeeded with that capture. */
async function expectChargedOnce(key: string, subscriptionId: string, charge: { transaction?: string; status?: string }) {
  const ledger = await mongo.db
    .collection(TEST_CHARGES_COLLECTION)
    .find({ key: merchantChargeKey(key) })
    .toArray();
  expect(ledger).toHaveLength(1);
  expect(charge).toMatchObject({ status: 'succeeded', transaction: ledger[0].transaction_id });
  expect(await chargesCollection(mongo.db).countDocuments({ key: merchantChargeKey(key) })).toBe(1);
  expect(await ordersCollection(mongo.db).countDocuments({ subscription: subscriptionId })).toBe(1);
}

it("an approved one-off charge is a local-activity marker in the subscription's history, not an activity task", async () => {
  const { api, taskQueue } = await stack('one-off-local');
  const sub = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: catalog.trial, product: catalog.product },
  );
  const key = `local-${Date.now()}`;
  const res = await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
    json: { amount: 1500 },
    headers: { 'idempotency-key': key },
  });
  expect(res.status).toBe(201);
  await expectChargedOnce(key, sub._id, res.body);
  expect(await chargeSteps(sub._id)).toEqual({ localCharges: 1, activityCharges: 0, lostTasks: 0 });
  await recordHistory(temporal.client, subscriptionWorkflowId(sub._id), 'subscription-one-off-charge-local', 1);
}, 60_000);

it('a provider slower than the workflow task timeout (12 s against 10 s): charged once, 201, no workflow task timed out', async () => {
  const real = createTestConnection({ db: mongo.db });
  const slow: PaymentProvider = {
    ...real,
    async chargeSavedCard(input) {
      await new Promise((resolve) => setTimeout(resolve, 12_000));
      return real.chargeSavedCard(input);
    },
  };
  const { api, taskQueue } = await stack('one-off-local-slow', slow);
  const sub = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: catalog.trial, product: catalog.product },
  );
  const key = `slow-${Date.now()}`;
  const res = await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
    json: { amount: 1700 },
    headers: { 'idempotency-key': key },
  });
  expect(res.status).toBe(201);
  await expectChargedOnce(key, sub._id, res.body);
  expect(await chargeSteps(sub._id)).toEqual({ localCharges: 1, activityCharges: 0, lostTasks: 0 });
}, 90_000);

it('a worker killed right after the provider approved: a survivor repeats the local charge under its key; one capture, charge and order', async () => {
  const taskQueue = uniqueTaskQueue('one-off-local-crash');
  const api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  cleanups.push(() => api.close());
  // Without its workflow: the doomed worker starts it with the charge and holds its task when it dies.
  const sub = await seedSubscription({ db: mongo.db, taskQueue }, { store: store.store, offer: catalog.trial, product: catalog.product });
  const doomed = await startFaultWorker(mongo.db.databaseName, taskQueue);
  cleanups.push(() => doomed.group.stop({ signal: 'SIGKILL' }));
  const key = `local-crash-${Date.now()}`;
  const pending = call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
    json: { amount: 4321 },
    headers: { 'idempotency-key': key },
  });

  const exit = await doomed.group.exited;
  expect(exit.signal ?? (doomed.output().includes('dying') ? 'SIGKILL' : null)).toBe('SIGKILL');
  expect(doomed.output()).toContain('approved tx_');
  expect(await mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ key: merchantChargeKey(key) })).toBe(1);
  expect(await ordersCollection(mongo.db).countDocuments({ subscription: sub._id })).toBe(0);

  const survivor = await createTestWorker(mongo, temporal, taskQueue);
  const running = survivor.run();
  cleanups.push(async () => {
    survivor.shutdown();
    await running;
  });
  const first = await pending;
  // Recovery outlasting the request's wait answers 409 in use; a retry under the key then gets the charge.
  expect([201, 409]).toContain(first.status);
  const res = first.status === 201 ? first : await chargeAfterRecovery(api, store.key, sub._id, key, 4321);
  expect(res.status).toBe(201);
  await expectChargedOnce(key, sub._id, res.body);
  const steps = await chargeSteps(sub._id);
  expect(steps).toMatchObject({ localCharges: 1, activityCharges: 0 });
  expect(steps.lostTasks).toBeGreaterThanOrEqual(1);
}, 150_000);
