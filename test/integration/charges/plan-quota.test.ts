// What this tests: the plan quota an operator reads with `npm run admin -- stores quota`. "Each approved
// charge counts as one order in the store's plan quota"; "Usage events do not count in the plan quota".
// Through real HTTP, FerretDB, Temporal and a worker: a card checkout, a PIX checkout (counted once it
// is paid), a subscription's first charge and a one-off charge count; a declined charge, a retried
// one-off charge (same Idempotency-Key) and usage events do not add anything.
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { runAdmin } from '../../../admin/cli';
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
import { seedCatalog, seedSubscription } from '../../support/subscriptions';
import { subscriptionsCollection } from '../../../store/subscriptions';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;

beforeAll(async () => {
  stack = await startCheckoutStack('plan-quota');
  store = await createTestStore(stack.mongo.db);
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
});

afterAll(async () => {
  await stack?.close();
});

async function quota(): Promise<{ orders: number; by_type: Record<string, number>; month: string }> {
  const { code, output } = await runAdmin(['stores', 'quota', store.store._id, '--json'], {
    MONGODB_URI: inject('mongoUri'),
    MONGODB_DB: stack.mongo.db.databaseName,
  });
  expect(code, output).toBe(0);
  return JSON.parse(output);
}

async function pay(sessionId: string, extra: Record<string, string>) {
  const res = await fetch(`${stack.api.url}/c/${sessionId}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...buyerForm(), ...extra }).toString(),
  });
  expect(res.status).toBe(303);
}

const quotaReaches = (orders: number) =>
  waitFor(async () => ((await quota()).orders === orders ? true : null), { description: `the quota to reach ${orders}` });

test('approved charges count once each, by type; a pending PIX counts once paid; declines, retries and usage events add nothing', async () => {
  const start = await quota();
  expect(start).toMatchObject({ orders: 0, month: new Date().toISOString().slice(0, 7) });

  const card = (await createSession(stack.api, store, { offer: catalog.oneOff._id })).body;
  await pay(card.id, { method: 'card', card_number: '4242424242424242' });
  await quotaReaches(1);

  const pix = (await createSession(stack.api, store, { offer: catalog.oneOff._id })).body;
  await pay(pix.id, { method: 'pix' });
  expect((await quota()).orders).toBe(1);
  const settled = await fetch(`${stack.api.url}/c/${pix.id}/test/settle`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'outcome=paid',
  });
  expect(settled.status).toBeLessThan(400);
  await quotaReaches(2);

  // A subscription whose first charge is approved, then a one-off charge sent twice with one key.
  const subscriptionCatalog = await seedCatalog(stack.mongo.db, store.store._id);
  const sub = await seedSubscription(
    { db: stack.mongo.db, temporal: stack.temporal.client, taskQueue: stack.taskQueue },
    { store: store.store, offer: subscriptionCatalog.monthly, product: subscriptionCatalog.product },
  );
  await waitFor(async () => ((await subscriptionsCollection(stack.mongo.db).findOne({ _id: sub._id }))?.status === 'active' ? true : null), {
    description: 'the first charge',
  });
  for (let i = 0; i < 2; i++) {
    const charge = await call(stack.api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
      json: { amount: 1500 },
      headers: { 'idempotency-key': `quota-${sub._id}` },
    });
    expect(charge.status).toBeLessThan(300);
  }
  await quotaReaches(4);

  // A declined one-off charge and usage events: nothing more.
  const declined = await seedSubscription(
    { db: stack.mongo.db, taskQueue: stack.taskQueue },
    { store: store.store, offer: subscriptionCatalog.trial, product: subscriptionCatalog.product, card: '4000000000000002' },
  );
  const refused = await call(stack.api, store.key, 'POST', `/v1/subscriptions/${declined._id}/charges`, {
    json: { amount: 1500 },
    headers: { 'idempotency-key': `declined-${declined._id}` },
  });
  expect(refused.status).toBeGreaterThanOrEqual(400);
  const meter = await call(stack.api, store.key, 'POST', '/v1/billing/meters', {
    json: { display_name: 'Renders', event_name: `renders.${Date.now()}` },
  });
  const events = await call(stack.api, store.key, 'POST', '/v1/billing/meter_events/batch', {
    json: { events: Array.from({ length: 5 }, () => ({ event_name: meter.body.event_name, payload: { customer_id: sub.customer, value: 1 } })) },
  });
  expect(events.body.accepted).toBe(5);

  const end = await quota();
  expect(end.orders).toBe(4);
  expect(end.by_type).toEqual({ checkout: 2, renewal: 1, api: 1 });
  // Another month has none of them.
  const { output } = await runAdmin(['stores', 'quota', store.store._id, '--month', '2020-01'], {
    MONGODB_URI: inject('mongoUri'),
    MONGODB_DB: stack.mongo.db.databaseName,
  });
  expect(output).toBe(`store ${store.store._id}  2020-01: 0 orders (checkout 0, renewal 0, api 0)`);
}, 120_000);
