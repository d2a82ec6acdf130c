// What this tests: the checkout session workflow on the time-skipping server with its activities
// running for real (FerretDB, the test payment connection): the session expires exactly at its
// deadline; a PIX expires 30 minutes after it was generated; a session completes exactly once when
// a payment races the deadline or POST expire. Tests run serially (time is global to the server).
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testServerPath } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { collections, ensureIndexes, type StoreDoc } from '../../activities/store/collections';
import { createStore } from '../../activities/store/stores';
import { createTestConnection } from '../../activities/provider/test-connection';
import { insertCustomer, newCustomerDoc } from '../../activities/store/customers';
import { findCheckoutSession } from '../../activities/store/checkout-sessions';
import { findOrder } from '../../activities/store/orders';
import { createCheckoutSession, type CheckoutDeps } from '../../activities/checkout';
import { payCheckoutSession } from '../../activities/checkout-payments';
import {
  beginPaymentUpdate,
  checkoutSessionWorkflowId,
  expireUpdate,
  NOT_OPEN_FAILURE,
  recordPaymentResultUpdate,
  stateQuery,
  type PaymentResultInput,
} from '../../workflows/checkout-session-messages';
import { newId } from '../../domain/ids';
import { registerSearchAttributes } from '../support/search-attributes';
import { seedCheckoutCatalog, type CheckoutCatalog } from '../support/checkout-fixtures';
import { testMongo, uniqueTaskQueue, type TestMongo } from '../support/env';

const MINUTE_MS = 60_000;

let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let worker: Worker;
let running: Promise<void>;
let store: StoreDoc;
let catalog: CheckoutCatalog;
let customerId: string;
const taskQueue = uniqueTaskQueue('checkout-session');

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
  worker = await createBillingWorker({ connection: env.nativeConnection, taskQueue, db: mongo.db, temporal: env.client });
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
async function openSession(expiresInMs: number) {
  const now = await env.currentTimeMs();
  const session = await createCheckoutSession(deps(), store, { offer: catalog.oneOff._id, customer: customerId, expires_at: Math.floor((now + expiresInMs) / 1000) }, now);
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
});
