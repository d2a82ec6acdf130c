// What this tests: a test clock's money goes only through the test connection, even where the store's
// connection is a real one. Through real HTTP, FerretDB, Temporal and a worker, with a real-looking
// connection (livemode true, its own ledger in another database) beside the test one: a clock customer's
// checkout purchase, the renewal the clock reaches and a one-off charge land in the test connection's
// ledger as orders with livemode false, and `npm run admin -- stores quota` counts none of them, while a
// normal buyer's purchase goes through the real-looking connection, livemode true, and counts.
import type { Worker } from '@temporalio/worker';
import type { Db } from 'mongodb';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { runAdmin } from '../../../admin/cli';
import { createTestConnection, TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../../adapters/provider/types';
import { merchantChargeKey } from '../../../domain/charges';
import { ordersCollection } from '../../../store/orders';
import { findSubscription } from '../../../store/subscriptions';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { buyerForm, seedCheckoutCatalog, type CheckoutCatalog } from '../../support/checkout-fixtures';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { createTestWorker } from '../../support/worker';

let mongo: TestMongo;
let temporal: TestTemporal;
let realLedgerDb: Db;
let worker: Worker;
let running: Promise<void>;
let api: TestApi;
let store: TestStore;
let catalog: CheckoutCatalog;
const taskQueue = uniqueTaskQueue('test-clock-connections');

/** What a live provider key would be: says livemode true, keeps its ledger apart from the test connection's. */
function realLookingConnection(db: Db): PaymentProvider {
  return Object.create(createTestConnection({ db }), { livemode: { value: true } }) as PaymentProvider;
}

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  realLedgerDb = mongo.client.db(`${mongo.db.databaseName}_real`);
  const connections = { provider: realLookingConnection(realLedgerDb), testProvider: createTestConnection({ db: mongo.db }) };
  worker = await createTestWorker(mongo, temporal, taskQueue, connections);
  running = worker.run();
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue, ...connections });
  store = await createTestStore(mongo.db);
  catalog = await seedCheckoutCatalog(mongo.db, store.store._id);
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await api?.close();
  await realLedgerDb?.dropDatabase().catch(() => undefined);
  await temporal?.close();
  await mongo?.close();
});

const get = (path: string) => call(api, store.key, 'GET', path);
const post = (path: string, json: unknown, headers: Record<string, string> = {}) => call(api, store.key, 'POST', path, { json, headers });

/** The keys a connection's ledger holds for the store, sorted. */
async function ledgerKeys(db: Db): Promise<string[]> {
  const docs = await db.collection(TEST_CHARGES_COLLECTION).find({ store_id: store.store._id }).toArray();
  return docs.map((doc) => doc.key as string).sort();
}

const CARD: Record<string, string> = { method: 'card', card_number: '4242424242424242' };

/** Pays a session on the hosted page (by default with a card that is approved and saved). */
async function payOnHostedPage(sessionId: string, payment: Record<string, string>): Promise<void> {
  const res = await fetch(`${api.url}/c/${sessionId}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...buyerForm(), ...payment }).toString(),
  });
  expect(res.status, await res.text()).toBe(303);
}

/** Opens a session for `body`, pays it and waits until it is complete (with its subscription when recurring). */
async function buy(
  body: Record<string, unknown>,
  recurring: boolean,
  payment = CARD,
): Promise<{ id: string; order: string; subscription: string | null }> {
  const session = await post('/v1/checkout/sessions', body);
  expect(session.status).toBe(201);
  await payOnHostedPage(session.body.id, payment);
  return waitFor(
    async () => {
      const s = (await get(`/v1/checkout/sessions/${session.body.id}`)).body;
      return s.status === 'complete' && s.order && (!recurring || s.subscription) ? s : null;
    },
    { timeoutMs: 60_000, description: `session ${session.body.id} complete` },
  );
}

/** Advances the clock and waits until it is ready again. */
async function advance(clock: string, to: number): Promise<void> {
  expect((await post(`/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: to })).status).toBe(200);
  await waitFor(async () => (await get(`/v1/test_helpers/test_clocks/${clock}`)).body.status === 'ready' || null, {
    timeoutMs: 60_000,
    description: `clock ready at ${to}`,
  });
}

/** The plan quota summed over every month the store's orders were paid in (the clock's run a month ahead). */
async function quotaOverAllMonths(): Promise<{ orders: number; by_type: Record<string, number> }> {
  const paid = await ordersCollection(mongo.db)
    .find({ store_id: store.store._id, paid_at: { $ne: null } })
    .toArray();
  const months = [...new Set(paid.map((order) => new Date(order.paid_at! * 1000).toISOString().slice(0, 7)))];
  const sum = { orders: 0, by_type: { checkout: 0, api: 0, renewal: 0 } as Record<string, number> };
  for (const month of months) {
    const { code, output } = await runAdmin(['stores', 'quota', store.store._id, '--month', month, '--json'], {
      MONGODB_URI: inject('mongoUri'),
      MONGODB_DB: mongo.db.databaseName,
    });
    expect(code, output).toBe(0);
    const quota = JSON.parse(output) as { orders: number; by_type: Record<string, number> };
    sum.orders += quota.orders;
    for (const [type, n] of Object.entries(quota.by_type)) sum.by_type[type] += n;
  }
  return sum;
}

