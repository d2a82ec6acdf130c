// What this tests: the checkout session workflow on the time-skipping server with its activities
// running for real (FerretDB, the test payment connection): the session expires exactly at its
// deadline; a PIX expires 30 minutes after it was generated; a session completes exactly once when
// a payment races the deadline or POST expire; a provider slower than the page's bound still
// completes the session with its late approval; provider checks and the subscription hand-off that
// fail past their retries are tried again later instead of failing the workflow. Tests run serially
// (time is global to the server).
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testServerPath } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { collections, type StoreDoc } from '../../store/collections';
import { ensureIndexes } from '../../store/indexes';
import { createStore } from '../../store/stores';
import { createTestConnection } from '../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../adapters/provider/types';
import { insertCustomer, newCustomerDoc } from '../../store/customers';
import { findCheckoutSession } from '../../store/checkout-sessions';
import { findOrder } from '../../store/orders';
import { createCheckoutSession, type CheckoutDeps } from '../../services/checkout-sessions';
import { payCheckoutSession, settleFromHostedPage } from '../../services/checkout-payments';
import { subscriptionsCollection } from '../../store/subscriptions';
import {
  beginPaymentUpdate,
  checkoutSessionWorkflowId,
  expireUpdate,
  NOT_OPEN_FAILURE,
  PROVIDER_TIMEOUT_CODE,
  recordPaymentResultUpdate,
  stateQuery,
  type PaymentResultInput,
} from '../../workflows/checkout-session-messages';
import { newId } from '../../domain/ids';
import { registerSearchAttributes } from '../support/search-attributes';
import { seedCheckoutCatalog, type CheckoutCatalog } from '../support/checkout-fixtures';
import { testMongo, uniqueTaskQueue, waitFor, type TestMongo } from '../support/env';
import { recordHistory } from '../support/histories';

const MINUTE_MS = 60_000;

let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let worker: Worker;
let running: Promise<void>;
let store: StoreDoc;
let catalog: CheckoutCatalog;
let customerId: string;
const taskQueue = uniqueTaskQueue('checkout-session');
/** Transaction id -> how many more times the worker's provider fails to answer getTransaction. */
const failingChecks = new Map<string, number>();

/** The worker's provider: the test connection, unreachable for the transactions in failingChecks. */
function flakyProvider(): PaymentProvider {
  const base = createTestConnection({ db: mongo.db });
  return {
    ...base,
    async getTransaction(input) {
      const left = failingChecks.get(input.transactionId) ?? 0;
      if (left > 0) {
        failingChecks.set(input.transactionId, left - 1);
        throw new Error('test provider unreachable');
      }
      return base.getTransaction(input);
    },
  };
}

/** A provider whose card charges wait until open() is called (a provider slower than the page's bound). */
function slowProvider() {
  const base = createTestConnection({ db: mongo.db });
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let calls = 0;
  const provider: PaymentProvider = {
    ...base,
    async chargeCard(input) {
      calls += 1;
      await gate;
      return base.chargeCard(input);
    },
  };
  return { provider, open, calls: () => calls };
}

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: testServerPath() } },
  });
  await registerSearchAttributes(env.connection, env.namespace ?? 'default');
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  store = await createStore(mongo.db, { name: 'Clock Store', slug: null, country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  catalog = await seedCheckoutCatalog(mongo.db, store._id);
  const customer = newCustomerDoc(store._id, { email: 'clock@example.com', name: 'Clock Buyer' }, {});
  await insertCustomer(mongo.db, customer);
  customerId = customer._id;
  worker = await createBillingWorker({
    connection: env.nativeConnection,
    taskQueue,
    db: mongo.db,
    temporal: env.client,
    activityDeps: { provider: flakyProvider() },
  });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await env?.teardown();
  await mongo?.close();
});

/** The API side's dependencies; the provider's clock can be pinned to the test server's time. */
function deps(providerNow?: () => number): CheckoutDeps {
  return {
    db: mongo.db,
    provider: createTestConnection({ db: mongo.db, now: providerNow }),
    temporal: env.client,
    taskQueue,
    checkoutUrl: 'https://pay.example.com',
    development: true,
  };
}

