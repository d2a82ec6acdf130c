// What this tests: the hosted checkout's money safety over real HTTP with FerretDB, the Temporal dev
// server and a worker whose provider (the test connection) holds its answers on cue: an approval whose
// page process is SIGKILLed before it answers still completes the session (one order, one charge);
// Temporal unreachable for 10 s right after an approval (a TCP proxy cut in front of the frontend) shows
// "processing", never a 500, and completes the session once Temporal is back; a provider slower than the
// hold lets the merchant's expire go ahead and the late approval is refunded (no order, no event); three
// submits at once make one charge, one order and one checkout.session.completed; a provider that answers
// none of the tries leaves the page saying the payment is being confirmed (not "nothing was charged"),
// takes no second payment, and pays once under the same key when it answers.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import { createBillingWorker } from '../../../worker/main';
import { collections } from '../../../store/collections';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { createTestConnection } from '../../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../../adapters/provider/types';
import { checkoutAttemptKey, checkoutSessionWorkflowId, stateQuery } from '../../../workflows/checkout-session/messages';
import { startTestApi, type TestApi, type TestStore } from '../../support/api';
import { startApiProcess } from '../../support/app-processes';
import { buyerForm, createSession, createTestStore, seedCheckoutCatalog, type CheckoutCatalog } from '../../support/checkout-fixtures';
import { testMongo, uniqueTaskQueue, waitFor, type TestMongo } from '../../support/env';
import { gate, type Gate } from '../../support/gate';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy';

const CARD_OK = '4242 4242 4242 4242';
const HOLD_MS = 3_000;

let mongo: TestMongo;
let proxy: TcpProxy;
let workerConnection: NativeConnection;
let clientConnection: Connection;
let temporal: Client;
let worker: Worker;
let running: Promise<void>;
let api: TestApi;
let store: TestStore;
let catalog: CheckoutCatalog;
const taskQueue = uniqueTaskQueue('money-safety');

/** What the worker's provider does around a charge, by provider key. */
const onCharge = {
  /** Held before the provider records the charge (slow on the way there). */
  before: new Map<string, Gate>(),
  /** Run once the provider recorded the charge, before its answer goes back. */
  after: new Map<string, () => Promise<void>>(),
  /** Keys whose tries fail before reaching the provider (connection lost) until removed. */
  unreachable: new Set<string>(),
};

function wrappedProvider(): PaymentProvider {
  const base = createTestConnection({ db: mongo.db });
  return {
    ...base,
    async chargeCard(input) {
      if (onCharge.unreachable.has(input.idempotencyKey)) throw new Error('test provider unreachable');
      await onCharge.before.get(input.idempotencyKey)?.promise;
      const outcome = await base.chargeCard(input);
      const after = onCharge.after.get(input.idempotencyKey);
      // Once: a retried activity gets its answer at once.
      onCharge.after.delete(input.idempotencyKey);
      await after?.();
      return outcome;
    },
  };
}

beforeAll(async () => {
  mongo = await testMongo();
  // The API and the worker reach Temporal through the proxy, so a test can cut them off.
  proxy = await startTcpProxy(inject('temporalAddress'));
  workerConnection = await NativeConnection.connect({ address: proxy.address });
  clientConnection = await Connection.connect({ address: proxy.address });
  temporal = new Client({ connection: clientConnection });
  worker = await createBillingWorker({
    connection: workerConnection,
    taskQueue,
    db: mongo.db,
    temporal,
    activityDeps: { provider: wrappedProvider() },
  });
  running = worker.run();
  api = await startTestApi({
    db: mongo.db,
    temporal,
    taskQueue,
    config: { ipRateLimit: 100_000, checkoutPayWaitMs: 4_000, checkoutAttemptHoldMs: HOLD_MS },
  });
  store = await createTestStore(mongo.db);
  catalog = await seedCheckoutCatalog(mongo.db, store.store._id);
}, 120_000);

afterAll(async () => {
  proxy?.restore();
  await api?.close();
  worker?.shutdown();
  await running?.catch(() => undefined);
  await clientConnection?.close();
  await workerConnection?.close();
  await proxy?.close();
  await mongo?.close();
});

const buyer = () => buyerForm({ method: 'card', card_number: CARD_OK });

