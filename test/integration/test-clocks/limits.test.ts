// What this tests: the bounds on test clocks over real HTTP (API, worker, FerretDB, Temporal dev server):
// a store holds at most 20 clocks and a clock at most 3 customers and 10 checkout sessions, each refused
// beyond with 400 test_clock_limit, and racing creates never pass a cap; an advance past staggered
// renewals costs signals in proportion to its objects and wake-ups, not objects times stops; open
// checkout sessions cost an advance no signal at all and still expire when it passes their deadline.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { temporal as proto } from '@temporalio/proto';
import { createTestConnection } from '../../../adapters/provider/test-connection';
import { createSubscription } from '../../../services/subscriptions/subscriptions';
import { TEST_CLOCK_LIMITS } from '../../../services/test-clocks';
import { collections } from '../../../store/collections';
import { findCustomer } from '../../../store/customers';
import { ordersCollection } from '../../../store/orders';
import { testClockStateQuery, testClockTaskQueue, testClockWorkflowId } from '../../../workflows/test-clock/messages';
import { subscriptionWorkflowId } from '../../../workflows/subscription/messages';
import { checkoutSessionWorkflowId, stateQuery } from '../../../workflows/checkout-session/messages';
import { waitFor } from '../../support/env';
import { call, createSession, createTestStore, seedCheckoutCatalog, startCheckoutStack, type CheckoutStack } from '../../support/checkout-fixtures';
import type { TestStore } from '../../support/api';

let stack: CheckoutStack;
const T0 = 1_767_225_600;
const customerFields = { name: 'Ana Clock', phone: '+5511999990000', document: { type: 'cpf', number: '529.982.247-25' } };

beforeAll(async () => {
  stack = await startCheckoutStack('test-clock-limits', { ipRateLimit: 100_000 });
});

afterAll(async () => {
  await stack?.close();
});

const post = (store: TestStore, path: string, json: unknown) => call(stack.api, store.key, 'POST', path, { json });
const newClock = async (store: TestStore) => post(store, '/v1/test_helpers/test_clocks', { frozen_time: T0 });
const clockCustomer = (store: TestStore, clock: string) =>
  post(store, '/v1/customers', { email: `c-${Math.random().toString(36).slice(2, 10)}@example.com`, ...customerFields, test_clock: clock });

function expectLimit(res: { status: number; body: any }, param: string | null) {
  expect({ status: res.status, type: res.body?.error?.type, code: res.body?.error?.code, param: res.body?.error?.param }).toEqual({
    status: 400,
    type: 'invalid_request_error',
    code: 'test_clock_limit',
    param,
  });
  expect(res.body.error.message).toMatch(/at most|the most/);
}

describe('test clock caps', () => {
  test('a store makes at most 20 clocks, 25 racing creates included; past the cap 400 test_clock_limit, and a deleted clock frees its place', async () => {
    const store = await createTestStore(stack.mongo.db);
    const racing = await Promise.all(Array.from({ length: TEST_CLOCK_LIMITS.clocksPerStore + 5 }, () => newClock(store)));
    const made = racing.filter((r) => r.status === 201);
    expect(made.length).toBeLessThanOrEqual(TEST_CLOCK_LIMITS.clocksPerStore);
    for (const refused of racing.filter((r) => r.status !== 201)) expectLimit(refused, null);
    while ((await call(stack.api, store.key, 'GET', '/v1/test_helpers/test_clocks?limit=100')).body.data.length < TEST_CLOCK_LIMITS.clocksPerStore) {
      expect((await newClock(store)).status).toBe(201);
    }
    expectLimit(await newClock(store), null);
    expect((await call(stack.api, store.key, 'DELETE', `/v1/test_helpers/test_clocks/${made[0].body.id}`)).status).toBe(200);
    expect((await newClock(store)).status).toBe(201);
    expectLimit(await newClock(store), null);
  });

  test("a clock holds at most 3 customers, 6 racing creates included; the 4th is refused naming test_clock; another store's clocks are not touched", async () => {
    const store = await createTestStore(stack.mongo.db);
    const clock = (await newClock(store)).body.id;
    const racing = await Promise.all(Array.from({ length: 6 }, () => clockCustomer(store, clock)));
    expect(racing.filter((r) => r.status === 201)).toHaveLength(TEST_CLOCK_LIMITS.customers);
    for (const refused of racing.filter((r) => r.status !== 201)) expectLimit(refused, 'test_clock');
    expectLimit(await clockCustomer(store, clock), 'test_clock');
    const other = (await newClock(store)).body.id;
    expect((await clockCustomer(store, other)).status).toBe(201);
  });

  test('a clock holds at most 10 checkout sessions; the 11th is refused naming customer, and a session without a clock is not', async () => {
    const store = await createTestStore(stack.mongo.db);
    const catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
    const clock = (await newClock(store)).body.id;
    const customer = (await clockCustomer(store, clock)).body.id;
    for (let i = 0; i < TEST_CLOCK_LIMITS.checkout_sessions; i++) {
      expect((await createSession(stack.api, store, { offer: catalog.monthly._id, customer })).status).toBe(201);
    }
    expectLimit(await createSession(stack.api, store, { offer: catalog.monthly._id, customer }), 'customer');
    expect((await createSession(stack.api, store, { offer: catalog.monthly._id, customer_email: 'plain@example.com' })).status).toBe(201);
  });
});

