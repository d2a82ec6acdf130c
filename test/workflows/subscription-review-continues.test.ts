// What this tests: a subscription whose renewal is in review (card 4000 0000 0000 4954) continues as new
// when its run grows long (MESSAGES_PER_RUN one-off charges through the subscription's charge update, as
// the charge workflow's activity sends them: Temporal suggests a new run at ~4,096 events, before the
// run's own count, so the review may cross more than one boundary) and each next run waits on the same
// review: paid by the provider's notice it credits the period once (one paid renewal order, one
// invoice.paid); refused it goes past_due as before; a notice the old run takes while it drains is
// carried, not lost; a lost notice is looked up at the time the old run had set. Runs on the
// time-skipping server with the real activities, FerretDB and the test payment connection.
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal as proto } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { searchAttributes, testServerPath } from '../../temporal-dev/servers';
import { createBillingWorker, workflowsPath } from '../../worker/main';
import { disabledMailer } from '../../adapters/email/smtp';
import { createTestConnection } from '../../adapters/provider/test-connection';
import type { PaymentProvider, ProviderNotice } from '../../adapters/provider/types';
import { ensureIndexes } from '../../store/indexes';
import { createStore } from '../../store/stores';
import { collections, type StoreDoc } from '../../store/collections';
import { findSubscription, type SubscriptionDoc } from '../../store/subscriptions';
import { ordersCollection } from '../../store/orders';
import { paymentMethodOf } from '../../services/subscriptions/subscriptions';
import {
  changePaymentMethodUpdate,
  subscriptionProviderSettledSignal,
  subscriptionStateQuery,
  subscriptionWorkflowId,
} from '../../workflows/subscription/messages';
import { MESSAGES_PER_RUN } from '../../workflows/lib/run-length';
import { testMongo, uniqueTaskQueue, waitFor, type TestMongo } from '../support/env';
import { recordHistory } from '../support/histories';
import { chargeAsTheActivityDoes, continuedFrom, inLanes, oneOffCharge, runContinuedFrom, type ActivityCharging } from '../support/long-runs';
import { seedCatalog, seedSubscription, type TestCatalog } from '../support/subscriptions';

/** Charges in flight at once: the server admits 10 updates in flight per workflow. */
const CONCURRENCY = 8;
/** The amount of the one-off charge the provider holds until the test lets it go. */
const HELD_AMOUNT = 4_242;
const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
const EventType = proto.api.enums.v1.EventType;
type History = proto.api.history.v1.IHistory;

let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let worker: Worker;
let running: Promise<void>;
let store: StoreDoc;
let catalog: TestCatalog;
/** Set while the held charge waits at the provider: calling it lets the charge through. */
let releaseHeld: (() => void) | null = null;
const taskQueue = uniqueTaskQueue('subscription-review-continues');

