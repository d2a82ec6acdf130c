// What this tests: pause and resume over real HTTP with the billing worker on the Temporal dev server, each
// state a pause can start from (trialing, active, past_due) and what resume gives back (that state, with the
// trial's end or the dunning retry the pause overran happening at once, on a test clock), the events each
// move emits, and that a canceled or expired subscription cannot be paused (400 provider_error, unchanged).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestConnection } from '../../../adapters/provider/test-connection';
import { createSubscription } from '../../../services/subscriptions/subscriptions';
import { findCustomer } from '../../../store/customers';
import { ordersCollection } from '../../../store/orders';
import { startSubscriptionStack, type SubscriptionStack } from '../../support/subscription-stack';
import { call } from '../../support/api';
import { waitFor } from '../../support/env';
import type { TestCatalog } from '../../support/subscriptions';

const DAY = 24 * 60 * 60;
const APPROVES = '4242424242424242';
/** Approved with the buyer present; every later charge without the buyer declines. */
const DECLINES_LATER = '4000000000000341';

let stack: SubscriptionStack;

beforeAll(async () => {
  stack = await startSubscriptionStack('pause-resume');
});

afterAll(async () => {
  await stack?.close();
});

interface Sub {
  id: string;
  status: string;
  trial_end: number | null;
  next_billing_at: number | null;
  cycles_completed: number;
  current_period_start: number | null;
  past_due_details: { attempts: number; next_retry_at: number | null; since: number } | null;
}

const get = (path: string) => call(stack.api, stack.store.key, 'GET', path);
const post = (path: string, json: unknown = {}) => call(stack.api, stack.store.key, 'POST', path, { json });
const subscription = async (id: string) => (await get(`/v1/subscriptions/${id}`)).body as Sub;

let n = 0;
/** A customer of the store, on `clock` when given. */
async function customer(clock: string | null): Promise<string> {
  const created = await post('/v1/customers', {
    email: `pause${++n}-${Math.random().toString(36).slice(2, 8)}@example.com`,
    name: 'Ana Pause',
    phone: '+5511999990000',
    document: { type: 'cpf', number: '529.982.247-25' },
    ...(clock ? { test_clock: clock } : {}),
  });
  expect(created.status).toBe(201);
  return (created.body as { id: string }).id;
}

/** A subscription to `offer` with `card` saved; the workflow takes its first step (trial, or the first charge at once). */
async function subscribe(offer: TestCatalog['monthly'], card: string, clock: string | null = null): Promise<string> {
  const { mongo, temporal, taskQueue, store, catalog } = stack;
  const customerId = await customer(clock);
  const provider = createTestConnection({ db: mongo.db });
  const saved = await provider.saveCard({ storeId: store.store._id, customerId, card: { number: card } });
  if (!saved.ok) throw new Error(saved.message);
  const doc = await createSubscription(
    { db: mongo.db, provider, temporal: temporal.client, taskQueue },
    {
      store: store.store,
      customer: (await findCustomer(mongo.db, store.store._id, customerId))!,
      offer,
      product: catalog.product,
      paymentMethod: saved.card,
    },
  );
  return doc._id;
}

const inStatus = (id: string, status: string, extra: (s: Sub) => boolean = () => true) =>
  waitFor(
    async () => {
      const s = await subscription(id);
      return s.status === status && extra(s) ? s : null;
    },
    { timeoutMs: 30_000, description: `${id} ${status}` },
  );

/** Event types about the subscription, oldest first, with the status each showed. */
async function eventsOf(id: string): Promise<string[]> {
  const listed = (await get('/v1/events?type=customer.subscription.*&limit=100')).body as {
    data: { type: string; data: { object: { id: string; status?: string } } }[];
  };
  return listed.data
    .filter((e) => e.data.object.id === id)
    .reverse()
    .map((e) => `${e.type}:${e.data.object.status}`);
}

