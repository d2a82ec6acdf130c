// What this tests: the subscription workflow owning time on the time-skipping server, with its
// activities running for real against FerretDB and the test payment connection: a year of monthly
// renewals, trial end approved and declined, dunning retries then recovery or expiry, scheduled
// cancellation, cycle limit, pause and resume, renewals in review (paid while paused, paid after a
// cancellation, a lost notice looked up by key, the window's end) and a one-off charge's lost notice,
// and a charge in review whose provider notice arrives before the charge activity has returned (last:
// its worker stops, and time no longer skips past its workflow).
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal as proto } from '@temporalio/proto';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testServerPath } from '../../temporal-dev/servers';
import { searchAttributes } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { collections } from '../../store/collections';
import { ensureIndexes } from '../../store/indexes';
import { createStore } from '../../store/stores';
import { createTestConnection } from '../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../adapters/provider/types';
import { findSubscription, type SubscriptionDoc } from '../../store/subscriptions';
import { ordersCollection } from '../../store/orders';
import { createOffer } from '../../store/catalog';
import { paymentMethodOf } from '../../services/subscriptions/subscriptions';
import { addMonths, periodEnd } from '../../domain/billing-periods';
import { startCharge } from '../../services/charges/charges';
import { chargesCollection } from '../../store/subscription-charges';
import { merchantChargeKey } from '../../domain/charges';
import {
  cancelUpdate,
  changeOfferUpdate,
  changePaymentMethodUpdate,
  pauseUpdate,
  resumeUpdate,
  scheduleCancellationUpdate,
  subscriptionProviderSettledSignal,
  subscriptionStateQuery,
  subscriptionWorkflowId,
} from '../../workflows/subscription/messages';
import { testMongo, uniqueTaskQueue, waitFor, type TestMongo } from '../support/env';
import { recordHistory } from '../support/histories';
import { seedCatalog, seedSubscription, type TestCatalog } from '../support/subscriptions';
import type { StoreDoc } from '../../store/collections';

const DAY_MS = 24 * 60 * 60 * 1000;

