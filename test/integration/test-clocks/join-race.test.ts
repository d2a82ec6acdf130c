// What this tests: an advance sent at once after a subscription's creation, before its workflow ran its
// first task (where it attaches to the clock), waits for it to attach and then renews it in clock order;
// and a subscription whose workflow never attaches holds an advance JOIN_WAIT_MS at most, the clock then
// going on and naming it. A subscription's first task is held by starting it on a task queue whose worker
// the test runs only once the advance was sent (created beforehand, so it polls at once when run).
// The store query behind the wait reads at most SUBSCRIPTIONS_AWAITED live subscriptions.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createClockCustomer, subscribeWithSavedCard } from '../../support/clock-subscriptions';
import { periodEnd } from '../../../domain/billing-periods';
import { recordSubscription } from '../../../services/subscriptions/subscriptions';
import { clockSubscriptionWorkflows, SUBSCRIPTIONS_AWAITED } from '../../../services/test-clocks';
import { collections } from '../../../store/collections';
import { findCustomer } from '../../../store/customers';
import { ordersCollection } from '../../../store/orders';
import { subscriptionsCollection } from '../../../store/subscriptions';
import { subscriptionWorkflowId } from '../../../workflows/subscription/messages';
import { JOIN_WAIT_MS, testClockStateQuery, testClockWorkflowId, type TestClockWorkflowState } from '../../../workflows/test-clock/messages';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { seedUsageOffer } from '../../support/usage';
import { createTestWorker } from '../../support/worker';
import { recordHistory } from '../../support/histories';

let mongo: TestMongo;
let temporal: TestTemporal;
let worker: Worker;
let running: Promise<void>;
let held: Worker | undefined;
let heldRunning: Promise<void> | undefined;
let api: TestApi;
let store: TestStore;
const taskQueue = uniqueTaskQueue('clock-join');

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  store = await createTestStore(mongo.db);
  worker = await createTestWorker(mongo, temporal, taskQueue);
  running = worker.run();
});

afterAll(async () => {
  if (held?.getState() === 'RUNNING') held.shutdown();
  await heldRunning?.catch(() => undefined);
  worker?.shutdown();
  await running?.catch(() => undefined);
  await api?.close();
  await temporal?.close();
  await mongo?.close();
});

const get = (path: string) => call(api, store.key, 'GET', path);
const post = (path: string, json: unknown) => call(api, store.key, 'POST', path, { json });
const clockState = (clock: string): Promise<TestClockWorkflowState> =>
  temporal.client.workflow.getHandle(testClockWorkflowId(clock)).query(testClockStateQuery);
const clockStatus = async (clock: string) => ((await get(`/v1/test_helpers/test_clocks/${clock}`)).body as { status: string }).status;

async function newClockWithCustomer(t0: number): Promise<{ clock: string; customer: string }> {
  const clock = ((await post('/v1/test_helpers/test_clocks', { frozen_time: t0 })).body as { id: string }).id;
  return { clock, customer: (await createClockCustomer(api, store.key, clock, 'join')).id };
}

/** A monthly subscription paid at `t0` with a saved 4242 card, its workflow started on `queue`'s clock queue. */
async function subscribeOn(queue: string, customerId: string, t0: number): Promise<string> {
  const offer = await seedUsageOffer(mongo.db, store.store._id);
  const product = await collections(mongo.db).products.findOne({ _id: offer.product_id });
  const deps = { db: mongo.db, temporal: temporal.client, taskQueue: queue };
  return subscribeWithSavedCard(deps, { store: store.store, customerId, offer, product: product!, card: '4242424242424242', nowMs: t0 * 1000 });
}

