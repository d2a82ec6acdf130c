// What this tests: the checkout session workflow on the time-skipping server with its activities
// running for real (FerretDB, the test payment connection behind a fault wrapper): the session expires
// exactly at its deadline; a PIX expires 30 minutes after it was generated; an attempt in flight at the
// deadline or at POST expire lands first (or is looked up by key after the hold) and completes the
// session once; an approval that lands after the session expired is refunded with no order and its buyer
// e-mailed once (read at Mailpit); a paid notice for a declined 3-D Secure is given back (by the session, or
// after it ended by the give-back workflow) and its buyer e-mailed once; a charge
// whose tries all fail is unknown, not failed: asked again under its key it pays once, and no new attempt
// is taken meanwhile; a try that times out is stopped (its signal aborted), and when the provider still
// records it 5 s later exactly one capture is kept, on an open session or an expired one; three updates at
// once, even in one activation, make one attempt; a review is asked about by key daily (a lost notice
// resolves by lookup) and counts as refused and voided at the window's end; lookups and the
// subscription hand-off that fail past their retries are tried again later; a card waiting for 3-D Secure
// keeps the session open and is fenced at the deadline (cancelled, or paid when the provider took it first).
// Tests run serially.
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
import type { ChargeCardInput, PaymentProvider } from '../../adapters/provider/types';
import { insertCustomer, newCustomerDoc } from '../../store/customers';
import { findCheckoutSession } from '../../store/checkout-sessions';
import { findOrder } from '../../store/orders';
import { createCheckoutSession, type CheckoutDeps } from '../../services/checkout/sessions';
import { attemptInFlight, payCheckoutSession, settleFromHostedPage } from '../../services/checkout/payments';
import { subscriptionsCollection } from '../../store/subscriptions';
import {
  checkoutAttemptKey,
  checkoutSessionWorkflowId,
  expireUpdate,
  NOT_OPEN_FAILURE,
  PAYMENT_IN_PROGRESS_FAILURE,
  payUpdate,
  providerSettledSignal,
  stateQuery,
  type PayInput,
} from '../../workflows/checkout-session/messages';
import { REVIEW_WINDOW_MS } from '../../domain/reviews';
import { registerSearchAttributes } from '../support/search-attributes';
import { seedCheckoutCatalog, type CheckoutCatalog } from '../support/checkout-fixtures';
import { testMongo, uniqueTaskQueue, waitFor, type TestMongo } from '../support/env';
import { patchesIn, recordHistory } from '../support/histories';
import { gate, type Gate } from '../support/gate';
import { messagesTo } from '../support/mailpit';
import { sentMailCollection } from '../../store/sent-mail';
import { startGiveBack } from '../../services/provider/give-back';

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;
const CARD_OK = { method: 'card' as const, card: { number: '4242 4242 4242 4242' } };
const CARD_REVIEW = { method: 'card' as const, card: { number: '4000 0000 0000 4954' } };

let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let worker: Worker;
let running: Promise<void>;
let store: StoreDoc;
let catalog: CheckoutCatalog;
let customerId: string;
const taskQueue = uniqueTaskQueue('checkout-session');

/** The worker provider's faults, by provider key (`checkout/<cs_id>/<n>`). */
const faults = {
  /** How many more lookups of the key fail (the provider unreachable). */
  failingLookups: new Map<string, number>(),
  /** How many more charges under the key fail before reaching the provider. */
  failingCharges: new Map<string, number>(),
  /** Charges held before the provider records them (a slow network on the way there). */
  beforeCharge: new Map<string, Gate>(),
  /** Charges recorded (money taken) whose answer is held (a slow network on the way back). */
  afterCharge: new Map<string, Gate>(),
  /** Keys whose tries never get an answer: each waits until its caller gives up (its signal aborts). */
  unanswered: new Set<string>(),
  /** The last unanswered try per key, as sent (the provider may still record it). */
  lastTry: new Map<string, ChargeCardInput>(),
  /** How many unanswered tries per key were given up by their caller (signal aborted). */
  givenUp: new Map<string, number>(),
  /** Card charges answered as waiting for the buyer's 3-D Secure (what Stripe's requires_action is), by key. */
  actionRequired: new Set<string>(),
  /** How many more cancels (the PIX expiry's fence) under the key fail (the provider unreachable). */
  failingCancels: new Map<string, number>(),
  /** Runs just before the provider receives a cancel under the key (the buyer paying in the last second). */
  beforeCancel: new Map<string, () => Promise<unknown>>(),
  /** Cancels the provider received, by key. */
  cancels: new Map<string, number>(),
  /** The provider's clock, pinned to the test server's time where a test needs it (PIX validity). */
  now: null as number | null,
};

function countDown(map: Map<string, number>, key: string): boolean {
  const left = map.get(key) ?? 0;
  if (left > 0) map.set(key, left - 1);
  return left > 0;
}

/** A try on the wire with no answer: it ends only when its caller gives up (never, without a signal). */
function unansweredTry(input: ChargeCardInput): Promise<never> {
  const key = input.idempotencyKey;
  faults.lastTry.set(key, input);
  return new Promise((_, reject) => {
    const stop = () => {
      faults.givenUp.set(key, (faults.givenUp.get(key) ?? 0) + 1);
      reject(input.signal!.reason);
    };
    if (input.signal?.aborted) stop();
    else input.signal?.addEventListener('abort', stop, { once: true });
  });
}