let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let worker: Worker;
let running: Promise<void>;
let store: StoreDoc;
let catalog: TestCatalog;
const taskQueue = uniqueTaskQueue('subscription-life');

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: testServerPath() } },
  });
  // The dev server registers these at start; the time-skipping server needs telling.
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(searchAttributes.map((name) => [name, proto.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
  });
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  store = await createStore(mongo.db, { name: 'Life Store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  catalog = await seedCatalog(mongo.db, store._id);
  worker = await createBillingWorker({ connection: env.nativeConnection, taskQueue, db: mongo.db, temporal: env.client });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await env?.teardown();
  await mongo?.close();
});

const deps = () => ({ db: mongo.db, temporal: env.client, taskQueue });

async function subscribe(offerKey: keyof TestCatalog, card?: string | null): Promise<SubscriptionDoc> {
  const offer = catalog[offerKey] as (typeof catalog)['monthly'];
  const product =
    offer.product_id === catalog.product._id ? catalog.product : offer.product_id === catalog.sibling._id ? catalog.sibling : catalog.stranger;
  // Dated in the test server's time, which runs ahead of the wall clock as earlier tests skip it.
  return seedSubscription(deps(), { store, offer, product, card, now: await env.currentTimeMs() });
}

const reload = async (id: string) => (await findSubscription(mongo.db, store._id, id))!;

function until(id: string, test: (doc: SubscriptionDoc) => boolean, description: string, timeoutMs = 20_000) {
  return waitFor(
    async () => {
      const doc = await reload(id);
      return test(doc) ? doc : null;
    },
    { timeoutMs, description },
  );
}

const ordersOf = (subscriptionId: string) =>
  ordersCollection(mongo.db).find({ store_id: store._id, subscription: subscriptionId }).sort({ _id: 1 }).toArray();

async function eventTypesOf(subscriptionId: string): Promise<string[]> {
  const events = await collections(mongo.db).events.find({ store_id: store._id }).sort({ _id: 1 }).toArray();
  return events
    .filter((e) => e.api_version === '2026-11-01')
    .filter((e) => {
      const object = (JSON.parse(e.data_json) as { object: { id: string; subscription?: string } }).object;
      return object.id === subscriptionId || object.subscription === subscriptionId;
    })
    .map((e) => e.type);
}

const handle = (id: string) => env.client.workflow.getHandle(subscriptionWorkflowId(id));

describe('renewals', () => {
  it('a monthly subscription renews 12 times over a year of skipped time, each renewal a paid renewal order', async () => {
    const started = performance.now();
    const sub = await subscribe('monthly');
    const first = await until(sub._id, (d) => d.cycles_completed === 1, 'first charge');
    await env.sleep(365 * DAY_MS + DAY_MS);
    const after = await until(sub._id, (d) => d.cycles_completed === 13, '13 cycles');
    console.log(`a year of monthly renewals took ${Math.round(performance.now() - started)} ms of wall time`);

    let expectedEnd = first.current_period_end!;
    for (let i = 0; i < 12; i++) expectedEnd = periodEnd(expectedEnd, 'monthly', null, first.billing_anchor_day!);
    expect(after.status).toBe('active');
    expect(after.current_period_end).toBe(expectedEnd);
    expect(after.current_period_end).toBe(addMonths(first.current_period_start!, 13));
    expect(after.next_billing_at).toBe(after.current_period_end);

    const orders = await ordersOf(sub._id);
    expect(orders).toHaveLength(13);
    expect(orders.every((o) => o.status === 'paid' && o.billing_reason === 'renewal' && o.amount_total === 4990 && o.livemode === false)).toBe(true);
    const types = await eventTypesOf(sub._id);
    expect(types.filter((t) => t === 'invoice.paid')).toHaveLength(13);
    expect(types.filter((t) => t === 'customer.subscription.updated')).toHaveLength(13);
    expect(types[0]).toBe('customer.subscription.created');
  });

  it('a custom 10-day cycle renews every 10 days', async () => {
    const sub = await subscribe('custom');
    const first = await until(sub._id, (d) => d.cycles_completed === 1, 'first charge');
    await env.sleep(31 * DAY_MS);
    const after = await until(sub._id, (d) => d.cycles_completed === 4, '4 cycles');
    expect(after.current_period_end).toBe(first.current_period_end! + 30 * 86_400);
  });
});

describe('trial end', () => {
  it('an approved charge at trial end makes the subscription active with its first period starting at trial_end', async () => {
    const sub = await subscribe('trial');
    expect(sub.status).toBe('trialing');
    expect(sub.next_billing_at).toBe(sub.trial_end);
    await env.sleep(8 * DAY_MS);
    const after = await until(sub._id, (d) => d.status === 'active', 'active after trial');
    expect(after.cycles_completed).toBe(1);
    expect(after.current_period_start).toBe(sub.trial_end);
    expect(after.current_period_end).toBe(periodEnd(sub.trial_end!, 'monthly'));
  });

  it('a declined charge at trial end gives past_due with 1 failed attempt and a retry one day later', async () => {
    const sub = await subscribe('trial', '4000000000000002');
    await env.sleep(7 * DAY_MS + 60_000);
    const after = await until(sub._id, (d) => d.status === 'past_due', 'past_due after trial');
    expect(after.past_due_details).toEqual({
      attempts: 1,
      since: expect.any(Number),
      next_retry_at: after.past_due_details!.since + 86_400,
      // The decline's own reason, for the merchant (issue 38).
      failure_code: 'card_declined',
    });
    const orders = await ordersOf(sub._id);
    expect(orders.map((o) => o.status)).toEqual(['failed']);
    expect(await eventTypesOf(sub._id)).toContain('invoice.payment_failed');
  });
});

describe('dunning', () => {
  it('retries 1 and 3 days after the failure; a new card retries at once and recovers to active', async () => {
    const sub = await subscribe('monthly', '4000000000000341');
    const failed = await until(sub._id, (d) => d.status === 'past_due', 'past_due');
    const since = failed.past_due_details!.since;
    expect(failed.past_due_details!.next_retry_at).toBe(since + 86_400);

    await env.sleep(DAY_MS + 60_000);
    const second = await until(sub._id, (d) => d.past_due_details?.attempts === 2, 'second failure');
    expect(second.past_due_details!.next_retry_at).toBe(since + 3 * 86_400);

    // The buyer saves a working card (the portal's change_payment_method): the retry happens at once.
    const provider = createTestConnection({ db: mongo.db });
    const saved = await provider.saveCard({ storeId: store._id, customerId: sub.customer, card: { number: '4242424242424242' } });
    if (!saved.ok) throw new Error('card not saved');
    const changed = await handle(sub._id).executeUpdate(changePaymentMethodUpdate, { args: [{ payment_method: paymentMethodOf(saved.card)! }] });
    expect(changed.default_payment_method).toEqual({ id: saved.card.paymentMethodId, type: 'card' });
    const recovered = await until(sub._id, (d) => d.status === 'active', 'recovered');
    expect(recovered.past_due_details).toBeNull();
    expect(recovered.cycles_completed).toBe(1);
    // The recovered period keeps the original schedule: it starts when the failed charge was due.
    expect(recovered.current_period_start).toBe(sub.next_billing_at);
    const orders = await ordersOf(sub._id);
    expect(orders.map((o) => o.status)).toEqual(['failed', 'failed', 'paid']);
    await recordHistory(env.client, subscriptionWorkflowId(sub._id), 'subscription-dunning-recovered');
  });

  it('expires after the last retry fails, with ended_at and customer.subscription.deleted', async () => {
    const sub = await subscribe('monthly', '4000000000009995');
    const failed = await until(sub._id, (d) => d.status === 'past_due', 'past_due');
    await env.sleep(6 * DAY_MS);
    const expired = await until(sub._id, (d) => d.status === 'expired', 'expired');
    expect(expired.ended_at).toBe(failed.past_due_details!.since + 5 * 86_400);
    expect(expired.next_billing_at).toBeNull();
    expect((await ordersOf(sub._id)).map((o) => o.status)).toEqual(['failed', 'failed', 'failed', 'failed']);
    const types = await eventTypesOf(sub._id);
    expect(types.filter((t) => t === 'customer.subscription.deleted')).toHaveLength(1);
    await recordHistory(env.client, subscriptionWorkflowId(sub._id), 'subscription-dunning-expired');
  });
});

describe('scheduled cancellation and cycle limit', () => {
  it('a scheduled cancellation ends the subscription at current_period_end without renewing', async () => {
    const sub = await subscribe('monthly');
    const paid = await until(sub._id, (d) => d.cycles_completed === 1, 'first charge');
    const updated = await handle(sub._id).executeUpdate(scheduleCancellationUpdate, { args: [{ reason: 'too_expensive', comment: 'pricey' }] });
    expect(updated).toMatchObject({
      status: 'active',
      cancel_at_period_end: true,
      next_billing_at: null,
      cancellation_details: { reason: 'too_expensive', comment: 'pricey', source: 'dashboard' },
    });
    await env.sleep(40 * DAY_MS);
    const ended = await until(sub._id, (d) => d.status === 'canceled', 'canceled at period end');
    expect(ended.ended_at).toBe(paid.current_period_end);
    expect(ended.cycles_completed).toBe(1);
    expect(await ordersOf(sub._id)).toHaveLength(1);
    expect((await eventTypesOf(sub._id)).at(-1)).toBe('customer.subscription.deleted');
    await recordHistory(env.client, subscriptionWorkflowId(sub._id), 'subscription-canceled-at-period-end');
  });

  it('a subscription paused after scheduling its cancellation still ends (canceled) at current_period_end', async () => {
    const sub = await subscribe('monthly');
    const paid = await until(sub._id, (d) => d.cycles_completed === 1, 'first charge');
    await handle(sub._id).executeUpdate(scheduleCancellationUpdate, { args: [{ reason: 'not_using' }] });
    const paused = await handle(sub._id).executeUpdate(pauseUpdate, { args: [{ reason: 'until it ends' }] });
    expect(paused).toMatchObject({ status: 'paused', cancel_at_period_end: true });
    await env.sleep(40 * DAY_MS);
    const ended = await until(sub._id, (d) => d.status === 'canceled', 'canceled at period end while paused');
    expect(ended).toMatchObject({ ended_at: paid.current_period_end, cycles_completed: 1, cancel_at_period_end: false });
    expect(await ordersOf(sub._id)).toHaveLength(1);
    expect((await eventTypesOf(sub._id)).at(-1)).toBe('customer.subscription.deleted');
    await recordHistory(env.client, subscriptionWorkflowId(sub._id), 'subscription-paused-then-canceled');
  });

  it('an offer with cycle_limit 3 charges 3 times and expires when the third period ends', async () => {
    const sub = await subscribe('limited');
    await env.sleep(100 * DAY_MS);
    const expired = await until(sub._id, (d) => d.status === 'expired', 'expired at cycle limit');
    expect(expired.cycles_completed).toBe(3);
    expect(expired.ended_at).toBe(expired.current_period_end);
    expect(await ordersOf(sub._id)).toHaveLength(3);
    await recordHistory(env.client, subscriptionWorkflowId(sub._id), 'subscription-cycle-limit-expired');
  });
});

describe('pause and resume', () => {
  it('pause stops renewals; resume charges at once when the paid period is over and restarts renewals', async () => {
    const sub = await subscribe('monthly');
    await until(sub._id, (d) => d.cycles_completed === 1, 'first charge');
    const paused = await handle(sub._id).executeUpdate(pauseUpdate, { args: [{ reason: 'vacation' }] });
    expect(paused.status).toBe('paused');
    await env.sleep(90 * DAY_MS);
    expect((await reload(sub._id)).cycles_completed).toBe(1);
    expect(await ordersOf(sub._id)).toHaveLength(1);
    expect((await reload(sub._id)).history.find((h) => h.action === 'paused')?.reason).toBe('vacation');

    const resumed = await handle(sub._id).executeUpdate(resumeUpdate, { args: [{}] });
    expect(resumed.status).toBe('active');
    const charged = await until(sub._id, (d) => d.cycles_completed === 2, 'charge on resume');
    await env.sleep(32 * DAY_MS);
    await until(sub._id, (d) => d.cycles_completed === 3, 'renewal after resume');
    expect(charged.status).toBe('active');
    const state = await handle(sub._id).query(subscriptionStateQuery);
    expect(state.life.cycles_completed).toBe(3);
    expect(state.next).toMatchObject({ kind: 'charge' });
    await recordHistory(env.client, subscriptionWorkflowId(sub._id), 'subscription-paused-resumed');
  });

  it('resume gives back the paused state: a trial resumes trialing and is charged at its end; dunning resumes past_due where it stood', async () => {
    const trial = await subscribe('trial');
    const trialEnd = (await reload(trial._id)).trial_end!;
    expect((await handle(trial._id).executeUpdate(pauseUpdate, { args: [{}] })).status).toBe('paused');
    await env.sleep(DAY_MS);
    expect(await handle(trial._id).executeUpdate(resumeUpdate, { args: [{}] })).toMatchObject({ status: 'trialing', trial_end: trialEnd });
    await env.sleep(8 * DAY_MS);
    expect(await until(trial._id, (d) => d.cycles_completed === 1, 'charge at trial end')).toMatchObject({
      status: 'active',
      current_period_start: trialEnd,
    });
    await recordHistory(env.client, subscriptionWorkflowId(trial._id), 'subscription-trial-paused-resumed-trialing');

    const dunned = await subscribe('monthly', '4000000000000341');
    const pastDue = await until(dunned._id, (d) => d.status === 'past_due', 'first charge declined');
    await handle(dunned._id).executeUpdate(pauseUpdate, { args: [{}] });
    const resumed = await handle(dunned._id).executeUpdate(resumeUpdate, { args: [{}] });
    expect(resumed).toMatchObject({ status: 'past_due', past_due_details: pastDue.past_due_details });
    await recordHistory(env.client, subscriptionWorkflowId(dunned._id), 'subscription-past-due-paused-resumed-past-due');
  });
});

describe('change_offer', () => {
  it("next_billing_at follows the new offer's cycle from the period start; the renewal comes then, at the new amount", async () => {
    // Every 9 days: from any month of 28 to 31 days, the first boundary not before the paid end is day 36.
    const nineDays = await createOffer(mongo.db, {
      storeId: store._id,
      productId: catalog.product._id,
      name: 'Image API every 9 days',
      type: 'recurring',
      billingCycle: 'custom',
      customBillingDays: 9,
      prices: [{ currency: 'brl', amount: 1500, default: true }],
    });
    const sub = await subscribe('monthly');
    const first = await until(sub._id, (d) => d.cycles_completed === 1, 'first charge');
    const changed = await handle(sub._id).executeUpdate(changeOfferUpdate, { args: [{ offer: nineDays._id }] });
    const boundary = first.current_period_start! + 36 * 86_400;
    expect([changed.next_billing_at, changed.current_period_end]).toEqual([boundary, first.current_period_end]);
    await env.sleep(37 * DAY_MS);
    const renewed = await until(sub._id, (d) => d.cycles_completed === 2, 'renewal on the new cycle');
    expect([renewed.current_period_start, renewed.current_period_end]).toEqual([boundary, boundary + 9 * 86_400]);
    expect((await ordersOf(sub._id)).map((o) => o.amount_total)).toEqual([4990, 1500]);
    await recordHistory(env.client, subscriptionWorkflowId(sub._id), 'subscription-offer-changed');
  });
});

describe('renewals in review', () => {
  const ledger = (subscriptionId: string) =>
    mongo.db
      .collection('provider_test_charges')
      .find({ store_id: store._id, key: { $regex: `^renewal/${subscriptionId}/` } })
      .sort({ created: 1 })
      .toArray();
  const provider = () => createTestConnection({ db: mongo.db });

  /** A monthly subscription whose first cycle is paid by a card the test then swaps for one that goes to review. */
  async function renewingInReview() {
    const sub = await subscribe('monthly');
    const paid = await until(sub._id, (d) => d.cycles_completed === 1, 'first charge');
    const saved = await provider().saveCard({ storeId: store._id, customerId: sub.customer, card: { number: '4000000000004954' } });
    if (!saved.ok) throw new Error('card not saved');
    await handle(sub._id).executeUpdate(changePaymentMethodUpdate, { args: [{ payment_method: paymentMethodOf(saved.card)! }] });
    await env.sleep(paid.current_period_end! * 1000 - (await env.currentTimeMs()) + 60_000);
    await waitFor(async () => (await handle(sub._id).query(subscriptionStateQuery)).awaitingSettlement, { description: 'renewal in review' });
    const [entry] = (await ledger(sub._id)).filter((e) => e.state === 'review');
    return { sub, paid, entry };
  }

  it('review, pause, paid settlement, resume: the period is credited while paused and the cycle is charged once', async () => {
    const { sub, paid, entry } = await renewingInReview();
    expect(entry.key).toBe(`renewal/${sub._id}/2/0`);
    await handle(sub._id).executeUpdate(pauseUpdate, { args: [{ reason: 'during review' }] });
    const settled = await provider().settle({ storeId: store._id, transactionId: entry.transaction_id, outcome: 'paid' });
    if (!settled.ok) throw new Error(settled.reason);
    await handle(sub._id).signal(subscriptionProviderSettledSignal, settled.notice);
    const credited = await until(sub._id, (d) => d.cycles_completed === 2, 'period credited while paused');
    expect(credited).toMatchObject({ status: 'paused', current_period_start: paid.current_period_end });
    await handle(sub._id).executeUpdate(resumeUpdate, { args: [{}] });
    await env.sleep(DAY_MS);
    const resumed = await reload(sub._id);
    expect({ status: resumed.status, cycles: resumed.cycles_completed }).toEqual({ status: 'active', cycles: 2 });
    // One provider charge per cycle: the first, and the one paid after review; nothing at resume.
    expect((await ledger(sub._id)).map((e) => e.key)).toEqual([`renewal/${sub._id}/1/0`, `renewal/${sub._id}/2/0`]);
    expect((await ordersOf(sub._id)).map((o) => o.status)).toEqual(['paid', 'paid']);
  });

  it('canceled during the review, then paid: the money is refunded at the provider and the order is refunded (order.refunded)', async () => {
    const { sub, entry } = await renewingInReview();
    await handle(sub._id).executeUpdate(cancelUpdate, { args: [{ reason: 'other' }] });
    const settled = await provider().settle({ storeId: store._id, transactionId: entry.transaction_id, outcome: 'paid' });
    if (!settled.ok) throw new Error(settled.reason);
    await handle(sub._id).signal(subscriptionProviderSettledSignal, settled.notice);
    await waitFor(async () => (await ordersOf(sub._id)).at(-1)?.status === 'refunded', { description: 'renewal order refunded' });
    expect((await provider().lookupCharge({ storeId: store._id, idempotencyKey: entry.key }))?.state).toBe('refunded');
    const after = await reload(sub._id);
    expect({ status: after.status, cycles: after.cycles_completed }).toEqual({ status: 'canceled', cycles: 1 });
    await waitFor(async () => (await eventTypesOf(sub._id)).includes('order.refunded'), { description: 'order.refunded' });
  });

  it('a lost notice: the renewal is settled at the provider but never signalled; the daily lookup by key resolves it', async () => {
    const { sub, entry } = await renewingInReview();
    const settled = await provider().settle({ storeId: store._id, transactionId: entry.transaction_id, outcome: 'paid' });
    expect(settled.ok).toBe(true);
    await env.sleep(DAY_MS + 60_000);
    const renewed = await until(sub._id, (d) => d.cycles_completed === 2, 'renewal resolved by lookup');
    expect(renewed.status).toBe('active');
    expect((await ordersOf(sub._id)).map((o) => o.status)).toEqual(['paid', 'paid']);
  });

  it('a review nobody settles counts as refused at the end of its window: voided at the provider, the subscription past_due', async () => {
    const { sub, entry } = await renewingInReview();
    await env.sleep(7 * DAY_MS + 60_000);
    const failed = await until(sub._id, (d) => d.status === 'past_due', 'refused at the window end');
    expect(failed.past_due_details?.attempts).toBe(1);
    expect((await provider().lookupCharge({ storeId: store._id, idempotencyKey: entry.key }))?.state).toBe('voided');
    expect((await ordersOf(sub._id)).map((o) => o.status)).toEqual(['paid', 'failed']);
  });
});

describe('one-off charges in review', () => {
  it('a lost notice: the charge settled at the provider but never signalled resolves by the daily lookup by key', async () => {
    const sub = await subscribe('monthly', '4000000000004954');
    const review = await startCharge(deps(), {
      storeId: store._id,
      subscriptionId: sub._id,
      key: merchantChargeKey(`lost-${Date.now()}`),
      amount: 1500,
      source: 'api',
      billingReason: 'manual',
    });
    expect(review.outcome).toBe('review');
    const settled = await createTestConnection({ db: mongo.db }).settle({
      storeId: store._id,
      transactionId: review.charge.transaction!,
      outcome: 'paid',
    });
    expect(settled.ok).toBe(true);
    await env.sleep(DAY_MS + 60_000);
    const charge = await waitFor(
      async () => {
        const doc = await chargesCollection(mongo.db).findOne({ _id: review.charge.id });
        return doc?.status === 'succeeded' ? doc : null;
      },
      { description: 'charge settled by lookup' },
    );
    expect(charge.settled_at).toEqual(expect.any(Number));
  });
});

describe('provider notice before the charge result', () => {
  /**
   * The test connection, except that a saved-card charge left in review is settled paid at the
   * provider and its notice signalled (what `npm run admin -- provider settle` does) before the
   * charge returns: the workflow receives the notice while its charge activity is still running.
   */
  function settlingBeforeReturning(inner: PaymentProvider): PaymentProvider {
    return {
      ...inner,
      async chargeSavedCard(input) {
        const outcome = await inner.chargeSavedCard(input);
        if (outcome.status !== 'review') return outcome;
        const settled = await inner.settle({ storeId: input.storeId, transactionId: outcome.transactionId, outcome: 'paid' });
        if (!settled.ok) throw new Error(settled.reason);
        await env.client.workflow.getHandle(settled.notice.notifyRef!).signal(subscriptionProviderSettledSignal, settled.notice);
        return outcome;
      },
    };
  }

  it('a renewal in review whose paid notice arrives while the charge runs completes: active, cycle counted, order paid', async () => {
    const earlyQueue = uniqueTaskQueue('subscription-early-notice');
    const provider = settlingBeforeReturning(createTestConnection({ db: mongo.db }));
    const earlyWorker = await createBillingWorker({
      connection: env.nativeConnection,
      taskQueue: earlyQueue,
      db: mongo.db,
      temporal: env.client,
      activityDeps: { provider },
    });
    const earlyRunning = earlyWorker.run();
    try {
      const sub = await seedSubscription(
        { db: mongo.db, temporal: env.client, taskQueue: earlyQueue, provider },
        { store, offer: catalog.monthly, product: catalog.product, card: '4000000000004954', now: await env.currentTimeMs() },
      );
      const first = await until(sub._id, (d) => d.cycles_completed === 1, 'first cycle settled by its early notice');
      expect(first.status).toBe('active');
      expect((await ordersOf(sub._id)).map((o) => o.status)).toEqual(['paid']);

      // The next renewal, in a run continued as new after the paid cycle, gets its notice early too.
      await env.sleep(32 * DAY_MS);
      const renewed = await until(sub._id, (d) => d.cycles_completed === 2, 'renewal settled by its early notice');
      expect(renewed.status).toBe('active');
      expect(renewed.current_period_start).toBe(first.current_period_end);
      const orders = await ordersOf(sub._id);
      expect(orders.map((o) => [o.status, o.billing_reason])).toEqual([
        ['paid', 'renewal'],
        ['paid', 'renewal'],
      ]);
      expect((await handle(sub._id).query(subscriptionStateQuery)).awaitingSettlement).toBeNull();
      await recordHistory(env.client, subscriptionWorkflowId(sub._id), 'subscription-notice-before-charge-result');
    } finally {
      earlyWorker.shutdown();
      await earlyRunning.catch(() => undefined);
    }
  });
});
