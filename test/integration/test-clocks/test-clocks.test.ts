// Test clocks through the real servers: the API, the billing worker on the Temporal dev server and the
// test database. One clock carries two customers: a card that pays and a card that pays only with the
// buyer present. Advanced three months (two advances: at most two cycles each), the first subscription
// renews three times and its metered period closes and is charged; the second goes through the whole
// dunning path (declined renewal, retries after 1, 3 and 5 days, then expired), in clock order. Each
// advance settles in seconds, is `ready` afterwards and emits test_helpers.test_clock.ready.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createClockCustomer, subscribeWithSavedCard } from '../../support/clock-subscriptions';
import { createTestWorker } from '../../support/worker';
import { periodEnd } from '../../../domain/billing-periods';
import { collections } from '../../../store/collections';
import { ordersCollection } from '../../../store/orders';
import { subscriptionsCollection } from '../../../store/subscriptions';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { seedUsageOffer } from '../../support/usage';

let mongo: TestMongo;
let temporal: TestTemporal;
let worker: Worker;
let running: Promise<void>;
let api: TestApi;
let store: TestStore;
const taskQueue = uniqueTaskQueue('test-clocks');
const DAY = 24 * 60 * 60;

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  store = await createTestStore(mongo.db);
  worker = await createTestWorker(mongo, temporal, taskQueue);
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await api?.close();
  await temporal?.close();
  await mongo?.close();
});

const get = (path: string) => call(api, store.key, 'GET', path);
const post = (path: string, json: unknown) => call(api, store.key, 'POST', path, { json });

interface Clock {
  id: string;
  frozen_time: number;
  status: string;
}
interface Sub {
  id: string;
  status: string;
  current_period_start: number | null;
  current_period_end: number | null;
}

async function clockCustomer(clock: string): Promise<string> {
  const created = await createClockCustomer(api, store.key, clock, 'clock');
  expect(created.body).toMatchObject({ test_clock: clock });
  return created.id;
}

/** A monthly subscription whose first period was paid at the clock's time, with `card` saved for renewals. */
async function subscribe(customerId: string, card: string, offerId: string, nowMs: number): Promise<string> {
  const c = collections(mongo.db);
  const offer = await c.offers.findOne({ _id: offerId });
  const product = await c.products.findOne({ _id: offer!.product_id });
  const deps = { db: mongo.db, temporal: temporal.client, taskQueue };
  return subscribeWithSavedCard(deps, { store: store.store, customerId, offer: offer!, product: product!, card, nowMs });
}