/** The test connection, except that a one-off charge of HELD_AMOUNT waits at the provider until released. */
function holdingOneCharge(inner: PaymentProvider): PaymentProvider {
  return {
    ...inner,
    async chargeSavedCard(input) {
      if (input.amount === HELD_AMOUNT) {
        await new Promise<void>((resolve) => (releaseHeld = resolve));
        releaseHeld = null;
      }
      return inner.chargeSavedCard(input);
    },
  };
}

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: testServerPath() } } });
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(searchAttributes.map((name) => [name, proto.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
  });
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  store = await createStore(mongo.db, { name: 'Review Run Store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  catalog = await seedCatalog(mongo.db, store._id);
  // A thousand purchase confirmations are not what this tests: e-mail is off, as SMTP_URL=disabled has it.
  const provider = holdingOneCharge(createTestConnection({ db: mongo.db }));
  worker = await createBillingWorker({
    connection: env.nativeConnection,
    taskQueue,
    db: mongo.db,
    temporal: env.client,
    activityDeps: { mailer: disabledMailer(), provider },
  });
  running = worker.run();
});

afterAll(async () => {
  releaseHeld?.();
  worker?.shutdown();
  await running?.catch(() => undefined);
  await env?.teardown();
  await mongo?.close();
});

const provider = () => createTestConnection({ db: mongo.db });
const handle = (id: string, runId?: string) => env.client.workflow.getHandle(subscriptionWorkflowId(id), runId);
const reload = async (id: string) => (await findSubscription(mongo.db, store._id, id))!;
const until = (id: string, test: (doc: SubscriptionDoc) => boolean, description: string) =>
  waitFor(async () => ((doc) => (test(doc) ? doc : null))(await reload(id)), { timeoutMs: 20_000, description });
const renewalOrders = (id: string) =>
  ordersCollection(mongo.db).find({ store_id: store._id, subscription: id, billing_reason: 'renewal' }).sort({ _id: 1 }).toArray();

const charging = (): ActivityCharging => ({ temporal: env.client, taskQueue, db: mongo.db });

async function saveCard(sub: SubscriptionDoc, number: string) {
  const saved = await provider().saveCard({ storeId: store._id, customerId: sub.customer, card: { number } });
  if (!saved.ok) throw new Error('card not saved');
  await handle(sub._id).executeUpdate(changePaymentMethodUpdate, { args: [{ payment_method: paymentMethodOf(saved.card)! }] });
}

/**
 * A monthly subscription whose second cycle's renewal is in review (4954), its card then swapped back
 * to an approving one for the one-off charges; with the run that waits on the review.
 */
async function renewingInReview() {
  const sub = await seedSubscription(
    { db: mongo.db, temporal: env.client, taskQueue },
    { store, offer: catalog.monthly, product: catalog.product, now: await env.currentTimeMs() },
  );
  const paid = await until(sub._id, (d) => d.cycles_completed === 1, 'first charge');
  await saveCard(sub, '4000000000004954');
  await env.sleep(paid.current_period_end! * 1000 - (await env.currentTimeMs()) + 60_000);
  const awaiting = await waitFor(async () => (await handle(sub._id).query(subscriptionStateQuery)).awaitingSettlement, {
    description: 'renewal in review',
  });
  await saveCard(sub, '4242424242424242');
  const reviewRun = (await handle(sub._id).describe()).runId;
  return { sub: await reload(sub._id), paid, awaiting, reviewRun };
}

/** Sends one-off charges until the run waiting on the review has continued as new; returns how many. */
async function chargeUntilContinued(sub: SubscriptionDoc, reviewRun: string): Promise<number> {
  const results = await inLanes(MESSAGES_PER_RUN, CONCURRENCY, (i) => chargeAsTheActivityDoes(charging(), oneOffCharge('review-run', sub, i)));
  expect(results.filter((r) => r.outcome === 'approved')).toHaveLength(MESSAGES_PER_RUN);
  await waitFor(async () => (await handle(sub._id).describe()).runId !== reviewRun, { description: 'the run in review continued as new' });
  return results.length;
}

const lastEvent = async (id: string, runId: string) => (await handle(id, runId).fetchHistory()).events!.at(-1)!;
/** The provider notices signalled to one run, as its history holds them. */
const noticesSignalled = (history: History): ProviderNotice[] =>
  history
    .events!.filter(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED &&
        e.workflowExecutionSignaledEventAttributes?.signalName === 'providerSettled',
    )
    .map((e) => JSON.parse(Buffer.from(e.workflowExecutionSignaledEventAttributes!.input!.payloads![0].data!).toString()) as ProviderNotice);

async function invoiceEvents(orderId: string): Promise<string[]> {
  const events = await collections(mongo.db).events.find({ store_id: store._id, api_version: '2026-11-01' }).toArray();
  return events
    .filter((e) => (JSON.parse(e.data_json) as { object: { id: string } }).object.id === orderId)
    .map((e) => e.type)
    .filter((t) => t.startsWith('invoice.'));
}

async function settleAtProvider(transactionId: string, outcome: 'paid' | 'refused'): Promise<ProviderNotice> {
  const settled = await provider().settle({ storeId: store._id, transactionId, outcome });
  if (!settled.ok) throw new Error(settled.reason);
  return settled.notice;
}

it('a renewal in review continues as new past the run length; paid by the notice to the new run, the period is credited once', async () => {
  const { sub, paid, awaiting, reviewRun } = await renewingInReview();
  await chargeUntilContinued(sub, reviewRun);
  expect((await lastEvent(sub._id, reviewRun)).eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW);
  // The new run waits on the same review; nothing was settled or charged again meanwhile.
  expect((await handle(sub._id).query(subscriptionStateQuery)).awaitingSettlement).toEqual(awaiting);
  expect((await renewalOrders(sub._id)).map((o) => o.status)).toEqual(['paid', 'pending']);

  await handle(sub._id).signal(subscriptionProviderSettledSignal, await settleAtProvider(awaiting!.transactionId, 'paid'));
  const renewed = await until(sub._id, (d) => d.cycles_completed === 2, 'renewal paid after the run continued');
  expect({ status: renewed.status, start: renewed.current_period_start }).toEqual({ status: 'active', start: paid.current_period_end });
  const orders = await renewalOrders(sub._id);
  expect(orders.map((o) => o.status)).toEqual(['paid', 'paid']);
  await waitFor(async () => (await invoiceEvents(orders[1]._id)).length > 0, { description: 'invoice.paid' });
  expect(await invoiceEvents(orders[1]._id)).toEqual(['invoice.paid']);
  const ledger = await mongo.db
    .collection('provider_test_charges')
    .find({ store_id: store._id, key: { $regex: `^renewal/${sub._id}/` } })
    .toArray();
  expect(ledger.map((e) => e.key).sort()).toEqual([`renewal/${sub._id}/1/0`, `renewal/${sub._id}/2/0`]);
  expect((await handle(sub._id).query(subscriptionStateQuery)).awaitingSettlement).toBeNull();

  // Both runs replay on today's code: the one that carried the review and the one that settled it.
  await Worker.runReplayHistory(
    { workflowsPath, replayName: 'review-carried' },
    await handle(sub._id, reviewRun).fetchHistory(),
    subscriptionWorkflowId(sub._id),
  );
}, 300_000);

it('a renewal in review carried to the new run and refused there makes the subscription past_due as before', async () => {
  const { sub, awaiting, reviewRun } = await renewingInReview();
  await chargeUntilContinued(sub, reviewRun);
  expect((await handle(sub._id).query(subscriptionStateQuery)).awaitingSettlement).toEqual(awaiting);

  await handle(sub._id).signal(subscriptionProviderSettledSignal, await settleAtProvider(awaiting!.transactionId, 'refused'));
  const failed = await until(sub._id, (d) => d.status === 'past_due', 'refused after the run continued');
  expect({ attempts: failed.past_due_details?.attempts, cycles: failed.cycles_completed }).toEqual({ attempts: 1, cycles: 1 });
  const orders = await renewalOrders(sub._id);
  expect(orders.map((o) => o.status)).toEqual(['paid', 'failed']);
  await waitFor(async () => (await invoiceEvents(orders[1]._id)).length > 0, { description: 'invoice.payment_failed' });
  expect(await invoiceEvents(orders[1]._id)).toEqual(['invoice.payment_failed']);
}, 300_000);

/** The run's review wait was woken before its check (its timer canceled): the run is draining to continue as new. */
function reviewWaitStopped(history: History): boolean {
  const started = history.events!.filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED).at(-1);
  return history.events!.some(
    (e) => e.eventType === EventType.EVENT_TYPE_TIMER_CANCELED && String(e.timerCanceledEventAttributes?.startedEventId) === String(started?.eventId),
  );
}