/** The worker's provider: the test connection, with the faults above. */
function faultyProvider(): PaymentProvider {
  const base = createTestConnection({ db: mongo.db, now: () => faults.now ?? Date.now() });
  return {
    ...base,
    async chargeCard(input) {
      if (countDown(faults.failingCharges, input.idempotencyKey)) throw new Error('test provider unreachable');
      if (faults.unanswered.has(input.idempotencyKey)) return unansweredTry(input);
      await faults.beforeCharge.get(input.idempotencyKey)?.promise;
      const outcome = await base.chargeCard(input);
      await faults.afterCharge.get(input.idempotencyKey)?.promise;
      if (faults.actionRequired.has(input.idempotencyKey) && outcome.transactionId) {
        return { status: 'action_required', transactionId: outcome.transactionId, clientSecret: `${outcome.transactionId}_secret`, card: null };
      }
      return outcome;
    },
    async cancelPending(input) {
      if (countDown(faults.failingCancels, input.chargeKey)) throw new Error('test provider unreachable');
      await faults.beforeCancel.get(input.chargeKey)?.();
      faults.cancels.set(input.chargeKey, (faults.cancels.get(input.chargeKey) ?? 0) + 1);
      return base.cancelPending(input);
    },
    async lookupCharge(input) {
      if (countDown(faults.failingLookups, input.idempotencyKey)) throw new Error('test provider unreachable');
      return base.lookupCharge(input);
    },
  };
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
    activityDeps: { provider: faultyProvider() },
  });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await env?.teardown();
  await mongo?.close();
});

/** The API side's dependencies; the page waits `payWaitMs` for an outcome, an expiry `attemptHoldMs` for an attempt. */
function deps(options: { payWaitMs?: number; attemptHoldMs?: number } = {}): CheckoutDeps {
  return {
    db: mongo.db,
    provider: createTestConnection({ db: mongo.db }),
    temporal: env.client,
    taskQueue,
    checkoutUrl: 'https://pay.example.com',
    development: true,
    payWaitMs: options.payWaitMs ?? 60_000,
    attemptHoldMs: options.attemptHoldMs,
  };
}

/** A session created the API's way, dated in the test server's time (it runs ahead as tests skip). */
async function openSession(expiresInMs: number, options: { offer?: string; attemptHoldMs?: number; customer?: string } = {}) {
  const now = await env.currentTimeMs();
  const session = await createCheckoutSession(
    deps({ attemptHoldMs: options.attemptHoldMs }),
    store,
    { offer: options.offer ?? catalog.oneOff._id, customer: options.customer ?? customerId, expires_at: Math.floor((now + expiresInMs) / 1000) },
    now,
  );
  return {
    session,
    handle: env.client.workflow.getHandle(checkoutSessionWorkflowId(session._id)),
    key: (n: number) => checkoutAttemptKey(session._id, n),
  };
}

async function eventCount(sessionId: string, type: string): Promise<number> {
  return collections(mongo.db).events.countDocuments({ store_id: store._id, type, data_json: { $regex: sessionId } });
}

const ledger = () => mongo.db.collection('provider_test_charges');
const ordersOf = (sessionId: string) => collections(mongo.db).db.collection('orders').countDocuments({ checkout_session: sessionId });

/** Skips the test server's time in 5 s steps until the first attempt's charge tries ran out (it leaves charging). */
async function skipUntilTriesRunOut(handle: { query: (q: typeof stateQuery) => Promise<{ attempts: { key: string; status: string }[] }> }) {
  return waitFor(
    async () => {
      await env.sleep(5_000);
      const [attempt] = (await handle.query(stateQuery)).attempts;
      return attempt && attempt.status !== 'charging' ? attempt : null;
    },
    { timeoutMs: 90_000, intervalMs: 0, description: 'the charge tries to run out' },
  );
}

/** The provider records the unanswered try after all (it was on the wire when its caller gave up). */
async function recordLastTry(key: string): Promise<void> {
  const sent = faults.lastTry.get(key)!;
  await createTestConnection({ db: mongo.db }).chargeCard({ ...sent, signal: undefined });
}

/** Money the provider holds for the session: `kept` approvals, every other charge given back. */
async function expectCapturesKept(sessionId: string, kept: number): Promise<void> {
  const states = (
    await ledger()
      .find({ key: { $regex: sessionId } })
      .toArray()
  ).map((doc) => doc.state as string);
  expect(states.filter((state) => state === 'approved' || state === 'paid')).toHaveLength(kept);
  expect(states.every((state) => ['approved', 'paid', 'refunded', 'voided'].includes(state))).toBe(true);
}

/** A buyer of their own, with an address no other test mails (their inbox at Mailpit is this test's). */
async function lonelyBuyer(label: string): Promise<{ id: string; email: string }> {
  const email = `${label}-${Date.now()}-${Math.floor(Math.random() * 1e6)}@example.com`;
  const customer = newCustomerDoc(store._id, { email, name: 'Late Buyer' }, {});
  await insertCustomer(mongo.db, customer);
  return { id: customer._id, email };
}