describe('an advance', () => {
  const DAY = 24 * 60 * 60;
  const EventType = proto.api.enums.v1.EventType;

  /** A monthly subscription of `customerId` whose first period was paid at `nowMs` (clock time), card 4242 saved. */
  async function subscribeAt(store: TestStore, offerId: string, customerId: string, nowMs: number): Promise<string> {
    const db = stack.mongo.db;
    const provider = createTestConnection({ db });
    const customer = (await findCustomer(db, store.store._id, customerId))!;
    const offer = (await collections(db).offers.findOne({ _id: offerId }))!;
    const product = (await collections(db).products.findOne({ _id: offer.product_id }))!;
    const saved = await provider.saveCard({ storeId: store.store._id, customerId, card: { number: '4242424242424242' } });
    if (!saved.ok) throw new Error(saved.message);
    const deps = { db, provider, temporal: stack.temporal.client, taskQueue: stack.taskQueue };
    const doc = await createSubscription(deps, {
      store: store.store,
      customer,
      offer,
      product,
      paymentMethod: saved.card,
      firstPeriodPaid: true,
      now: nowMs,
    });
    return doc._id;
  }

  /** Signals the clock sent (ticks) and received (waiting reports) from its last advance signal on. */
  async function signalsOfLastAdvance(clockId: string): Promise<{ sent: number; received: number }> {
    const history = await stack.temporal.client.workflow.getHandle(testClockWorkflowId(clockId)).fetchHistory();
    const events = history.events ?? [];
    const isAdvance = (e: (typeof events)[number]) =>
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && e.workflowExecutionSignaledEventAttributes?.signalName === 'advance';
    const from = events.map(isAdvance).lastIndexOf(true);
    const after = events.slice(from + 1);
    return {
      sent: after.filter((e) => e.eventType === EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED).length,
      received: after.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED).length,
    };
  }

  test("past six staggered renewals it sends and receives signals in proportion to its objects, not objects times stops, on the clocks' own task queue", async () => {
    const store = await createTestStore(stack.mongo.db);
    const catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
    const t0 = Math.floor(Date.now() / 1000);
    const clock = (await post(store, '/v1/test_helpers/test_clocks', { frozen_time: t0 })).body.id;
    const customers = await Promise.all([0, 1, 2].map(async () => (await clockCustomer(store, clock)).body.id as string));
    const subs = 6;
    // Bought a day apart before the clock's time: each renews at its own stop within the month.
    const subIds: string[] = [];
    for (let i = 0; i < subs; i++) subIds.push(await subscribeAt(store, catalog.monthly._id, customers[i % 3], (t0 - (i + 1) * DAY) * 1000));
    const firstSub = subIds[0];
    const clockHandle = stack.temporal.client.workflow.getHandle(testClockWorkflowId(clock));
    await waitFor(async () => {
      const state = await clockHandle.query(testClockStateQuery);
      return state.waiters.length >= subs && state.waiters.every((w) => w.seq === state.seq && w.untilMs !== null) ? state : null;
    });
    const to = t0 + 30 * DAY;
    expect((await post(store, `/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: to })).status).toBe(200);
    await waitFor(
      async () => ((await call(stack.api, store.key, 'GET', `/v1/test_helpers/test_clocks/${clock}`)).body.status === 'ready' ? true : null),
      {
        timeoutMs: 90_000,
        intervalMs: 200,
      },
    );
    const renewed = await ordersCollection(stack.mongo.db).countDocuments({ store_id: store.store._id, order_type: 'renewal' });
    expect(renewed).toBe(subs);
    // The clock and its objects' workflows ran on the test clocks' own task queue, beside (not in) the billing queue.
    const queueOf = async (workflowId: string) => (await stack.temporal.client.workflow.getHandle(workflowId).describe()).taskQueue;
    expect(await queueOf(testClockWorkflowId(clock))).toBe(testClockTaskQueue(stack.taskQueue));
    expect(await queueOf(subscriptionWorkflowId(firstSub))).toBe(testClockTaskQueue(stack.taskQueue));
    const plainCustomer = (await post(store, '/v1/customers', { email: `plain-${t0}@example.com`, ...customerFields })).body.id as string;
    const plainSub = await subscribeAt(store, catalog.monthly._id, plainCustomer, Date.now());
    expect(await queueOf(subscriptionWorkflowId(plainSub))).toBe(stack.taskQueue);
    const { sent, received } = await signalsOfLastAdvance(clock);
    // Each renewal: its tick and its report (twice if it waits twice), and one catch-up tick and report each at
    // the end; ticking everyone at each of the seven stops costs 2 x 6 x 7 = 84.
    expect(sent + received).toBeLessThanOrEqual(6 * subs);
  });
  /** Signals a workflow received (`name`), over its whole history. */
  async function signalsReceived(workflowId: string, name: string): Promise<number> {
    const history = await stack.temporal.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).filter(
      (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && e.workflowExecutionSignaledEventAttributes?.signalName === name,
    ).length;
  }

  test('a clock with the most checkout sessions it holds: advances send them no signal (no waiters), and each expires once when the clock passes its deadline', async () => {
    const store = await createTestStore(stack.mongo.db);
    const catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
    const t0 = Math.floor(Date.now() / 1000);
    const clock = (await post(store, '/v1/test_helpers/test_clocks', { frozen_time: t0 })).body.id as string;
    const customer = (await clockCustomer(store, clock)).body.id as string;
    const HOUR = 3600;
    const sessions: string[] = [];
    for (let i = 1; i <= TEST_CLOCK_LIMITS.checkout_sessions; i++) {
      const made = await createSession(stack.api, store, { offer: catalog.oneOff._id, customer, expires_at: t0 + i * HOUR });
      expect(made.status).toBe(201);
      sessions.push(made.body.id);
    }
    // Each session's workflow runs (answers its query) before the clock moves.
    for (const id of sessions)
      await waitFor(
        async () => (await stack.temporal.client.workflow.getHandle(checkoutSessionWorkflowId(id)).query(stateQuery)).status === 'open' || null,
      );
    const advanceTo = async (to: number) => {
      expect((await post(store, `/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: to })).status).toBe(200);
      await waitFor(
        async () => ((await call(stack.api, store.key, 'GET', `/v1/test_helpers/test_clocks/${clock}`)).body.status === 'ready' ? true : null),
        {
          timeoutMs: 90_000,
          intervalMs: 200,
          description: `clock ready at ${to}`,
        },
      );
      return signalsOfLastAdvance(clock);
    };
    const statuses = async () =>
      Promise.all(sessions.map(async (id) => (await call(stack.api, store.key, 'GET', `/v1/checkout/sessions/${id}`)).body.status));

    // Before any deadline: nothing to tell anyone (attached sessions cost a catch-up tick and a report each).
    expect(await advanceTo(t0 + HOUR / 2)).toEqual({ sent: 0, received: 0 });
    expect(await statuses()).toEqual(sessions.map(() => 'open'));
    // Past half the deadlines: those expire, the others stay open, still without a signal.
    expect(await advanceTo(t0 + 5 * HOUR + 60)).toEqual({ sent: 0, received: 0 });
    expect(await statuses()).toEqual(sessions.map((_, i) => (i < 5 ? 'expired' : 'open')));
    expect(await advanceTo(t0 + 12 * HOUR)).toEqual({ sent: 0, received: 0 });
    expect(await statuses()).toEqual(sessions.map(() => 'expired'));

    const state = await stack.temporal.client.workflow.getHandle(testClockWorkflowId(clock)).query(testClockStateQuery);
    expect(state.waiters.map((w) => w.workflowId).filter((id) => id.startsWith('checkout-session/'))).toEqual([]);
    for (const id of sessions) expect(await signalsReceived(checkoutSessionWorkflowId(id), 'clockTick')).toBe(0);
    const expired = await collections(stack.mongo.db).events.countDocuments({ store_id: store.store._id, type: 'checkout.session.expired' });
    expect(expired).toBe(sessions.length);
  }, 240_000);
});