/** Advances and waits for `ready`; the milliseconds it took. */
async function advance(clock: string, to: number): Promise<number> {
  const started = Date.now();
  const answer = await post(`/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: to });
  expect(answer.status).toBe(200);
  expect(answer.body).toMatchObject({ id: clock, status: 'advancing', frozen_time: to });
  await waitFor(async () => ((await get(`/v1/test_helpers/test_clocks/${clock}`)).body as Clock).status === 'ready' || null, {
    timeoutMs: 60_000,
    intervalMs: 100,
    description: `clock ready at ${to}`,
  });
  return Date.now() - started;
}

/** Events of `type` about `id`: the object itself, or an order of that subscription. */
const eventsOf = async (type: string, id: string) =>
  ((await get(`/v1/events?type=${type}&limit=100`)).body as { data: { data: { object: { id: string; subscription?: string } } }[] }).data.filter(
    (e) => e.data.object.id === id || e.data.object.subscription === id,
  );

/** A clock's ready events once `count` of them exist: the clock reads `ready` a moment before its ready event is written. */
const readyEventsOf = async (clock: string, count: number) => {
  const events = () => eventsOf('test_helpers.test_clock.ready', clock);
  await waitFor(async () => (await events()).length >= count || null, { timeoutMs: 10_000, description: `${count} ready events of ${clock}` });
  return events();
};

test('a clock advanced three months: three renewals, a declined card dunned to the end, a usage period charged, in order and in seconds', async () => {
  const t0 = Math.floor(Date.now() / 1000);
  const made = await post('/v1/test_helpers/test_clocks', { frozen_time: t0, name: 'three months' });
  expect(made.status).toBe(201);
  const clock = (made.body as Clock).id;
  expect(made.body).toMatchObject({ object: 'test_clock', frozen_time: t0, status: 'ready', name: 'three months' });

  const offer = await seedUsageOffer(mongo.db, store.store._id);
  const payer = await subscribe(await clockCustomer(clock), '4242424242424242', offer._id, t0 * 1000);
  const decliner = await subscribe(await clockCustomer(clock), '4000000000000341', offer._id, t0 * 1000);

  // Metered usage on the paying subscription, counted at the clock's time.
  const meter = (await post('/v1/billing/meters', { display_name: 'Clock calls', event_name: 'clock.calls' })).body as { id: string };
  expect((await post(`/v1/subscriptions/${payer}/usage_items`, { meter: meter.id, unit_amount: 100 })).status).toBeLessThan(300);
  const payerCustomer = (await subscriptionsCollection(mongo.db).findOne({ _id: payer }))!.customer;
  await waitFor(async () => (await get(`/v1/subscriptions/${payer}/usage`)).body.data?.length > 0 || null, {
    timeoutMs: 20_000,
    description: 'usage period open',
  });
  const event = await post('/v1/billing/meter_events', { event_name: 'clock.calls', payload: { customer_id: payerCustomer, value: 7 } });
  expect(event.status).toBe(201);
  expect((event.body as { timestamp: number }).timestamp).toBe(t0);

  const ends = [periodEnd(t0, 'monthly', null)];
  for (let i = 1; i < 3; i++) ends.push(periodEnd(ends[i - 1], 'monthly', null));
  const firstAdvance = await advance(clock, ends[1] - 3600);
  const secondAdvance = await advance(clock, ends[2] + 3600);
  console.log(`test clock: advance 1 (2 months) ${firstAdvance} ms, advance 2 (1 month) ${secondAdvance} ms`);

  // Three renewals: the periods follow one another on the clock's time.
  const paid = (await get(`/v1/subscriptions/${payer}`)).body as Sub;
  expect(paid).toMatchObject({ status: 'active', current_period_start: ends[2] });
  const renewals = await ordersCollection(mongo.db).find({ subscription: payer, billing_reason: 'renewal', status: 'paid' }).toArray();
  expect(renewals).toHaveLength(3);

  // The declined card: past_due at the first renewal, retried after 1, 3 and 5 days, then expired.
  const dunned = await subscriptionsCollection(mongo.db).findOne({ _id: decliner });
  expect(dunned).toMatchObject({ status: 'expired', ended_at: ends[0] + 5 * DAY });
  expect(await eventsOf('invoice.payment_failed', decliner)).toHaveLength(4);
  expect(await eventsOf('customer.subscription.deleted', decliner)).toHaveLength(1);

  // The first usage period closed at its end and was charged: 7 calls at 1.00.
  const periods = (
    (await get(`/v1/subscriptions/${payer}/usage`)).body as {
      data: { period_start: number; close_reason: string | null; amount_total: number; charge: string | null }[];
    }
  ).data;
  const first = periods.find((p) => p.period_start === t0)!;
  expect(first).toMatchObject({ close_reason: 'period_end', amount_total: 700 });
  expect(first.charge).toMatch(/^sch_/);
  const charge = (await get(`/v1/subscription_charges/${first.charge}`)).body;
  expect(charge).toMatchObject({ amount: 700, status: 'succeeded' });

  const final = (await get(`/v1/test_helpers/test_clocks/${clock}`)).body as Clock;
  expect(final).toMatchObject({ status: 'ready', frozen_time: ends[2] + 3600 });
  expect(await readyEventsOf(clock, 2)).toHaveLength(2);
}, 180_000);

test('a clock advanced past a trial, a scheduled cancellation and a session deadline: each happens when the clock passes it', async () => {
  const t0 = Math.floor(Date.now() / 1000) - 10 * DAY;
  const clock = ((await post('/v1/test_helpers/test_clocks', { frozen_time: t0 })).body as Clock).id;
  const trialOffer = await seedUsageOffer(mongo.db, store.store._id, { trialDays: 7 });
  const plain = await seedUsageOffer(mongo.db, store.store._id);
  const trialing = await subscribe(await clockCustomer(clock), '4242424242424242', trialOffer._id, t0 * 1000);
  const leaving = await subscribe(await clockCustomer(clock), '4242424242424242', plain._id, t0 * 1000);
  expect((await get(`/v1/subscriptions/${trialing}`)).body).toMatchObject({ status: 'trialing', trial_end: t0 + 7 * DAY });
  expect((await post(`/v1/subscriptions/${leaving}`, { cancel_at_period_end: true })).body).toMatchObject({ cancel_at_period_end: true });

  // A session of a clock customer: its deadline is on the clock (ten days ago in real time, still open).
  const buyer = await clockCustomer(clock);
  const session = await post('/v1/checkout/sessions', { offer: plain._id, customer: buyer });
  expect(session.status).toBe(201);
  expect(session.body).toMatchObject({ status: 'open', created: t0, expires_at: t0 + DAY });
  const sessionId = (session.body as { id: string }).id;

  const end = periodEnd(t0, 'monthly', null);
  await advance(clock, end + 60);

  expect((await get(`/v1/subscriptions/${trialing}`)).body).toMatchObject({ status: 'active', current_period_start: t0 + 7 * DAY });
  expect((await get(`/v1/subscriptions/${leaving}`)).body).toMatchObject({ status: 'canceled', ended_at: end });
  expect((await get(`/v1/checkout/sessions/${sessionId}`)).body).toMatchObject({ status: 'expired' });
  expect(await eventsOf('checkout.session.expired', sessionId)).toHaveLength(1);
}, 120_000);

test('the test clock resource: create, list, retrieve and advance answer typed errors for bad input', async () => {
  const t0 = Math.floor(Date.now() / 1000);
  expect(await post('/v1/test_helpers/test_clocks', {})).toMatchObject({
    status: 400,
    body: { error: { code: 'parameter_missing', param: 'frozen_time' } },
  });
  expect(await post('/v1/test_helpers/test_clocks', { frozen_time: 'soon' })).toMatchObject({
    status: 400,
    body: { error: { code: 'parameter_invalid', param: 'frozen_time' } },
  });
  expect(await post('/v1/test_helpers/test_clocks', { frozen_time: t0, name: 'x'.repeat(121) })).toMatchObject({
    status: 400,
    body: { error: { param: 'name' } },
  });
  expect(await get('/v1/test_helpers/test_clocks/clock_unknown')).toMatchObject({ status: 404, body: { error: { code: 'resource_missing' } } });

  const older = ((await post('/v1/test_helpers/test_clocks', { frozen_time: t0, name: null })).body as Clock).id;
  const newer = ((await post('/v1/test_helpers/test_clocks', { frozen_time: t0 })).body as Clock).id;
  const page = (await get('/v1/test_helpers/test_clocks?limit=2')).body;
  expect(page).toMatchObject({ object: 'list', has_more: true, url: '/v1/test_helpers/test_clocks' });
  expect(page.data.map((c: Clock) => c.id)).toEqual([newer, older]);
  expect((await get(`/v1/test_helpers/test_clocks/${older}`)).body).toMatchObject({ id: older, name: null, frozen_time: t0, status: 'ready' });

  // Not backwards, not in place, at most two cycles (two months for a clock without subscriptions).
  const refused = (to: number) => post(`/v1/test_helpers/test_clocks/${older}/advance`, { frozen_time: to });
  expect(await refused(t0)).toMatchObject({ status: 400, body: { error: { code: 'parameter_invalid', param: 'frozen_time' } } });
  const twoMonths = periodEnd(periodEnd(t0, 'monthly', null), 'monthly', null);
  expect(await refused(twoMonths + 1)).toMatchObject({ status: 400, body: { error: { code: 'parameter_invalid', param: 'frozen_time' } } });
  expect((await get(`/v1/test_helpers/test_clocks/${older}`)).body).toMatchObject({ status: 'ready', frozen_time: t0 });

  // Two advances at once: one moves the clock, the other is told it is advancing.
  const both = await Promise.all([refused(twoMonths), refused(twoMonths)]);
  expect(both.map((r) => r.status).sort()).toEqual([200, 400]);
  expect(both.find((r) => r.status === 400)!.body.error).toMatchObject({ code: 'test_clock_advancing', type: 'invalid_request_error', param: 'id' });
  await waitFor(async () => ((await get(`/v1/test_helpers/test_clocks/${older}`)).body as Clock).status === 'ready' || null, {
    timeoutMs: 30_000,
    description: 'empty clock ready',
  });
  expect(await readyEventsOf(older, 1)).toHaveLength(1);

  // Support staff may signal the clock's workflow from the Temporal CLI: the clock still ends up standing there.
  await temporal.client.workflow.getHandle(`test-clock/${older}`).signal('advance', { toMs: (twoMonths + 60) * 1000 });
  await waitFor(async () => ((await get(`/v1/test_helpers/test_clocks/${older}`)).body as Clock).frozen_time === twoMonths + 60 || null, {
    timeoutMs: 30_000,
    description: 'clock moved by a signal',
  });

  // Customers: attached only at creation, to a clock of the store; others have none.
  const plain = await post('/v1/customers', {
    email: `plain-${Date.now()}@example.com`,
    name: 'Ana Plain',
    phone: '+5511999990000',
    document: { type: 'cpf', number: '529.982.247-25' },
  });
  expect(plain.body).toMatchObject({ test_clock: null });
  const unknown = await post('/v1/customers', {
    email: `lost-${Date.now()}@example.com`,
    name: 'Ana Lost',
    phone: '+5511999990000',
    document: { type: 'cpf', number: '529.982.247-25' },
    test_clock: 'clock_unknown',
  });
  expect(unknown).toMatchObject({ status: 404, body: { error: { type: 'invalid_request_error', code: 'resource_missing', param: 'test_clock' } } });
  expect(await post(`/v1/customers/${plain.body.id}`, { test_clock: newer })).toMatchObject({ status: 400 });
});

test('deleting a clock ends its workflows and deletes its customers, their subscriptions and sessions', async () => {
  const t0 = Math.floor(Date.now() / 1000);
  const clock = ((await post('/v1/test_helpers/test_clocks', { frozen_time: t0 })).body as Clock).id;
  const offer = await seedUsageOffer(mongo.db, store.store._id);
  const customer = await clockCustomer(clock);
  const email = (await get(`/v1/customers/${customer}`)).body.email as string;
  const sub = await subscribe(customer, '4242424242424242', offer._id, t0 * 1000);
  const session = (await post('/v1/checkout/sessions', { offer: offer._id, customer })).body.id as string;
  const workflows = [`test-clock/${clock}`, `subscription/${sub}`, `checkout-session/${session}`];
  const statusOf = async (id: string) => (await temporal.client.workflow.getHandle(id).describe()).status.name;
  await waitFor(async () => (await Promise.all(workflows.map(statusOf))).every((s) => s === 'RUNNING') || null, {
    timeoutMs: 20_000,
    description: 'workflows running',
  });

  expect((await call(api, store.key, 'DELETE', `/v1/test_helpers/test_clocks/${clock}`)).body).toEqual({
    id: clock,
    object: 'test_clock',
    deleted: true,
  });
  for (const id of workflows) expect(await statusOf(id), id).toBe('TERMINATED');
  for (const path of [
    `/v1/test_helpers/test_clocks/${clock}`,
    `/v1/customers/${customer}`,
    `/v1/subscriptions/${sub}`,
    `/v1/checkout/sessions/${session}`,
  ]) {
    expect((await get(path)).status, path).toBe(404);
  }
  // The email is free again: a new customer, not the deleted one.
  const again = await post('/v1/customers', {
    email,
    name: 'Ana Again',
    phone: '+5511999990000',
    document: { type: 'cpf', number: '529.982.247-25' },
  });
  expect(again.status).toBe(201);
  expect(again.body.id).not.toBe(customer);
});