/** The late-payment refund e-mails recorded for the session (each is recorded before it is handed to SMTP). */
const lateRefundMails = (sessionId: string) =>
  sentMailCollection(mongo.db).find({ store_id: store._id, purpose: 'late_payment_refund', subject_id: sessionId }).toArray();

/** The buyer's inbox at Mailpit once something arrived there. */
const inboxOf = (email: string) =>
  waitFor(
    async () => {
      const found = await messagesTo(email);
      return found.length > 0 ? found : null;
    },
    { description: `mail to ${email}` },
  );

/** A session paid by PIX, its code dated by the test server's clock (as by the wall clock in production). */
async function payPix() {
  const opened = await openSession(2 * 60 * MINUTE_MS);
  const generatedAt = await env.currentTimeMs();
  faults.now = generatedAt;
  try {
    expect(await payCheckoutSession(deps(), opened.session, { method: 'pix' }, generatedAt)).toEqual({ kind: 'done' });
  } finally {
    faults.now = null;
  }
  return opened;
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

  test('a 3-D Secure still waiting at the deadline is cancelled at the provider first: the session expires with no order, the charge voided', async () => {
    const { session, handle, key } = await openSession(30 * MINUTE_MS);
    faults.actionRequired.add(key(1));
    // The review card: the provider holds it pending, as a card waiting for the bank.
    expect(await payCheckoutSession(deps(), session, CARD_REVIEW)).toMatchObject({ kind: 'action' });
    const waiting = await handle.query(stateQuery);
    expect(waiting).toMatchObject({ status: 'open', payment_status: 'unpaid', order: null });
    expect(waiting.attempts[0]).toMatchObject({ status: 'action_required', transaction_id: expect.any(String) });
    expect((await findCheckoutSession(mongo.db, store._id, session._id))!.pending_action).toMatchObject({ attempt_key: key(1), client_secret: null });
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(0);

    const final = await handle.result();
    expect(final).toMatchObject({ status: 'expired', payment_status: 'unpaid', order: null });
    expect(final.attempts[0]).toMatchObject({ status: 'voided', code: 'authentication_abandoned' });
    expect(await ledger().findOne({ key: key(1) })).toMatchObject({ state: 'voided' });
    expect(await ordersOf(session._id)).toBe(0);
    expect((await findCheckoutSession(mongo.db, store._id, session._id))!.pending_action).toBeNull();
    await recordHistory(env.client, handle.workflowId, 'checkout-session-3ds-cancelled-at-deadline');
  });

  test('a 3-D Secure the provider says succeeded when the deadline fences it completes the session as paid, once', async () => {
    const { session, handle, key } = await openSession(30 * MINUTE_MS);
    faults.actionRequired.add(key(1));
    // The approved card: the buyer authenticated in the last second and no notice came.
    expect(await payCheckoutSession(deps(), session, CARD_OK)).toMatchObject({ kind: 'action' });
    expect((await handle.query(stateQuery)).status).toBe('open');

    const final = await handle.result();
    expect(final).toMatchObject({ status: 'complete', payment_status: 'paid' });
    expect(final.attempts[0]).toMatchObject({ status: 'approved' });
    expect(await ledger().findOne({ key: key(1) })).toMatchObject({ state: 'approved' });
    expect(await ordersOf(session._id)).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.expired')).toBe(0);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-3ds-paid-at-fence');
  });

  test('a PIX stays pending for 30 minutes after it was generated, then the session is complete/unpaid with async_payment_failed and the order canceled', async () => {
    const { session, handle } = await openSession(2 * 60 * MINUTE_MS);
    const generatedAt = await env.currentTimeMs();
    // The provider dates the code by the server's clock, as it would by the wall clock in production.
    faults.now = generatedAt;
    try {
      expect(await payCheckoutSession(deps(), session, { method: 'pix' }, generatedAt)).toEqual({ kind: 'done' });
    } finally {
      faults.now = null;
    }
    const pending = await handle.query(stateQuery);
    expect(pending).toMatchObject({ status: 'complete', payment_status: 'pending', method: 'pix' });
    expect(pending.attempts).toEqual([
      expect.objectContaining({ n: 1, key: checkoutAttemptKey(session._id, 1), method: 'pix', status: 'pix_pending', amount: 19700 }),
    ]);
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

  test('an attempt begun before the deadline and answered after it completes the session once; the deadline does not expire it', async () => {
    const { session, handle, key } = await openSession(30 * MINUTE_MS);
    await env.sleep(session.expires_at * 1000 - (await env.currentTimeMs()) - 2000);
    const answer = gate();
    faults.afterCharge.set(key(1), answer);
    // The page stops waiting at once: the workflow has the attempt.
    expect(await payCheckoutSession(deps({ payWaitMs: 300 }), session, CARD_OK, await env.currentTimeMs())).toEqual({ kind: 'processing' });
    await waitFor(async () => (await ledger().countDocuments({ key: key(1) })) === 1, { description: 'the provider to record the charge' });
    // The deadline passes while the provider's answer is on its way.
    await env.sleep(10_000);
    expect(await handle.query(stateQuery)).toMatchObject({ status: 'open', attempts: [expect.objectContaining({ status: 'charging' })] });

    answer.open();
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'complete', payment_status: 'paid', attempts: [expect.objectContaining({ n: 1, status: 'approved' })] });
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.expired')).toBe(0);
    // Started at input version 2 (the API's client): its patches are taken without markers or TemporalChangeVersion upserts.
    expect(patchesIn(await handle.fetchHistory())).toEqual({ markers: 0, changeVersionUpserts: 0 });
    await recordHistory(env.client, handle.workflowId, 'checkout-session-paid-after-deadline');
  });

  test('POST expire racing an approved payment in flight: the payment lands, expire is refused, completed exactly once', async () => {
    const { session, handle, key } = await openSession(30 * MINUTE_MS);
    const answer = gate();
    faults.afterCharge.set(key(1), answer);
    const paying = payCheckoutSession(deps(), session, CARD_OK, await env.currentTimeMs());
    await waitFor(async () => (await ledger().countDocuments({ key: key(1) })) === 1, { description: 'the provider to record the charge' });
    const expiring = handle.executeUpdate(expireUpdate).then(
      () => 'expired',
      (error: unknown) =>
        error instanceof WorkflowUpdateFailedError && (error.cause as { type?: string })?.type === NOT_OPEN_FAILURE ? 'refused' : String(error),
    );
    // A second buyer tab during the expiry is refused: the session is closing.
    expect(await payCheckoutSession(deps(), session, CARD_OK, await env.currentTimeMs())).toEqual({ kind: 'closed' });
    answer.open();
    const [expireOutcome, payAnswer] = await Promise.all([expiring, paying]);
    expect(expireOutcome).toBe('refused');
    expect(payAnswer).toEqual({ kind: 'done' });
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
    expect(await payCheckoutSession(deps(), session, CARD_OK, await env.currentTimeMs())).toEqual({ kind: 'closed' });
    expect((await handle.result()).status).toBe('expired');
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(0);
    expect(await eventCount(session._id, 'checkout.session.expired')).toBe(1);
    expect(await ordersOf(session._id)).toBe(0);
    expect(await ledger().countDocuments({ key: { $regex: session._id } })).toBe(0);
  });

  test('an answer slower than the hold at the deadline: the provider is asked by key, its approval completes the session once, one charge', async () => {
    const { session, handle, key } = await openSession(30 * MINUTE_MS, { attemptHoldMs: 20_000 });
    await env.sleep(session.expires_at * 1000 - (await env.currentTimeMs()) - 2000);
    const answer = gate();
    faults.afterCharge.set(key(1), answer);
    expect(await payCheckoutSession(deps({ payWaitMs: 300 }), session, CARD_OK, await env.currentTimeMs())).toEqual({ kind: 'processing' });
    await waitFor(async () => (await ledger().countDocuments({ key: key(1) })) === 1, { description: 'the provider to record the charge' });
    // Past the deadline and the hold (below the charge's 30 s timeout: the activity is still waiting).
    await env.sleep(25_000);
    await waitFor(async () => (await handle.query(stateQuery)).status === 'complete', { description: 'the lookup by key to complete the session' });
    answer.open();
    expect(await handle.result()).toMatchObject({
      status: 'complete',
      payment_status: 'paid',
      attempts: [expect.objectContaining({ status: 'approved' })],
    });
    expect(await ledger().countDocuments({ key: { $regex: session._id } })).toBe(1);
    expect(await ordersOf(session._id)).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.expired')).toBe(0);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-completed-by-lookup-at-deadline');
  });

  test('an approval that reaches the provider only after POST expire and the hold is refunded: no order, no checkout.session.completed, the attempt refunded', async () => {
    const { session, handle, key } = await openSession(30 * MINUTE_MS, { attemptHoldMs: 10_000 });
    const slow = gate();
    faults.beforeCharge.set(key(1), slow);
    expect(await payCheckoutSession(deps({ payWaitMs: 300 }), session, CARD_OK, await env.currentTimeMs())).toEqual({ kind: 'processing' });
    const expiring = handle.executeUpdate(expireUpdate);
    await env.sleep(12_000);
    expect((await expiring).status).toBe('expired');
    slow.open();
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'expired', order: null, attempts: [expect.objectContaining({ n: 1, key: key(1), status: 'refunded' })] });
    expect((await createTestConnection({ db: mongo.db }).lookupCharge({ storeId: store._id, idempotencyKey: key(1) }))!.state).toBe('refunded');
    expect(await ordersOf(session._id)).toBe(0);
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(0);
    expect(await eventCount(session._id, 'checkout.session.expired')).toBe(1);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-late-approval-refunded');
  });

  test('an approval that lands after POST expire closed the session is refunded and its buyer told once by e-mail, though no order exists', async () => {
    const buyer = await lonelyBuyer('late-approval');
    const { session, handle, key } = await openSession(30 * MINUTE_MS, { attemptHoldMs: 10_000, customer: buyer.id });
    const slow = gate();
    faults.beforeCharge.set(key(1), slow);
    expect(await payCheckoutSession(deps({ payWaitMs: 300 }), session, CARD_OK, await env.currentTimeMs())).toEqual({ kind: 'processing' });
    const expiring = handle.executeUpdate(expireUpdate);
    await env.sleep(12_000);
    expect((await expiring).status).toBe('expired');
    slow.open();
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'expired', order: null, attempts: [expect.objectContaining({ key: key(1), status: 'refunded' })] });
    expect(await ledger().findOne({ key: key(1) })).toMatchObject({ state: 'refunded' });
    expect(await ordersOf(session._id)).toBe(0);
    // One e-mail, keyed by the attempt, to the address the buyer's record holds (not one the workflow carried).
    const mails = await lateRefundMails(session._id);
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ _id: `${handle.workflowId}/late-payment-refund/1`, status: 'sent', to: buyer.email, language: 'pt' });
    const inbox = await inboxOf(buyer.email);
    expect(inbox).toHaveLength(1);
    expect(inbox[0].Subject).toMatch(/^Seu pagamento foi devolvido: R\$/);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-late-approval-refunded-buyer-told');
  });

  test('a paid notice for a 3-D Secure the session had declined (confirmed again after it failed) is given back under its key, its buyer told once; the session stays open', async () => {
    const buyer = await lonelyBuyer('paid-decline');
    const { session, handle, key } = await openSession(30 * MINUTE_MS, { customer: buyer.id });
    faults.actionRequired.add(key(1));
    // The approved card: the provider holds the money, as Stripe does once the buyer confirms the intent again.
    expect(await payCheckoutSession(deps(), session, CARD_OK)).toMatchObject({ kind: 'action' });
    const transactionId = (await handle.query(stateQuery)).attempts[0].transaction_id!;
    const notice = {
      transactionId,
      code: null,
      message: null,
      notifyRef: handle.workflowId,
      settledAt: Math.floor((await env.currentTimeMs()) / 1000),
    };
    await handle.signal(providerSettledSignal, { ...notice, status: 'refused', code: 'payment_intent_authentication_failure', message: 'Failed.' });
    await waitFor(async () => (await handle.query(stateQuery)).attempts[0].status === 'declined', { description: 'the 3-D Secure declined' });

    // Its paid notice, twice (the event and the page's re-check): given back once, the session still open.
    await handle.signal(providerSettledSignal, { ...notice, status: 'paid' });
    await handle.signal(providerSettledSignal, { ...notice, status: 'paid' });
    await waitFor(async () => (await handle.query(stateQuery)).attempts[0].status === 'refunded', { description: 'the paid decline given back' });
    expect(await ledger().findOne({ key: key(1) })).toMatchObject({ state: 'refunded' });
    expect((await handle.query(stateQuery)).status).toBe('open');

    const final = await handle.result();
    expect(final).toMatchObject({ status: 'expired', payment_status: 'unpaid', order: null });
    expect(await ordersOf(session._id)).toBe(0);
    const mails = await lateRefundMails(session._id);
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ _id: `${handle.workflowId}/late-payment-refund/1`, status: 'sent', to: buyer.email });
    expect(await inboxOf(buyer.email)).toHaveLength(1);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-paid-decline-given-back');
  });

  test('a declined 3-D Secure paid after its session ended goes to the give-back workflow: refunded, no order, the buyer told once from the session', async () => {
    const buyer = await lonelyBuyer('ended-decline');
    const { session, handle, key } = await openSession(30 * MINUTE_MS, { customer: buyer.id });
    faults.actionRequired.add(key(1));
    expect(await payCheckoutSession(deps(), session, CARD_OK)).toMatchObject({ kind: 'action' });
    const transactionId = (await handle.query(stateQuery)).attempts[0].transaction_id!;
    const settledAt = Math.floor((await env.currentTimeMs()) / 1000);
    const notice = { transactionId, code: null, message: null, notifyRef: handle.workflowId, settledAt };
    await handle.signal(providerSettledSignal, { ...notice, status: 'refused', code: 'payment_intent_authentication_failure', message: 'Failed.' });
    await waitFor(async () => (await handle.query(stateQuery)).attempts[0].status === 'declined', { description: 'the 3-D Secure declined' });
    expect(await handle.result()).toMatchObject({ status: 'expired', order: null });

    // The provider holds the money (the intent confirmed again) and its notice finds the run ended: the endpoint starts the give-back.
    const started = await startGiveBack({ temporal: env.client, taskQueue }, { ...notice, status: 'paid' }, store._id, false);
    const outcome = await env.client.workflow.getHandle(started!).result();
    expect(outcome).toMatchObject({ status: 'given_back', orderId: null, refund: 'refunded', attempt: { sessionId: session._id, n: 1 } });
    expect(await ledger().findOne({ key: key(1) })).toMatchObject({ state: 'refunded' });
    expect(await ordersOf(session._id)).toBe(0);
    const mails = await lateRefundMails(session._id);
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ _id: `${handle.workflowId}/late-payment-refund/1`, status: 'sent', to: buyer.email });
    expect(await inboxOf(buyer.email)).toHaveLength(1);
  });

  test('a charge whose tries all fail to reach the provider is unknown, not failed: a second pay is refused meanwhile, and the same keyed request, asked again, pays once', async () => {
    const { session, handle, key } = await openSession(30 * MINUTE_MS);
    faults.failingCharges.set(key(1), 4);
    expect(await payCheckoutSession(deps(), session, CARD_OK, await env.currentTimeMs())).toEqual({ kind: 'processing' });
    expect((await handle.query(stateQuery)).attempts).toEqual([expect.objectContaining({ n: 1, key: key(1), status: 'unknown', code: null })]);
    expect(await attemptInFlight(deps(), session._id)).toBe('unknown');
    expect(await payCheckoutSession(deps({ payWaitMs: 2_000 }), session, CARD_OK, await env.currentTimeMs())).toEqual({ kind: 'processing' });

    const final = await handle.result();
    expect(final).toMatchObject({
      status: 'complete',
      payment_status: 'paid',
      attempts: [expect.objectContaining({ key: key(1), status: 'approved' })],
    });
    expect(final.attempts).toHaveLength(1);
    expect(await ledger().countDocuments({ key: { $regex: session._id } })).toBe(1);
    expect(await ordersOf(session._id)).toBe(1);
  });

  // Its last try hangs until its activity gives up, in real seconds: 33-37 s on CI, past half the 60 s default.
  test('the last try times out and the provider records it 5 s later: the attempt is unknown, no new attempt is taken, the late approval completes the session; one capture kept, one order', async () => {
    const { session, handle, key } = await openSession(30 * MINUTE_MS);
    faults.failingCharges.set(key(1), 3);
    faults.unanswered.add(key(1));
    let afterTries;
    let payAgain;
    try {
      expect(await payCheckoutSession(deps({ payWaitMs: 300 }), session, CARD_OK, await env.currentTimeMs())).toEqual({ kind: 'processing' });
      afterTries = await skipUntilTriesRunOut(handle);
      // The buyer pays again: told the payment is being confirmed, nothing new is charged.
      payAgain = await payCheckoutSession(deps({ payWaitMs: 2_000 }), session, CARD_OK, await env.currentTimeMs());
      await env.sleep(5_000);
      await recordLastTry(key(1));
    } finally {
      faults.unanswered.delete(key(1));
    }

    const final = await handle.result();
    await expectCapturesKept(session._id, 1);
    expect(await ordersOf(session._id)).toBe(1);
    expect(afterTries).toMatchObject({ key: key(1), status: 'unknown' });
    expect(payAgain).toEqual({ kind: 'processing' });
    expect(final).toMatchObject({
      status: 'complete',
      payment_status: 'paid',
      attempts: [expect.objectContaining({ key: key(1), status: 'approved' })],
    });
    expect(final.attempts).toHaveLength(1);
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(1);
    // The timed-out try was stopped when its activity was given up, not left running unobserved.
    await waitFor(() => (faults.givenUp.get(key(1)) ?? 0) >= 1, { description: 'the timed-out try to see its cancellation' });
    await recordHistory(env.client, handle.workflowId, 'checkout-session-unknown-attempt-approved-late');
  }, 90_000);

  // Its last try hangs until its activity gives up, in real seconds: 33-37 s on CI, past half the 60 s default.
  test('the merchant expires the session during the last try, which times out and is recorded by the provider 5 s later: a minute after the close the session looks it up again and refunds it (attempt refunded, no order)', async () => {
    const { session, handle, key } = await openSession(30 * MINUTE_MS, { attemptHoldMs: 10_000 });
    faults.failingCharges.set(key(1), 3);
    faults.unanswered.add(key(1));
    let expiredAt: number;
    try {
      expect(await payCheckoutSession(deps({ payWaitMs: 300 }), session, CARD_OK, await env.currentTimeMs())).toEqual({ kind: 'processing' });
      await waitFor(() => faults.lastTry.has(key(1)), { description: 'the last try to reach the provider' });
      const expiring = handle.executeUpdate(expireUpdate);
      await env.sleep(12_000);
      expect((await expiring).status).toBe('expired');
      expiredAt = await env.currentTimeMs();
      await skipUntilTriesRunOut(handle);
      await env.sleep(5_000);
      await recordLastTry(key(1));
    } finally {
      faults.unanswered.delete(key(1));
    }

    const final = await handle.result();
    await expectCapturesKept(session._id, 0);
    expect(final).toMatchObject({ status: 'expired', order: null, attempts: [expect.objectContaining({ key: key(1), status: 'refunded' })] });
    // Found by the closed session's first re-check, not by a try (none is made once the session closes).
    expect((await handle.describe()).closeTime!.getTime() - expiredAt).toBeGreaterThanOrEqual(MINUTE_MS - 10_000);
    expect((await createTestConnection({ db: mongo.db }).lookupCharge({ storeId: store._id, idempotencyKey: key(1) }))!.state).toBe('refunded');
    expect(await ordersOf(session._id)).toBe(0);
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(0);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-unknown-attempt-refunded-after-expiry');
  }, 90_000);

  test('three pay updates at once: one attempt runs, the others are refused as payment in progress (or find the session complete); one charge, one order', async () => {
    const { session, handle } = await openSession(30 * MINUTE_MS);
    const now = await env.currentTimeMs();
    const results = await Promise.all([1, 2, 3].map(() => payCheckoutSession(deps(), session, CARD_OK, now)));
    expect(results.filter((r) => r.kind === 'done')).toHaveLength(1);
    expect(results.every((r) => r.kind === 'done' || r.kind === 'processing' || r.kind === 'closed')).toBe(true);
    expect((await handle.result()).attempts).toHaveLength(1);
    expect(await ledger().countDocuments({ key: { $regex: session._id } })).toBe(1);
    expect(await ordersOf(session._id)).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.completed')).toBe(1);
  });

  test('three pay updates sent before any worker runs the session (delivered together): the validator lets one through, the others are refused as payment_in_progress', async () => {
    const laterQueue = uniqueTaskQueue('checkout-one-activation');
    const now = await env.currentTimeMs();
    const session = await createCheckoutSession(
      { ...deps(), taskQueue: laterQueue },
      store,
      { offer: catalog.oneOff._id, customer: customerId, expires_at: Math.floor((now + 30 * MINUTE_MS) / 1000) },
      now,
    );
    const handle = env.client.workflow.getHandle(checkoutSessionWorkflowId(session._id));
    const tokenized = await createTestConnection({ db: mongo.db }).tokenizeCard({ storeId: store._id, card: { number: '4242424242424242' } });
    if (!tokenized.ok) throw new Error('tokenize failed');
    const request: PayInput = {
      method: 'card',
      cardToken: tokenized.token,
      amounts: { currency: 'brl', quantity: 1, unit_amount: 19700, amount_subtotal: 19700, amount_discount: 0, amount_total: 19700 },
      installments: 1,
      description: catalog.oneOff.name,
      customerId,
      customerEmail: 'clock@example.com',
      providerCustomerId: null,
      newBuyer: null,
      trial: false,
      saveCard: false,
    };
    const outcomes = [1, 2, 3].map(() =>
      handle.executeUpdate(payUpdate, { args: [request] }).then(
        (answer) => answer.attempt.status,
        (error: unknown) => (error instanceof WorkflowUpdateFailedError ? (error.cause as { type?: string })?.type : String(error)),
      ),
    );
    // The three are sent before a worker exists (bundling its workflow code takes a while), so the
    // workflow's first task carries them together: validators and handlers run job after job.
    const late = await createBillingWorker({
      connection: env.nativeConnection,
      taskQueue: laterQueue,
      db: mongo.db,
      temporal: env.client,
      activityDeps: { provider: faultyProvider() },
    });
    // The worker runs until the session's run has ended (its purchase e-mail included): a workflow task
    // left on a queue nobody polls would hold the test server's clock for every later test.
    const results = await late.runUntil(async () => {
      const answers = await Promise.all(outcomes);
      await handle.result();
      return answers;
    });
    expect(results.sort()).toEqual(['approved', PAYMENT_IN_PROGRESS_FAILURE, PAYMENT_IN_PROGRESS_FAILURE]);
    expect(await ledger().countDocuments({ key: { $regex: session._id } })).toBe(1);
    expect(await ordersOf(session._id)).toBe(1);
  });

  test('a PIX cancel at its expiry failing past its retry policy (12 failures) is asked again later, never assumed: the PIX expires once', async () => {
    const { session, handle, key } = await payPix();
    // The activity tries 10 times: the first round fails, the workflow waits, the second round succeeds.
    faults.failingCancels.set(key(1), 12);

    const final = await handle.result();
    expect(final).toMatchObject({ status: 'complete', payment_status: 'unpaid', settlement: 'expired', problem: null });
    expect(faults.failingCancels.get(key(1))).toBe(0);
    expect(faults.cancels.get(key(1))).toBe(1);
    expect(await eventCount(session._id, 'checkout.session.async_payment_failed')).toBe(1);
  });

  test('at a PIX expiry the provider confirms the cancel first: the order is canceled and a payment after it is refused by the provider (no capture)', async () => {
    const { session, handle, key } = await payPix();
    const transactionId = (await handle.query(stateQuery)).transaction_id!;
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'complete', payment_status: 'unpaid', settlement: 'expired' });
    expect(faults.cancels.get(key(1))).toBe(1);
    // The buyer pays a second after the cancel: the provider no longer takes it.
    const late = await createTestConnection({ db: mongo.db }).settle({ storeId: store._id, transactionId, outcome: 'paid' });
    expect(late.ok).toBe(false);
    const doc = (await findCheckoutSession(mongo.db, store._id, session._id))!;
    expect((await findOrder(mongo.db, store._id, doc.order!))!.status).toBe('canceled');
    expect((await ledger().findOne({ key: key(1) }))!.state).toBe('expired');
  });

  test('a PIX paid in the last second before the cancel: the cancel answers it succeeded and the order is paid, nothing given back', async () => {
    const { session, handle, key } = await payPix();
    const transactionId = (await handle.query(stateQuery)).transaction_id!;
    // Paid just before the cancel reaches the provider; its notice is lost.
    faults.beforeCancel.set(key(1), () => createTestConnection({ db: mongo.db }).settle({ storeId: store._id, transactionId, outcome: 'paid' }));
    const final = await handle.result();
    expect(final).toMatchObject({ status: 'complete', payment_status: 'paid', settlement: 'paid' });
    const doc = (await findCheckoutSession(mongo.db, store._id, session._id))!;
    expect((await findOrder(mongo.db, store._id, doc.order!))!.status).toBe('paid');
    expect(await eventCount(session._id, 'checkout.session.async_payment_succeeded')).toBe(1);
    await expectCapturesKept(session._id, 1);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-pix-paid-before-fence');
  });

  test('a review whose daily lookup keeps failing stays pending and waiting: the provider notice still settles it as paid', async () => {
    const { session, handle, key } = await openSession(2 * 60 * MINUTE_MS);
    expect(await payCheckoutSession(deps(), session, CARD_REVIEW, await env.currentTimeMs())).toEqual({ kind: 'done' });
    faults.failingLookups.set(key(1), 1_000_000);

    await env.sleep(DAY_MS + 30 * MINUTE_MS);
    const waiting = await handle.query(stateQuery);
    expect(waiting).toMatchObject({ status: 'complete', payment_status: 'pending', problem: { step: 'check_transaction', nonRetryable: false } });
    expect(waiting.problem!.failures).toBeGreaterThanOrEqual(1);

    const pending = (await findCheckoutSession(mongo.db, store._id, session._id))!;
    expect(await settleFromHostedPage(deps(), pending, 'paid')).toBe(true);
    expect(await handle.result()).toMatchObject({ status: 'complete', payment_status: 'paid', settlement: 'paid' });
    faults.failingLookups.delete(key(1));
    expect(await eventCount(session._id, 'checkout.session.async_payment_succeeded')).toBe(1);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-review-paid-by-notice');
  });

  test('a review whose notice is lost is settled by the daily lookup by key: paid within a day of the provider settling it', async () => {
    const { session, handle, key } = await openSession(2 * 60 * MINUTE_MS);
    expect(await payCheckoutSession(deps(), session, CARD_REVIEW, await env.currentTimeMs())).toEqual({ kind: 'done' });
    const transactionId = (await handle.query(stateQuery)).transaction_id!;
    // The provider settles it, but its notice never arrives.
    expect((await createTestConnection({ db: mongo.db }).settle({ storeId: store._id, transactionId, outcome: 'paid' })).ok).toBe(true);
    const settledFrom = await env.currentTimeMs();

    const final = await handle.result();
    expect(final).toMatchObject({
      status: 'complete',
      payment_status: 'paid',
      settlement: 'paid',
      attempts: [expect.objectContaining({ key: key(1), status: 'review' })],
    });
    expect((await handle.describe()).closeTime!.getTime() - settledFrom).toBeLessThanOrEqual(DAY_MS + MINUTE_MS);
    const doc = (await findCheckoutSession(mongo.db, store._id, session._id))!;
    expect((await findOrder(mongo.db, store._id, doc.order!))!.status).toBe('paid');
    expect(await eventCount(session._id, 'checkout.session.async_payment_succeeded')).toBe(1);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-review-paid-by-lookup');
  });

  test('a review left unsettled for the whole window counts as refused at its end: voided at the provider, order failed, async_payment_failed', async () => {
    const { session, handle, key } = await openSession(2 * 60 * MINUTE_MS);
    expect(await payCheckoutSession(deps(), session, CARD_REVIEW, await env.currentTimeMs())).toEqual({ kind: 'done' });
    const startedAt = await env.currentTimeMs();
    await env.sleep(REVIEW_WINDOW_MS - DAY_MS / 2);
    expect((await handle.query(stateQuery)).payment_status).toBe('pending');

    const final = await handle.result();
    expect(final).toMatchObject({
      status: 'complete',
      payment_status: 'unpaid',
      settlement: 'refused',
      attempts: [expect.objectContaining({ key: key(1), status: 'voided' })],
    });
    const closedAt = (await handle.describe()).closeTime!.getTime();
    expect(closedAt - startedAt).toBeGreaterThanOrEqual(REVIEW_WINDOW_MS - MINUTE_MS);
    expect(closedAt - startedAt).toBeLessThan(REVIEW_WINDOW_MS + 10 * MINUTE_MS);
    expect((await createTestConnection({ db: mongo.db }).lookupCharge({ storeId: store._id, idempotencyKey: key(1) }))!.state).toBe('voided');
    const doc = (await findCheckoutSession(mongo.db, store._id, session._id))!;
    expect((await findOrder(mongo.db, store._id, doc.order!))!.status).toBe('failed');
    expect(await eventCount(session._id, 'checkout.session.async_payment_failed')).toBe(1);
    await recordHistory(env.client, handle.workflowId, 'checkout-session-review-window-refused');
  });

  test('a subscription hand-off refused on a data problem (offer missing) is surfaced, not fatal, and succeeds once the data is back', async () => {
    const offers = collections(mongo.db).offers;
    const { session, handle } = await openSession(30 * MINUTE_MS, { offer: catalog.monthly._id });
    // The offer disappears from the store after the session was created (an operator's mistake).
    await offers.updateOne({ _id: catalog.monthly._id }, { $set: { store_id: 'st_elsewhere' } });
    try {
      expect(await payCheckoutSession(deps(), session, CARD_OK, await env.currentTimeMs())).toEqual({ kind: 'done' });
      const stuck = await waitFor(
        async () => {
          const state = await handle.query(stateQuery);
          return state.problem?.type === 'subscription_inputs_missing' ? state : null;
        },
        { description: 'the hand-off problem to be surfaced' },
      );
      expect(stuck).toMatchObject({
        status: 'complete',
        payment_status: 'paid',
        subscription: null,
        problem: { step: 'create_subscription', nonRetryable: true },
      });
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