async function post(base: string, path: string, form: Record<string, string>) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, location: res.headers.get('location'), text: await res.text() };
}

async function page(path: string) {
  const res = await fetch(`${api.url}${path}`, { redirect: 'manual' });
  return { status: res.status, text: await res.text() };
}

async function newSession(): Promise<string> {
  const res = await createSession(api, store, { offer: catalog.oneOff._id });
  expect(res.status).toBe(201);
  return res.body.id;
}

const session = async (id: string) => (await findCheckoutSession(mongo.db, store.store._id, id))!;
const charges = (id: string) => mongo.db.collection('provider_test_charges').countDocuments({ key: { $regex: id } });
const orders = (id: string) => mongo.db.collection('orders').countDocuments({ checkout_session: id });
const events = (type: string, id: string) =>
  collections(mongo.db).events.countDocuments({ store_id: store.store._id, type, data_json: { $regex: id } });

describe('checkout money safety', () => {
  test('approved, then the API process is SIGKILLed before it answers: the session completes with one order and one charge', async () => {
    const child = await startApiProcess({
      MONGODB_DB: mongo.db.databaseName,
      TEMPORAL_ADDRESS: proxy.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      CHECKOUT_PAY_WAIT_MS: '60000',
    });
    const id = await newSession();
    const key = checkoutAttemptKey(id, 1);
    const answer = gate();
    onCharge.after.set(key, () => answer.promise);
    try {
      const paying = post(child.url, `/c/${id}/pay`, buyer()).catch((error: unknown) => ({ status: 0, error }));
      await waitFor(async () => (await charges(id)) === 1, { description: 'the provider to record the approval' });
      await child.group.stop({ signal: 'SIGKILL' });
      // The page never answered: the buyer saw a dropped connection, not a result.
      expect((await paying).status).toBe(0);
    } finally {
      answer.open();
      await child.group.stop({ signal: 'SIGKILL' });
    }
    await waitFor(async () => (await session(id)).status === 'complete', { timeoutMs: 60_000, description: 'the workflow to complete the session' });
    expect((await session(id)).payment_status).toBe('paid');
    expect(await orders(id)).toBe(1);
    expect(await charges(id)).toBe(1);
    // The buyer coming back sees the thank-you page.
    expect((await page(`/c/${id}`)).text).toContain('data-testid="thank-you"');
    await waitFor(async () => (await events('checkout.session.completed', id)) === 1);
  }, 240_000);

  test('approved, then Temporal unreachable for 10 s: the page answers processing (not 500), one charge, the session completes when Temporal is back', async () => {
    const id = await newSession();
    const key = checkoutAttemptKey(id, 1);
    let restoredAt = 0;
    onCharge.after.set(key, async () => {
      proxy.cut();
      setTimeout(() => {
        restoredAt = Date.now();
        proxy.restore();
      }, 10_000);
    });
    const paid = await post(api.url, `/c/${id}/pay`, buyer());
    expect({ status: paid.status, location: paid.location }).toEqual({ status: 303, location: `/c/${id}?processing=1` });
    // While Temporal is away the buyer is told to wait, not asked to pay again.
    const waiting = await page(`/c/${id}?processing=1`);
    expect(waiting.status).toBe(200);
    expect(waiting.text).toContain('data-testid="processing"');
    expect(await charges(id)).toBe(1);

    await waitFor(async () => (await session(id)).status === 'complete', {
      timeoutMs: 120_000,
      description: 'the session to complete once Temporal is back',
    });
    expect(restoredAt).toBeGreaterThan(0);
    expect((await session(id)).payment_status).toBe('paid');
    expect(await charges(id)).toBe(1);
    expect(await orders(id)).toBe(1);
    expect((await page(`/c/${id}?processing=1`)).text).toContain('data-testid="thank-you"');
    await waitFor(async () => (await events('checkout.session.completed', id)) === 1);
  }, 240_000);

  test('a provider answering after the hold: no second charge; the merchant expires the session and the late approval is refunded, with no order and no checkout.session.completed', async () => {
    const id = await newSession();
    const key = checkoutAttemptKey(id, 1);
    const slow = gate();
    onCharge.before.set(key, slow);
    try {
      const form = buyer();
      expect((await post(api.url, `/c/${id}/pay`, form)).location).toBe(`/c/${id}?processing=1`);
      // The buyer tries again: told the payment is in progress, nothing charged twice.
      expect((await post(api.url, `/c/${id}/pay`, form)).location).toBe(`/c/${id}?processing=1`);
      expect((await page(`/c/${id}?processing=1`)).text).toContain('data-testid="processing"');
      // What the processing page polls: it moves on once the attempt has landed.
      expect(JSON.parse((await page(`/c/${id}/status`)).text)).toEqual({ status: 'processing', payment_status: 'unpaid', next: `/c/${id}` });
      const expired = await fetch(`${api.url}/v1/checkout/sessions/${id}/expire`, {
        method: 'POST',
        headers: { authorization: `Bearer ${store.key}` },
      });
      expect(expired.status).toBe(200);
      expect(await expired.json()).toMatchObject({ id, status: 'expired' });
    } finally {
      slow.open();
    }
    const handle = temporal.workflow.getHandle(checkoutSessionWorkflowId(id));
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'expired', order: null, attempts: [expect.objectContaining({ n: 1, key, status: 'refunded' })] });
    expect((await handle.query(stateQuery)).attempts).toHaveLength(1);
    expect((await createTestConnection({ db: mongo.db }).lookupCharge({ storeId: store.store._id, idempotencyKey: key }))!.state).toBe('refunded');
    expect(await charges(id)).toBe(1);
    expect(await orders(id)).toBe(0);
    expect(await events('checkout.session.completed', id)).toBe(0);
    expect((await session(id)).status).toBe('expired');
  }, 120_000);

  test('three simultaneous submits of the page: one charge, one order, one checkout.session.completed; the others are told the payment is in progress', async () => {
    const id = await newSession();
    const form = buyer();
    const answers = await Promise.all([1, 2, 3].map(() => post(api.url, `/c/${id}/pay`, form)));
    const locations = answers.map((a) => a.location);
    expect(answers.every((a) => a.status === 303)).toBe(true);
    expect(locations.filter((l) => l === `/c/${id}?done=1`)).toHaveLength(1);
    expect(locations.every((l) => l === `/c/${id}?done=1` || l === `/c/${id}?processing=1` || l === `/c/${id}`)).toBe(true);
    await waitFor(async () => (await session(id)).status === 'complete');
    expect(await charges(id)).toBe(1);
    expect(await orders(id)).toBe(1);
    await waitFor(async () => (await events('checkout.session.completed', id)) === 1);
    expect(await collections(mongo.db).customers.countDocuments({ store_id: store.store._id, email: form.email })).toBe(1);
    const state = await temporal.workflow.getHandle(checkoutSessionWorkflowId(id)).query(stateQuery);
    expect(state.attempts).toEqual([expect.objectContaining({ n: 1, status: 'approved' })]);
  }, 120_000);

  test('no answer to any try: the page says the payment is being confirmed, a second submit charges nothing, and the same key pays once when the provider is back', async () => {
    const id = await newSession();
    const key = checkoutAttemptKey(id, 1);
    onCharge.unreachable.add(key);
    const form = buyer();
    expect((await post(api.url, `/c/${id}/pay`, form)).location).toBe(`/c/${id}?processing=1`);
    const confirming = await waitFor(
      async () => {
        const shown = await page(`/c/${id}?processing=1`);
        return shown.text.includes('data-testid="confirming"') ? shown.text : null;
      },
      { timeoutMs: 60_000, description: 'the page to say the payment is being confirmed' },
    );
    expect(confirming).toContain('is being confirmed');
    expect(confirming).not.toContain('Nothing was charged');
    // The buyer submits again: sent back to wait, no new attempt.
    expect((await post(api.url, `/c/${id}/pay`, form)).location).toBe(`/c/${id}?processing=1`);
    onCharge.unreachable.delete(key);

    await waitFor(async () => (await session(id)).status === 'complete', {
      timeoutMs: 90_000,
      description: 'the same key to pay once the provider answers',
    });
    expect(await charges(id)).toBe(1);
    expect(await orders(id)).toBe(1);
    const state = await temporal.workflow.getHandle(checkoutSessionWorkflowId(id)).query(stateQuery);
    expect(state.attempts).toEqual([expect.objectContaining({ n: 1, key, status: 'approved' })]);
  }, 180_000);
});
