// What this tests: objects of a customer on a test clock are made and judged on the clock's time, over
// real HTTP with FerretDB, Temporal and a billing worker. The clock (its document and its workflow) is
// made directly, 60 days behind real time: a checkout session's created/expires_at and expires_at rule
// follow it and the session stays open past its real-time deadline; meter events default to the clock's
// time and are windowed on it; a paid recurring checkout's subscription starts at the clock's time and
// its workflows get the clock in their input. A customer without a clock is unchanged.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { idTimeMs, newId } from '../../../domain/ids';
import { checkoutSessionsCollection, findCheckoutSession } from '../../../store/checkout-sessions';
import { insertCustomer, newCustomerDoc } from '../../../store/customers';
import { findSubscription } from '../../../store/subscriptions';
import { testClocksCollection } from '../../../store/test-clocks';
import { meterEventsCollection } from '../../../store/usage';
import { subscriptionWorkflowId } from '../../../workflows/subscription/messages';
import { usageWorkflowId } from '../../../workflows/usage-periods/messages';
import { checkoutSessionWorkflowId, stateQuery } from '../../../workflows/checkout-session/messages';
import { testClockWorkflowId, type TestClockWorkflowInput } from '../../../workflows/test-clock/messages';
import {
  buyerForm,
  call,
  createSession,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';
import type { TestStore } from '../../support/api';
import { waitFor } from '../../support/env';

const DAY = 24 * 60 * 60;
const nowSeconds = () => Math.floor(Date.now() / 1000);

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;
let clockId: string;
/** The clock's time (Unix seconds): frozen 60 days before the suite started. */
let clockTime: number;
let clockCustomer: string;
let plainCustomer: string;

beforeAll(async () => {
  stack = await startCheckoutStack('test-clock-time');
  store = await createTestStore(stack.mongo.db);
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
  clockTime = nowSeconds() - 60 * DAY;
  clockId = await createClock(clockTime);
  clockCustomer = await createCustomer('clocked@example.com', clockId);
  plainCustomer = await createCustomer('plain@example.com', null);
});

afterAll(async () => {
  await stack?.close();
});

/** A ready clock at `frozenTime`, document and workflow, as the test-clock API would make it. */
async function createClock(frozenTime: number): Promise<string> {
  const id = newId('clock');
  const storeId = store.store._id;
  await testClocksCollection(stack.mongo.db).insertOne({
    _id: id,
    store_id: storeId,
    name: 'suite clock',
    frozen_time: frozenTime,
    now_ms: frozenTime * 1000,
    status: 'ready',
    created: nowSeconds(),
  });
  const input: TestClockWorkflowInput = { storeId, clockId: id, nowMs: frozenTime * 1000 };
  await stack.temporal.client.workflow.start('testClockWorkflow', { workflowId: testClockWorkflowId(id), taskQueue: stack.taskQueue, args: [input] });
  return id;
}

/** A customer, attached to `clock` the way customer creation does (the field set at creation). */
async function createCustomer(email: string, clock: string | null): Promise<string> {
  const doc = newCustomerDoc(store.store._id, { email, name: 'Ana Souza' }, {});
  await insertCustomer(stack.mongo.db, clock ? ({ ...doc, test_clock: clock } as typeof doc) : doc);
  return doc._id;
}

/** The input the workflow's current run started with. */
async function startInput(workflowId: string): Promise<Record<string, unknown>> {
  const history = await stack.temporal.client.workflow.getHandle(workflowId).fetchHistory();
  const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  return defaultPayloadConverter.fromPayload(payload!);
}

const get = (path: string) => call(stack.api, store.key, 'GET', path);
const post = (path: string, json: unknown) => call(stack.api, store.key, 'POST', path, { json });

function expectError(res: { status: number; body: any }, status: number, code: string, param: string) {
  expect({ status: res.status, code: res.body?.error?.code, param: res.body?.error?.param }).toEqual({ status, code, param });
}

describe('checkout sessions', () => {
  test("a clock customer's session: created and expires_at on the clock, open on GET, in lists and on its page past its real-time deadline", async () => {
    const created = await createSession(stack.api, store, { offer: catalog.oneOff._id, customer: clockCustomer });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const s = created.body;
    expect([s.created, s.expires_at, s.status]).toEqual([clockTime, clockTime + DAY, 'open']);
    expect(s.expires_at).toBeLessThan(nowSeconds());
    // The id follows real time: ids sort by creation whatever clock the dates follow.
    expect(idTimeMs(s.id)).toBeGreaterThan((nowSeconds() - 60) * 1000);
    expect((await findCheckoutSession(stack.mongo.db, store.store._id, s.id))?.test_clock).toBe(clockId);
    expect(await startInput(checkoutSessionWorkflowId(s.id))).toMatchObject({ sessionId: s.id, expiresAt: clockTime + DAY, testClock: clockId });

    const read = await get(`/v1/checkout/sessions/${s.id}`);
    expect([read.body.status, read.body.url]).toEqual(['open', `${stack.api.url}/c/${s.id}`]);
    const open = await get(`/v1/checkout/sessions?customer=${clockCustomer}&status=open`);
    expect(open.body.data.map((d: { id: string }) => d.id)).toContain(s.id);
    const expired = await get(`/v1/checkout/sessions?customer=${clockCustomer}&status=expired`);
    expect(expired.body.data.map((d: { id: string }) => d.id)).not.toContain(s.id);
    const page = await fetch(`${stack.api.url}/c/${s.id}`, { redirect: 'manual' });
    expect(page.status).toBe(200);
  });

  test('a session without a clock is still expired on reads once past its deadline', async () => {
    const s = (await createSession(stack.api, store, { offer: catalog.oneOff._id, customer: plainCustomer })).body;
    expect(s.created).toBeGreaterThanOrEqual(nowSeconds() - 5);
    expect(await startInput(checkoutSessionWorkflowId(s.id))).not.toHaveProperty('testClock');
    await checkoutSessionsCollection(stack.mongo.db).updateOne({ _id: s.id }, { $set: { expires_at: nowSeconds() - 1 } });
    expect((await get(`/v1/checkout/sessions/${s.id}`)).body.status).toBe('expired');
    const expired = await get(`/v1/checkout/sessions?customer=${plainCustomer}&status=expired`);
    expect(expired.body.data.map((d: { id: string }) => d.id)).toContain(s.id);
  });

  test("expires_at is 30 minutes to 24 hours from the clock's now for its customer, from real now for the others", async () => {
    const realHour = nowSeconds() + 3600;
    expectError(
      await createSession(stack.api, store, { offer: catalog.oneOff._id, customer: clockCustomer, expires_at: realHour }),
      400,
      'parameter_invalid',
      'expires_at',
    );
    const onClock = await createSession(stack.api, store, { offer: catalog.oneOff._id, customer: clockCustomer, expires_at: clockTime + 2 * 3600 });
    expect([onClock.status, onClock.body.expires_at]).toEqual([201, clockTime + 2 * 3600]);

    expectError(
      await createSession(stack.api, store, { offer: catalog.oneOff._id, customer: plainCustomer, expires_at: clockTime + 2 * 3600 }),
      400,
      'parameter_invalid',
      'expires_at',
    );
    expect((await createSession(stack.api, store, { offer: catalog.oneOff._id, customer: plainCustomer, expires_at: realHour })).status).toBe(201);
  });
});

describe('meter events', () => {
  let eventName: string;

  beforeAll(async () => {
    const meter = await post('/v1/billing/meters', { display_name: 'Clocked images', event_name: 'clock.images' });
    expect(meter.status, JSON.stringify(meter.body)).toBe(201);
    eventName = meter.body.event_name;
  });

  const event = (customer: string, extra: Record<string, unknown> = {}) => ({
    event_name: eventName,
    payload: { customer_id: customer, value: 1 },
    ...extra,
  });

  test("a clock customer's event: timestamp defaults to the clock's time and is windowed on it (real now is the future)", async () => {
    const stamped = await post('/v1/billing/meter_events', event(clockCustomer));
    expect(stamped.status, JSON.stringify(stamped.body)).toBe(201);
    expect(stamped.body.timestamp).toBe(clockTime);
    expectError(
      await post('/v1/billing/meter_events', event(clockCustomer, { timestamp: nowSeconds() })),
      400,
      'timestamp_out_of_range',
      'timestamp',
    );
    const past = await post('/v1/billing/meter_events', event(clockCustomer, { timestamp: clockTime - 30 * DAY }));
    expect([past.status, past.body.timestamp]).toEqual([201, clockTime - 30 * DAY]);
    expectError(
      await post('/v1/billing/meter_events', event(clockCustomer, { timestamp: clockTime - 36 * DAY })),
      400,
      'timestamp_out_of_range',
      'timestamp',
    );
  });

  test("a batch mixing customers judges each on its own customer's now; a customer without a clock is unchanged", async () => {
    const before = nowSeconds();
    const batch = await post('/v1/billing/meter_events/batch', {
      events: [
        event(clockCustomer),
        event(plainCustomer),
        event(plainCustomer, { timestamp: clockTime }),
        event(clockCustomer, { timestamp: before }),
      ],
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body.results.map((r: { status: string; error?: { code: string } }) => r.error?.code ?? r.status)).toEqual([
      'accepted',
      'accepted',
      'timestamp_out_of_range',
      'timestamp_out_of_range',
    ]);
    const [clocked, plain] = await meterEventsCollection(stack.mongo.db)
      .find({ _id: { $in: [batch.body.results[0].id, batch.body.results[1].id] } })
      .toArray()
      .then((docs) => [docs.find((d) => d.customer === clockCustomer)!, docs.find((d) => d.customer === plainCustomer)!]);
    expect(clocked.timestamp).toBe(clockTime);
    expect(plain.timestamp).toBeGreaterThanOrEqual(before);
    // The event's own creation stays on real time.
    expect(clocked.created).toBeGreaterThanOrEqual(before);
  });
});

describe('subscriptions', () => {
  /** The monthly offer bought on the hosted page with the test card: the session and its subscription's id. */
  async function paidSubscription(customer: string): Promise<{ session: { id: string; created: number }; subId: string }> {
    const session = (await createSession(stack.api, store, { offer: catalog.monthly._id, customer })).body;
    // The session workflow registers its handlers once it has joined its clock (a pay before then is refused).
    const workflow = stack.temporal.client.workflow.getHandle(checkoutSessionWorkflowId(session.id));
    await waitFor(
      () =>
        workflow.query(stateQuery).then(
          () => true,
          () => null,
        ),
      { timeoutMs: 20_000, description: 'the session workflow answering' },
    );
    const paid = await fetch(`${stack.api.url}/c/${session.id}/pay`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(buyerForm({ method: 'card', card_number: '4242424242424242' })).toString(),
    });
    expect(paid.status, await paid.text()).toBe(303);
    const subId = await waitFor(async () => (await findCheckoutSession(stack.mongo.db, store.store._id, session.id))?.subscription ?? null, {
      timeoutMs: 30_000,
      description: 'the checkout subscription',
    });
    return { session, subId };
  }

  test("a paid recurring checkout of a clock customer: the subscription starts at the clock's time, its workflows get the clock", async () => {
    const { session, subId } = await paidSubscription(clockCustomer);
    const doc = await findSubscription(stack.mongo.db, store.store._id, subId);
    expect(doc).toMatchObject({ test_clock: clockId, created: clockTime, current_period_start: clockTime });
    expect(idTimeMs(subId)).toBe(idTimeMs(session.id));
    const shown = (await get(`/v1/subscriptions/${subId}`)).body;
    expect(shown).toMatchObject({ id: subId, current_period_start: clockTime, created: clockTime });
    expect(await startInput(subscriptionWorkflowId(subId))).toEqual({ storeId: store.store._id, subscriptionId: subId, testClock: clockId });

    // A usage item starts the usage workflow, with the subscription's clock in its input.
    const meter = await post('/v1/billing/meters', { display_name: 'Clocked calls', event_name: 'clock.calls' });
    expect((await post(`/v1/subscriptions/${subId}/usage_items`, { meter: meter.body.id, unit_amount: 10 })).status).toBeLessThan(300);
    const usageInput = await waitFor(() => startInput(usageWorkflowId(subId)).catch(() => null), {
      timeoutMs: 20_000,
      description: 'usage workflow started',
    });
    expect(usageInput).toEqual({ storeId: store.store._id, subscriptionId: subId, testClock: clockId });
  });

  test('a customer without a clock: subscription on real time, test_clock null, workflow input without the key', async () => {
    const { session, subId } = await paidSubscription(plainCustomer);
    const doc = await findSubscription(stack.mongo.db, store.store._id, subId);
    expect(doc?.test_clock).toBeNull();
    expect(doc?.current_period_start).toBeGreaterThanOrEqual(session.created);
    expect(await startInput(subscriptionWorkflowId(subId))).toEqual({ storeId: store.store._id, subscriptionId: subId });
  });
});