test("a clock customer's purchase, renewal and one-off charge go only to the test connection, livemode false, outside the plan quota", async () => {
  const clock = (await post('/v1/test_helpers/test_clocks', { frozen_time: Math.floor(Date.now() / 1000) })).body.id as string;
  const customer = await post('/v1/customers', {
    email: `clock-money-${Date.now()}@example.com`,
    name: 'Ana Clock',
    phone: '+5511999990000',
    document: { type: 'cpf', number: '529.982.247-25' },
    test_clock: clock,
  });
  expect(customer.status).toBe(201);

  const purchase = await buy({ offer: catalog.monthly._id, customer: customer.body.id }, true);
  const sub = (await get(`/v1/subscriptions/${purchase.subscription}`)).body;
  expect(sub).toMatchObject({ status: 'active' });
  expect((await findSubscription(mongo.db, store.store._id, sub.id))?.test_clock).toBe(clock);
  // Advanced at once after the session's hand-off: the clock waits for the subscription's workflow to attach.
  await advance(clock, sub.current_period_end + 3600);
  const renewal = await waitFor(
    async () => {
      const orders = (await get(`/v1/orders?subscription=${sub.id}`)).body.data as { order_type: string; status: string; livemode: boolean }[];
      return orders.find((order) => order.order_type === 'renewal' && order.status === 'paid') ?? null;
    },
    { description: 'the renewal the clock reached, paid' },
  );
  const idempotencyKey = `clock-charge-${sub.id}`;
  const charge = await post(`/v1/subscriptions/${sub.id}/charges`, { amount: 1500 }, { 'idempotency-key': idempotencyKey });
  expect(charge.body).toMatchObject({ status: 'succeeded' });

  const normal = await buy({ offer: catalog.oneOff._id }, false);

  // Each connection's ledger holds only its own side's money.
  const testKeys = await ledgerKeys(mongo.db);
  expect(testKeys).toHaveLength(3);
  expect(testKeys).toEqual(
    expect.arrayContaining([
      `checkout/${purchase.id}/1`,
      expect.stringMatching(new RegExp(`^renewal/${sub.id}/`)),
      merchantChargeKey(idempotencyKey),
    ]),
  );
  expect(await ledgerKeys(realLedgerDb)).toEqual([`checkout/${normal.id}/1`]);
  const livemodeOf = async (order: string) => (await get(`/v1/orders/${order}`)).body.livemode;
  expect([await livemodeOf(purchase.order), renewal.livemode, await livemodeOf(charge.body.order)]).toEqual([false, false, false]);
  expect(await livemodeOf(normal.order)).toBe(true);

  expect(await quotaOverAllMonths()).toEqual({ orders: 1, by_type: { checkout: 1, api: 0, renewal: 0 } });
}, 180_000);

/** The hosted page's test button "paid" for a pending payment. */
const pressSettlePaid = (sessionId: string) =>
  fetch(`${api.url}/c/${sessionId}/test/settle`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'outcome=paid',
  });
const pageOf = async (sessionId: string) => (await fetch(`${api.url}/c/${sessionId}`)).text();

test("the hosted page's test buttons settle a clock customer's PIX at the test connection; a real connection's PIX shows none", async () => {
  const clock = (await post('/v1/test_helpers/test_clocks', { frozen_time: Math.floor(Date.now() / 1000) })).body.id as string;
  const customer = await post('/v1/customers', {
    email: `clock-pix-${Date.now()}@example.com`,
    name: 'Ana Clock',
    phone: '+5511999990000',
    document: { type: 'cpf', number: '529.982.247-25' },
    test_clock: clock,
  });
  const onClock = await buy({ offer: catalog.oneOff._id, customer: customer.body.id }, false, { method: 'pix' });
  const real = await buy({ offer: catalog.oneOff._id }, false, { method: 'pix' });
  expect(await pageOf(onClock.id)).toContain('data-testid="settle-paid"');
  expect(await pageOf(real.id)).not.toContain('data-testid="settle-paid"');

  expect((await pressSettlePaid(onClock.id)).status).toBe(303);
  await waitFor(async () => (await get(`/v1/checkout/sessions/${onClock.id}`)).body.payment_status === 'paid' || null, {
    description: "the clock customer's PIX paid",
  });
  expect((await get(`/v1/orders/${onClock.order}`)).body).toMatchObject({ status: 'paid', livemode: false });
  // The real connection's payment is not the page's to settle: pressing the button changes nothing there.
  expect((await pressSettlePaid(real.id)).status).toBe(303);
  const realLedger = await realLedgerDb.collection(TEST_CHARGES_COLLECTION).findOne({ store_id: store.store._id, key: `checkout/${real.id}/1` });
  expect(realLedger).toMatchObject({ kind: 'pix', state: 'pix_pending' });
  expect((await get(`/v1/checkout/sessions/${real.id}`)).body).toMatchObject({ payment_status: 'pending' });
  expect((await get(`/v1/orders/${real.order}`)).body).toMatchObject({ status: 'pending', livemode: true });
}, 120_000);