/** A session created the API's way, dated in the test server's time (it runs ahead as tests skip). */
async function openSession(expiresInMs: number, offer = catalog.oneOff._id) {
  const now = await env.currentTimeMs();
  const session = await createCheckoutSession(deps(), store, { offer, customer: customerId, expires_at: Math.floor((now + expiresInMs) / 1000) }, now);
  return { session, handle: env.client.workflow.getHandle(checkoutSessionWorkflowId(session._id)) };
}

function approvedResult(attemptId: string): PaymentResultInput {
  return {
    attemptId,
    orderId: newId('ord'),
    method: 'card',
    outcome: { status: 'approved', transactionId: `tx_${attemptId}` },
    amounts: { currency: 'brl', quantity: 1, unit_amount: 19700, amount_subtotal: 19700, amount_discount: 0, amount_total: 19700 },
    installments: 1,
    customerId,
    customerEmail: 'clock@example.com',
    savedCard: null,
  };
}

async function eventCount(sessionId: string, type: string): Promise<number> {
  return collections(mongo.db).events.countDocuments({ store_id: store._id, type, data_json: { $regex: sessionId } });
}

describe.sequential('checkout session workflow', () => {
  test('an untouched session is open one second before its deadline and expired exactly at it, with one checkout.session.expired', async () => {
    const { session, handle } = await openSession(30 * MINUTE_MS);
    const deadlineMs = session.expires_at * 1000;
    await env.sleep(deadlineMs - (await env.currentTimeMs()) - 1000);
    expect((await handle.query(stateQuery)).status).toBe('open');

    const final = await handle.result();
    expect(final.status).toBe('expired');
    const closed = (await handle.describe()).closeTime!.getTime();
    expect(closed).toBeGreaterThanOrEqual(deadlineMs);
    expect(closed - deadlineMs).toBeLessThan(5_000);
    expect((await findCheckoutSession(mongo.db, store._id, session._id))!.status).toBe('expired');
    expect(await eventCount(session._id, 'checkout.session.expired')).toBe(1);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-expired-at-deadline');
  });

  test('a PIX stays pending for 30 minutes after it was generated, then the session is complete/unpaid with async_payment_failed and the order canceled', async () => {
    const { session, handle } = await openSession(2 * 60 * MINUTE_MS);
    const generatedAt = await env.currentTimeMs();
    // The provider dates the code by the server's clock, as it would by the wall clock in production.
    const result = await payCheckoutSession(deps(() => generatedAt), session, { method: 'pix' }, generatedAt);
    expect(result).toEqual({ kind: 'done' });
    const pending = await handle.query(stateQuery);
    expect(pending).toMatchObject({ status: 'complete', payment_status: 'pending', method: 'pix' });
    const pixDeadlineMs = pending.pix_expires_at! * 1000;
    expect(pixDeadlineMs - generatedAt).toBeGreaterThan(30 * MINUTE_MS - 1000);
    expect(pixDeadlineMs - generatedAt).toBeLessThanOrEqual(30 * MINUTE_MS);

    await env.sleep(pixDeadlineMs - (await env.currentTimeMs()) - 1000);
    expect((await handle.query(stateQuery)).payment_status).toBe('pending');

    const final = await handle.result();
    expect(final).toMatchObject({ status: 'complete', payment_status: 'unpaid', settlement: 'expired' });
    const doc = (await findCheckoutSession(mongo.db, store._id, session._id))!;
    expect({ status: doc.status, payment_status: doc.payment_status }).toEqual({ status: 'complete', payment_status: 'unpaid' });
    expect((await findOrder(mongo.db, store._id, doc.order!))!.status).toBe('canceled');
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.async_payment_failed')).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.expired')).toBe(0);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-pix-expired');
  });

  test('a payment begun before the deadline and answered after it completes the session once; the deadline does not expire it', async () => {
    const { session, handle } = await openSession(30 * MINUTE_MS);
    await env.sleep(session.expires_at * 1000 - (await env.currentTimeMs()) - 2000);
    const begun = await handle.executeUpdate(beginPaymentUpdate, { args: [{ attemptId: 'late-answer' }] });
    expect(begun).toEqual({ ok: true });
    // The deadline passes while the provider "answers".
    await env.sleep(10_000);
    expect((await handle.query(stateQuery)).status).toBe('open');

    const answer = await handle.executeUpdate(recordPaymentResultUpdate, { args: [approvedResult('late-answer')] });
    expect(answer.applied).toBe(true);
    expect(answer.state).toMatchObject({ status: 'complete', payment_status: 'paid' });
    const final = await handle.result();
    expect(final.status).toBe('complete');
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.expired')).toBe(0);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-paid-after-deadline');
  });

  test('POST expire racing an approved payment in flight: the payment lands, expire is refused, completed exactly once', async () => {
    const { session, handle } = await openSession(30 * MINUTE_MS);
    expect(await handle.executeUpdate(beginPaymentUpdate, { args: [{ attemptId: 'race' }] })).toEqual({ ok: true });
    const expiring = handle.executeUpdate(expireUpdate).then(
      () => 'expired',
      (error: unknown) => (error instanceof WorkflowUpdateFailedError && (error.cause as { type?: string })?.type === NOT_OPEN_FAILURE ? 'refused' : String(error)),
    );
    const paying = handle.executeUpdate(recordPaymentResultUpdate, { args: [approvedResult('race')] });
    const [expireOutcome, payAnswer] = await Promise.all([expiring, paying]);
    expect(expireOutcome).toBe('refused');
    expect(payAnswer.applied).toBe(true);
    expect((await handle.result()).status).toBe('complete');
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.expired')).toBe(0);
    expect((await findCheckoutSession(mongo.db, store._id, session._id))!.status).toBe('complete');
    await recordHistory(env.client, handle.workflowId, 'checkout-session-expire-refused-while-paying');
  });

  test('a buyer paying a session that POST expire closed meanwhile is sent back (closed), and nothing is charged or completed', async () => {
    const { session, handle } = await openSession(30 * MINUTE_MS);
    await handle.executeUpdate(expireUpdate);
    // The page still holds the session as it was when the buyer opened it.
    const result = await payCheckoutSession(deps(), session, { method: 'card', card: { number: '4242 4242 4242 4242' } }, await env.currentTimeMs());
    expect(result).toEqual({ kind: 'closed' });
    expect((await handle.result()).status).toBe('expired');
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(0);
    expect(await eventCount(session._id, 'checkout.session.expired')).toBe(1);
    expect(await collections(mongo.db).db.collection('orders').countDocuments({ checkout_session: session._id })).toBe(0);
    expect(await mongo.db.collection('provider_test_charges').countDocuments({ key: { $regex: session._id } })).toBe(0);
  });

  test('a provider slower than the page bound: provider_timeout within the hold, the attempt keeps the session past its deadline, the late approval completes it once', async () => {
    const { session, handle } = await openSession(30 * MINUTE_MS);
    await env.sleep(session.expires_at * 1000 - (await env.currentTimeMs()) - 20_000);
    const slow = slowProvider();
    const pageDeps = { ...deps(), provider: slow.provider, providerCallTimeoutMs: 300 };
    const card = { method: 'card' as const, card: { number: '4242 4242 4242 4242' } };
    const first = await payCheckoutSession(pageDeps, session, card, await env.currentTimeMs());
    expect(first).toMatchObject({ kind: 'error', code: PROVIDER_TIMEOUT_CODE, field: 'payment' });
    // Asked once more with the same idempotency key before giving up.
    expect(slow.calls()).toBe(2);
    // The buyer trying again waits for the unanswered attempt instead of risking a second charge.
    const again = await payCheckoutSession(pageDeps, session, card, await env.currentTimeMs());
    expect(again).toMatchObject({ kind: 'error', code: 'payment_in_progress' });
    expect(slow.calls()).toBe(2);

    // The deadline passes while the provider is still working: the held session does not expire.
    await env.sleep(30_000);
    expect(await handle.query(stateQuery)).toMatchObject({ status: 'open', attempt: expect.any(String) });

    slow.open();
    await waitFor(async () => (await handle.query(stateQuery)).status === 'complete', { description: 'the late approval to complete the session' });
    expect(await handle.result()).toMatchObject({ status: 'complete', payment_status: 'paid' });
    const doc = (await findCheckoutSession(mongo.db, store._id, session._id))!;
    expect((await findOrder(mongo.db, store._id, doc.order!))!.status).toBe('paid');
    expect(await mongo.db.collection('provider_test_charges').countDocuments({ key: { $regex: session._id } })).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.expired')).toBe(0);
  });

  test('a PIX check failing past its retry policy (12 failures) is tried again later: the workflow does not fail and the PIX expires once', async () => {
    const { session, handle } = await openSession(2 * 60 * MINUTE_MS);
    const generatedAt = await env.currentTimeMs();
    expect(await payCheckoutSession(deps(() => generatedAt), session, { method: 'pix' }, generatedAt)).toEqual({ kind: 'done' });
    const transactionId = (await handle.query(stateQuery)).transaction_id!;
    // The activity tries 10 times: the first round fails, the workflow waits, the second round succeeds.
    failingChecks.set(transactionId, 12);

    const final = await handle.result();
    expect(final).toMatchObject({ status: 'complete', payment_status: 'unpaid', settlement: 'expired', problem: null });
    expect(failingChecks.get(transactionId)).toBe(0);
    expect(await eventCount(session._id, 'checkout.session.async_payment_failed')).toBe(1);
  });

  test('a review whose daily provider check keeps failing stays pending and waiting: the provider notice still settles it as paid', async () => {
    const { session, handle } = await openSession(2 * 60 * MINUTE_MS);
    const result = await payCheckoutSession(deps(), session, { method: 'card', card: { number: '4000 0000 0000 4954' } }, await env.currentTimeMs());
    expect(result).toEqual({ kind: 'done' });
    const transactionId = (await handle.query(stateQuery)).transaction_id!;
    failingChecks.set(transactionId, 1_000_000);

    await env.sleep(24 * 60 * MINUTE_MS + 30 * MINUTE_MS);
    const waiting = await handle.query(stateQuery);
    expect(waiting).toMatchObject({ status: 'complete', payment_status: 'pending', problem: { step: 'check_transaction', nonRetryable: false } });
    expect(waiting.problem!.failures).toBeGreaterThanOrEqual(1);

    const pending = (await findCheckoutSession(mongo.db, store._id, session._id))!;
    expect(await settleFromHostedPage(deps(), pending, 'paid')).toBe(true);
    expect(await handle.result()).toMatchObject({ status: 'complete', payment_status: 'paid', settlement: 'paid' });
    failingChecks.delete(transactionId);
    expect(await eventCount(session._id, 'checkout.session.async_payment_succeeded')).toBe(1);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-review-paid-by-notice');
  });

  test('a subscription hand-off refused on a data problem (offer missing) is surfaced, not fatal, and succeeds once the data is back', async () => {
    const offers = collections(mongo.db).offers;
    const { session, handle } = await openSession(30 * MINUTE_MS, catalog.monthly._id);
    // The offer disappears from the store after the session was created (an operator's mistake).
    await offers.updateOne({ _id: catalog.monthly._id }, { $set: { store_id: 'st_elsewhere' } });
    try {
      const result = await payCheckoutSession(deps(), session, { method: 'card', card: { number: '4242 4242 4242 4242' } }, await env.currentTimeMs());
      expect(result).toEqual({ kind: 'done' });
      const stuck = await waitFor(async () => {
        const state = await handle.query(stateQuery);
        return state.problem?.type === 'subscription_inputs_missing' ? state : null;
      }, { description: 'the hand-off problem to be surfaced' });
      expect(stuck).toMatchObject({ status: 'complete', payment_status: 'paid', subscription: null, problem: { step: 'create_subscription', nonRetryable: true } });
    } finally {
      await offers.updateOne({ _id: catalog.monthly._id }, { $set: { store_id: store._id } });
    }

    const final = await handle.result();
    expect(final).toMatchObject({ status: 'complete', payment_status: 'paid', subscription: expect.stringMatching(/^sub_/), problem: null });
    const doc = (await findCheckoutSession(mongo.db, store._id, session._id))!;
    expect(doc.subscription).toBe(final.subscription);
    expect(await subscriptionsCollection(mongo.db).countDocuments({ checkout_session: session._id })).toBe(1);
  });
});