async function advance(clock: string, to: number): Promise<void> {
  expect((await post(`/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: to })).status).toBe(200);
  await waitFor(async () => ((await get(`/v1/test_helpers/test_clocks/${clock}`)).body as { status: string }).status === 'ready' || null, {
    timeoutMs: 60_000,
    intervalMs: 100,
    description: `clock ready at ${to}`,
  });
}

function expectProviderError(res: { status: number; body: any }, messagePart: RegExp) {
  expect(res.status).toBe(400);
  expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'provider_error', param: null });
  expect(res.body.error.message).toMatch(messagePart);
}

describe('resume gives back the state that was paused', () => {
  it('trialing, paused and resumed before trial_end: trialing again with the same trial_end, nothing charged; paused and resumed events', async () => {
    const id = await subscribe(stack.catalog.trial, APPROVES);
    const before = await inStatus(id, 'trialing');
    expect((await post(`/v1/subscriptions/${id}/pause`)).body).toMatchObject({ status: 'paused' });
    const resumed = await post(`/v1/subscriptions/${id}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ status: 'trialing', trial_end: before.trial_end, next_billing_at: before.trial_end, cycles_completed: 0 });
    expect(await eventsOf(id)).toEqual([
      'customer.subscription.created:trialing',
      'customer.subscription.paused:paused',
      'customer.subscription.resumed:trialing',
    ]);
    expect(await ordersCollection(stack.mongo.db).countDocuments({ subscription: id })).toBe(0);
  });

  it('active, paused and resumed: active again, same period and next charge', async () => {
    const id = await subscribe(stack.catalog.monthly, APPROVES);
    const before = await inStatus(id, 'active', (s) => s.cycles_completed === 1);
    await post(`/v1/subscriptions/${id}/pause`);
    expect((await post(`/v1/subscriptions/${id}/resume`)).body).toMatchObject({
      status: 'active',
      current_period_start: before.current_period_start,
      next_billing_at: before.next_billing_at,
    });
  });

  it('past_due, paused and resumed before its retry: past_due again with its dunning as it stood', async () => {
    const id = await subscribe(stack.catalog.monthly, DECLINES_LATER);
    const before = await inStatus(id, 'past_due');
    expect(before.past_due_details).toMatchObject({ attempts: 1 });
    expect((await post(`/v1/subscriptions/${id}/pause`)).body).toMatchObject({ status: 'paused', past_due_details: null });
    const resumed = await post(`/v1/subscriptions/${id}/resume`);
    expect(resumed.body).toMatchObject({ status: 'past_due', past_due_details: before.past_due_details, next_billing_at: before.next_billing_at });
    expect((await eventsOf(id)).slice(-2)).toEqual(['customer.subscription.paused:paused', 'customer.subscription.resumed:past_due']);
  });

  it('on a test clock: a trial ended while paused is charged at resume; a retry the pause overran is taken at resume, later ones keep their spacing; an expired one cannot be paused', async () => {
    const t0 = Math.floor(Date.now() / 1000) - 20 * DAY;
    const clock = ((await post('/v1/test_helpers/test_clocks', { frozen_time: t0 })).body as { id: string }).id;
    const trial = await subscribe(stack.catalog.trial, APPROVES, clock);
    const dunned = await subscribe(stack.catalog.monthly, DECLINES_LATER, clock);
    const expiring = await subscribe(stack.catalog.monthly, DECLINES_LATER, clock);
    await inStatus(trial, 'trialing');
    await inStatus(dunned, 'past_due');
    await inStatus(expiring, 'past_due');
    await post(`/v1/subscriptions/${trial}/pause`);
    await post(`/v1/subscriptions/${dunned}/pause`);

    // Ten days: past the trial's end (7 days) and every retry (1, 3 and 5 days after the first decline).
    await advance(clock, t0 + 10 * DAY);
    expect(await subscription(trial)).toMatchObject({ status: 'paused', cycles_completed: 0 });
    expect(await subscription(dunned)).toMatchObject({ status: 'paused' });
    expect(await subscription(expiring)).toMatchObject({ status: 'expired' });

    // The trial comes back trialing, its charge due now: paid at once, a period from the resume.
    expect((await post(`/v1/subscriptions/${trial}/resume`)).body).toMatchObject({ status: 'trialing', next_billing_at: t0 + 10 * DAY });
    await inStatus(trial, 'active', (s) => s.cycles_completed === 1 && s.current_period_start === t0 + 10 * DAY);

    // The dunning comes back: the overrun retry (due at day 1) runs now and declines; the next keeps its 2 days' spacing.
    expect((await post(`/v1/subscriptions/${dunned}/resume`)).body).toMatchObject({
      status: 'past_due',
      past_due_details: { attempts: 1, since: t0 + 9 * DAY, next_retry_at: t0 + 10 * DAY },
    });
    const retried = await inStatus(dunned, 'past_due', (s) => s.past_due_details?.attempts === 2);
    expect(retried.past_due_details).toEqual({ attempts: 2, since: t0 + 9 * DAY, next_retry_at: t0 + 12 * DAY, failure_code: 'card_declined' });

    // Expired (dunning ran out) and canceled: nothing to pause; 400 provider_error, nothing changes, no event.
    const eventsBefore = await eventsOf(expiring);
    expectProviderError(await post(`/v1/subscriptions/${expiring}/pause`), /expired subscription cannot be paused/);
    expect(await subscription(expiring)).toMatchObject({ status: 'expired' });
    expect(await eventsOf(expiring)).toEqual(eventsBefore);
  }, 120_000);

  it('a canceled subscription cannot be paused: 400 provider_error, still canceled, no event; resume is refused too', async () => {
    const id = await subscribe(stack.catalog.monthly, APPROVES);
    await inStatus(id, 'active', (s) => s.cycles_completed === 1);
    expect((await call(stack.api, stack.store.key, 'DELETE', `/v1/subscriptions/${id}`)).body).toMatchObject({ status: 'canceled' });
    const eventsBefore = await eventsOf(id);
    expectProviderError(await post(`/v1/subscriptions/${id}/pause`), /canceled subscription cannot be paused/);
    expectProviderError(await post(`/v1/subscriptions/${id}/resume`), /Only a paused subscription can be resumed/);
    expect(await subscription(id)).toMatchObject({ status: 'canceled' });
    expect(await eventsOf(id)).toEqual(eventsBefore);
  });
});