/** Re-sent notices of other transactions fill the run quickly (each counts as a message and changes nothing). */
async function fillWithStaleNotices(sub: SubscriptionDoc): Promise<void> {
  for (let i = 0; i < MESSAGES_PER_RUN; i++) {
    const stale: ProviderNotice = { transactionId: `stale-${i}`, status: 'refused', code: null, message: null, notifyRef: null, settledAt: 0 };
    await handle(sub._id).signal(subscriptionProviderSettledSignal, stale);
  }
}

const activityTypes = (history: History) => history.events!.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);

it('a notice the old run takes while it drains goes with the review to the new run, which settles it without asking the provider', async () => {
  const { sub, awaiting, reviewRun } = await renewingInReview();
  // A one-off charge held at the provider keeps the run's handlers busy, so the drain waits on it.
  const held = chargeAsTheActivityDoes(charging(), oneOffCharge('review-run', sub, 0, HELD_AMOUNT));
  await waitFor(() => releaseHeld !== null, { description: 'the held charge at the provider' });
  await fillWithStaleNotices(sub);
  await waitFor(async () => reviewWaitStopped(await handle(sub._id, reviewRun).fetchHistory()), {
    description: 'the run in review draining',
    timeoutMs: 30_000,
  });

  await handle(sub._id).signal(subscriptionProviderSettledSignal, await settleAtProvider(awaiting!.transactionId, 'paid'));
  await waitFor(
    async () => noticesSignalled(await handle(sub._id, reviewRun).fetchHistory()).some((n) => n.transactionId === awaiting!.transactionId),
    { description: 'the notice taken by the draining run' },
  );
  releaseHeld!();
  expect((await held).outcome).toBe('approved');

  // No time is skipped here: a notice lost at the boundary would wait for the next day's lookup.
  const renewed = await until(sub._id, (d) => d.cycles_completed === 2, 'renewal paid by the carried notice');
  expect(renewed.status).toBe('active');
  expect((await lastEvent(sub._id, reviewRun)).eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW);
  const next = await runContinuedFrom(env.client, subscriptionWorkflowId(sub._id), reviewRun);
  expect(noticesSignalled(next).map((n) => n.transactionId)).not.toContain(awaiting!.transactionId);
  expect(activityTypes(next)).not.toContain('lookupReview');
  const orders = await renewalOrders(sub._id);
  expect(orders.map((o) => o.status)).toEqual(['paid', 'paid']);
  await waitFor(async () => (await invoiceEvents(orders[1]._id)).length > 0, { description: 'invoice.paid' });
  expect(await invoiceEvents(orders[1]._id)).toEqual(['invoice.paid']);
  // The resumed run continues as new for its paid cycle, handing on no review.
  await waitFor(async () => continuedFrom(await handle(sub._id).fetchHistory()) !== reviewRun, { description: 'the paid cycle continued as new' });
  expect((await handle(sub._id).query(subscriptionStateQuery)).awaitingSettlement).toBeNull();
  // The paid cycle's run, the run that resumed the carried review, the run that carried it.
  await recordHistory(env.client, subscriptionWorkflowId(sub._id), 'subscription-review-carried-across-continue-as-new');
}, 300_000);

it('a notice lost after the run continued is found by the lookup the old run had scheduled, not a day after the new run began', async () => {
  const { sub, awaiting, reviewRun } = await renewingInReview();
  const reviewBegan = await env.currentTimeMs();
  await env.sleep(12 * HOUR_MS);
  await fillWithStaleNotices(sub);
  await waitFor(async () => (await handle(sub._id).describe()).runId !== reviewRun, { description: 'the run in review continued as new' });
  await settleAtProvider(awaiting!.transactionId, 'paid');

  // The old run's first lookup was due a day after the review began: 12 hours on, not 24.
  await env.sleep(reviewBegan + DAY_MS + 60_000 - (await env.currentTimeMs()));
  const renewed = await until(sub._id, (d) => d.cycles_completed === 2, 'renewal found paid by the carried lookup');
  expect(renewed.status).toBe('active');
  expect((await renewalOrders(sub._id)).map((o) => o.status)).toEqual(['paid', 'paid']);
  expect(activityTypes(await runContinuedFrom(env.client, subscriptionWorkflowId(sub._id), reviewRun))).toContain('lookupReview');
}, 300_000);