const sendAdvance = async (clock: string, to: number) =>
  expect((await post(`/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: to })).status).toBe(200);

const untilReady = (clock: string) =>
  waitFor(async () => (await clockStatus(clock)) === 'ready' || null, { timeoutMs: 60_000, description: `clock ${clock} ready` });

test("a subscription created and advanced at once, its first task held, renews at its cycle's end, not at the target", async () => {
  const t0 = Math.floor(Date.now() / 1000);
  const { clock, customer } = await newClockWithCustomer(t0);
  const heldQueue = `${taskQueue}-held`;
  held = await createTestWorker(mongo, temporal, heldQueue);
  const sub = await subscribeOn(heldQueue, customer, t0);
  const end = periodEnd(t0, 'monthly', null);
  const target = periodEnd(end, 'monthly', null) - 3600;
  await sendAdvance(clock, target);

  // Before the fix the clock reached the target without the subscription; now it waits for it to attach.
  await waitFor(
    async () => (await clockStatus(clock)) === 'ready' || (await clockState(clock)).joining?.includes(subscriptionWorkflowId(sub)) || null,
    {
      description: 'the clock ready, or waiting for the subscription to attach',
    },
  );
  heldRunning = held.run();
  await untilReady(clock);
  const renewal = await waitFor(
    async () => (await ordersCollection(mongo.db).findOne({ subscription: sub, billing_reason: 'renewal', status: 'paid' })) ?? null,
    { timeoutMs: 60_000, description: 'the renewal paid' },
  );
  await recordHistory(temporal.client, testClockWorkflowId(clock), 'test-clock-advance-awaited-join');

  expect({ created: renewal.created, paid_at: renewal.paid_at }).toEqual({ created: end, paid_at: end });
  expect((await get(`/v1/subscriptions/${sub}`)).body).toMatchObject({
    status: 'active',
    current_period_start: end,
    current_period_end: periodEnd(end, 'monthly', null),
  });
  expect((await get(`/v1/test_helpers/test_clocks/${clock}`)).body).toMatchObject({ status: 'ready', frozen_time: target });
  expect((await clockState(clock)).notJoined).toEqual([]);
}, 180_000);

test('a subscription whose workflow never attaches holds an advance JOIN_WAIT_MS at most; the clock goes on and names it', async () => {
  const t0 = Math.floor(Date.now() / 1000);
  const { clock, customer } = await newClockWithCustomer(t0);
  // No worker ever polls this queue: the subscription's workflow never runs its first task.
  const sub = await subscribeOn(`${taskQueue}-never`, customer, t0);
  const started = Date.now();
  await sendAdvance(clock, t0 + 3600);
  await untilReady(clock);
  const took = Date.now() - started;
  await recordHistory(temporal.client, testClockWorkflowId(clock), 'test-clock-advance-join-wait-ended');

  expect(took).toBeGreaterThanOrEqual(JOIN_WAIT_MS);
  expect(await clockState(clock)).toMatchObject({ joining: [], notJoined: [subscriptionWorkflowId(sub)] });
  expect((await get(`/v1/test_helpers/test_clocks/${clock}`)).body).toMatchObject({ status: 'ready', frozen_time: t0 + 3600 });
  await temporal.client.workflow.getHandle(subscriptionWorkflowId(sub)).terminate('test over: its workflow never ran');
}, 120_000);

test('the wait reads at most SUBSCRIPTIONS_AWAITED live subscriptions of the clock, ended ones not at all', async () => {
  const { clock, customer: customerId } = await newClockWithCustomer(Math.floor(Date.now() / 1000));
  const offer = await seedUsageOffer(mongo.db, store.store._id);
  const [customer, product] = await Promise.all([
    findCustomer(mongo.db, store.store._id, customerId),
    collections(mongo.db).products.findOne({ _id: offer.product_id }),
  ]);
  // Recorded only (no workflow): the first, ended, sorts ahead of the live copies.
  const ended = await recordSubscription(
    { db: mongo.db },
    { store: store.store, customer: customer!, offer, product: product!, paymentMethod: null },
  );
  await subscriptionsCollection(mongo.db).updateOne({ _id: ended._id }, { $set: { status: 'canceled' } });
  const copies = Array.from({ length: SUBSCRIPTIONS_AWAITED + 1 }, (_, i) => ({ ...ended, _id: `${ended._id}_${String(i).padStart(2, '0')}` }));
  await subscriptionsCollection(mongo.db).insertMany(copies);

  const awaited = await clockSubscriptionWorkflows(mongo.db, { storeId: store.store._id, clockId: clock });
  expect(awaited).toEqual(copies.slice(0, SUBSCRIPTIONS_AWAITED).map((c) => subscriptionWorkflowId(c._id)));
});
