// What this tests: the usage-period workflow (`usage/<sub_id>`) on the time-skipping server, with
// its activities, the subscription workflow and the charge workflow running for real against
// the test database and the test payment connection: a month of usage closes at period end and charges the
// exact amount (one line per meter), a declined usage charge stays on the closed period, a zero
// period closes without charge, a refusal before the card closes with charge null, an event sent
// before the item existed is never charged, the threshold closes early and opens the next period,
// a cancellation closes with subscription_ended and still charges, a reactivation after it opens a
// new period that is charged, and runs continue as new once their history is long, both while a
// period stays open and while a paused subscription waits (a resume opens a period at once).
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testServerPath } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { collections, type OfferDoc, type StoreDoc } from '../../store/collections';
import { ensureIndexes } from '../../store/indexes';
import { createStore } from '../../store/stores';
import { createMeter, type MeterDoc } from '../../store/meters';
import { ordersCollection } from '../../store/orders';
import { chargesCollection } from '../../store/subscription-charges';
import { findUsageState, usagePeriodsCollection, type UsagePeriodDoc } from '../../store/usage';
import type { SubscriptionDoc } from '../../store/subscriptions';
import { ingestMeterEvents } from '../../services/usage/ingestion';
import { putUsageItem, type UsageItemInput } from '../../services/usage/items';
import { subscriptionUsage } from '../../services/usage/periods';
import { meterEventSummaries } from '../../services/usage/summaries';
import { decodeMetadata } from '../../domain/metadata';
import { CLOSE_GRACE_SECONDS, isoDate, THRESHOLD_CLOSE_DELAY_SECONDS } from '../../domain/usage-periods';
import { cancelUpdate, pauseUpdate, reactivateUpdate, resumeUpdate, subscriptionWorkflowId } from '../../workflows/subscription/messages';
import { usageStateQuery, usageWorkflowId } from '../../workflows/usage-periods/messages';
import { testMongo, uniqueTaskQueue, waitFor, type TestMongo } from '../support/env';
import { recordHistory } from '../support/histories';
import { registerSearchAttributes } from '../support/search-attributes';
import { seedUsageOffer, seedUsageSubscription } from '../support/usage';

const DAY = 24 * 60 * 60;
// The routine runs once a day here (10 minutes in production) so a skipped month stays quick.
const RECOMPUTE_SECONDS = DAY;

let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let worker: Worker;
let running: Promise<void>;
let store: StoreDoc;
let offer: OfferDoc;
let images: MeterDoc;
let calls: MeterDoc;
const taskQueue = uniqueTaskQueue('usage-periods');

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: testServerPath() } } });
  await registerSearchAttributes(env.connection, env.namespace ?? 'default');
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  store = await createStore(mongo.db, { name: 'Usage Store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  offer = await seedUsageOffer(mongo.db, store._id);
  images = await createMeter(mongo.db, { storeId: store._id, displayName: 'Images processed', eventName: 'image.processed' });
  calls = await createMeter(mongo.db, { storeId: store._id, displayName: 'API calls', eventName: 'api.call', formula: 'count' });
  worker = await createBillingWorker({
    connection: env.nativeConnection,
    taskQueue,
    db: mongo.db,
    temporal: env.client,
    activityDeps: { usageRecomputeSeconds: RECOMPUTE_SECONDS },
  });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await env?.teardown();
  await mongo?.close();
});

const deps = () => ({ db: mongo.db, temporal: env.client, taskQueue });
const serverNow = async () => Math.floor((await env.currentTimeMs()) / 1000);

async function subscribe(card?: string | null): Promise<{ sub: SubscriptionDoc; customer: string }> {
  const { subscription, customer } = await seedUsageSubscription(deps(), { store, offer, card, now: await env.currentTimeMs() });
  return { sub: subscription, customer: customer._id };
}

async function price(sub: SubscriptionDoc, input: UsageItemInput) {
  return putUsageItem(deps(), store._id, sub._id, input, await env.currentTimeMs());
}

async function ingest(customer: string, meter: MeterDoc, values: number[], identifierPrefix?: string) {
  const events = values.map((value, i) => ({
    event_name: meter.event_name,
    ...(identifierPrefix ? { identifier: `${identifierPrefix}-${i}` } : {}),
    payload: { customer_id: customer, value },
  }));
  const results = await ingestMeterEvents(deps(), store._id, events, { now: await env.currentTimeMs() });
  for (const r of results) if (r.status === 'error') throw r.error;
  return results;
}

const openPeriodOf = (subId: string) =>
  waitFor(async () => (await findUsageState(mongo.db, store._id, subId))?.open ?? null, {
    timeoutMs: 20_000,
    description: `usage period of ${subId} open`,
  });

const periodsOf = (subId: string) => usagePeriodsCollection(mongo.db).find({ subscription: subId }).sort({ _id: 1 }).toArray();

function closedPeriod(subId: string, index = 0): Promise<UsagePeriodDoc> {
  return waitFor(
    async () => {
      const p = (await periodsOf(subId))[index];
      return p && p.status === 'closed' && p.charge_state !== 'none' ? p : null;
    },
    { timeoutMs: 30_000, description: `period ${index} of ${subId} closed and settled` },
  );
}

async function skipTo(seconds: number): Promise<void> {
  const ms = seconds * 1000 - (await env.currentTimeMs());
  if (ms > 0) await env.sleep(ms);
}

const usageChargesOf = (subId: string) => chargesCollection(mongo.db).find({ store_id: store._id, subscription: subId, source: 'usage' }).toArray();

describe('a month of usage, closed at period end', () => {
  const subs: Record<'exact' | 'declined' | 'zero' | 'refused' | 'late', { sub: SubscriptionDoc; customer: string }> = {} as never;

  beforeAll(async () => {
    subs.exact = await subscribe();
    subs.declined = await subscribe('4000000000000341');
    subs.zero = await subscribe();
    subs.refused = await subscribe(null);
    subs.late = await subscribe();

    // An event before the item existed: unattached, and so never charged.
    await ingest(subs.late.customer, images, [500]);

    const tiers = [
      { up_to: 10, unit_amount: 50 },
      { up_to: null, unit_amount: 20, flat_amount: 100 },
    ];
    await price(subs.exact.sub, { meter: images._id, unit_amount: 2.5, included_units: 1000 });
    await price(subs.exact.sub, { meter: calls._id, tiers, unit_amount: 0 });
    await price(subs.declined.sub, { meter: images._id, unit_amount: 10 });
    await price(subs.zero.sub, { meter: images._id, unit_amount: 1, included_units: 1000 });
    await price(subs.refused.sub, { meter: images._id, unit_amount: 10 });
    await price(subs.late.sub, { meter: images._id, unit_amount: 1 });
    for (const { sub } of Object.values(subs)) await openPeriodOf(sub._id);

    await ingest(subs.exact.customer, images, [400, 500], 'a');
    await ingest(
      subs.exact.customer,
      calls,
      Array.from({ length: 12 }, () => 1),
    );
    await ingest(subs.declined.customer, images, [20]);
    await ingest(subs.zero.customer, images, [300, 200]);
    await ingest(subs.refused.customer, images, [15]);
    await ingest(subs.late.customer, images, [7]);

    await env.sleep(10 * DAY * 1000);
    // Replayed identifiers are duplicates: counted once.
    await ingest(subs.exact.customer, images, [400, 500], 'a');
    await ingest(subs.exact.customer, images, [637], 'b');

    const lastEnd = Math.max(...Object.values(subs).map(({ sub }) => sub.current_period_end!));
    await skipTo(lastEnd + CLOSE_GRACE_SECONDS + 60);
  });

  test('closes at period_end and charges the exact amount once, one line per meter named by its display_name', async () => {
    const { sub } = subs.exact;
    const closed = await closedPeriod(sub._id);
    // images: 1537 - 1000 included = 537 x 2.5 = 1342.5 -> 1343; calls: 10 x 50 + 2 x 20 + 100 = 640.
    expect(closed).toMatchObject({
      status: 'closed',
      close_reason: 'period_end',
      period_start: sub.current_period_start,
      period_end: sub.current_period_end,
      amount_total: 1983,
      charge_state: 'charged',
    });
    expect(closed.lines.map((l) => [l.event_name, l.quantity, l.included, l.billable, l.amount])).toEqual([
      ['image.processed', 1537, 1000, 537, 1343],
      ['api.call', 12, 0, 12, 640],
    ]);
    const charges = await usageChargesOf(sub._id);
    expect(charges).toHaveLength(1);
    const [charge] = charges;
    expect(charge).toMatchObject({
      _id: closed.charge,
      key: `usage/${closed._id}`,
      idempotency_key: `usage:${closed._id}`,
      status: 'succeeded',
      amount: 1983,
      currency: 'brl',
      source: 'usage',
      description: `Metered usage ${isoDate(sub.current_period_start!)} to ${isoDate(sub.current_period_end!)}`,
    });
    expect(charge.lines).toEqual([
      { description: 'Images processed', quantity: 1, unit_amount: 1343, amount: 1343 },
      { description: 'API calls', quantity: 1, unit_amount: 640, amount: 640 },
    ]);
    expect(decodeMetadata(charge.metadata)).toEqual({ kind: 'usage', usage_period: closed._id });
    const order = await ordersCollection(mongo.db).findOne({ _id: charge.order! });
    expect(order).toMatchObject({ status: 'paid', billing_reason: 'usage', external_order_id: charge._id, amount_total: 1983 });
    await recordHistory(env.client, usageWorkflowId(sub._id), 'usage-closed-at-period-end');
  });

  test('the next period opens where the closed one ended, and the workflow continued as new for it', async () => {
    const { sub } = subs.exact;
    const open = await openPeriodOf(sub._id);
    expect(open.start).toBe(sub.current_period_end);
    const state = await env.client.workflow.getHandle(usageWorkflowId(sub._id)).query(usageStateQuery);
    expect(state.phase).toBe('open');
    expect(state.open?.id).toBe(open.id);
  });

  test('a declined usage charge leaves the period closed with the failed charge, never retried', async () => {
    const closed = await closedPeriod(subs.declined.sub._id);
    expect(closed).toMatchObject({ close_reason: 'period_end', amount_total: 200, charge_state: 'charged' });
    const charges = await usageChargesOf(subs.declined.sub._id);
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({ _id: closed.charge, status: 'failed', failure_code: 'card_declined', amount: 200 });
    await recordHistory(env.client, usageWorkflowId(subs.declined.sub._id), 'usage-charge-declined');
  });

  test('a zero-amount period closes without charge and without order', async () => {
    const closed = await closedPeriod(subs.zero.sub._id);
    expect(closed).toMatchObject({ close_reason: 'period_end', amount_total: 0, charge: null, charge_state: 'not_needed' });
    expect(closed.lines[0]).toMatchObject({ quantity: 500, included: 1000, billable: 0, amount: 0 });
    expect(await usageChargesOf(subs.zero.sub._id)).toHaveLength(0);
    expect(await ordersCollection(mongo.db).countDocuments({ subscription: subs.zero.sub._id, billing_reason: 'usage' })).toBe(0);
  });

  test('a refusal before the card (no saved card) closes the period with charge null, never charged later', async () => {
    const closed = await closedPeriod(subs.refused.sub._id);
    expect(closed).toMatchObject({ amount_total: 150, charge: null, charge_state: 'refused', charge_refusal: { code: 'no_payment_method' } });
    expect(await usageChargesOf(subs.refused.sub._id)).toHaveLength(0);
  });

  test('an event sent before the item existed is never charged: only later events count', async () => {
    const closed = await closedPeriod(subs.late.sub._id);
    expect(closed.lines[0]).toMatchObject({ quantity: 7, amount: 7 });
    expect(closed.amount_total).toBe(7);
  });
});

describe('billing threshold', () => {
  test('reaching the threshold closes the period within seconds (reason threshold), charges it and opens the next one to the cycle end', async () => {
    const { sub, customer } = await subscribe();
    await price(sub, { meter: images._id, unit_amount: 10, billing_threshold: 1000 });
    const first = await openPeriodOf(sub._id);
    await ingest(customer, images, [60]);
    // Recomputed before the threshold: nothing moves.
    expect((await findUsageState(mongo.db, store._id, sub._id))!.open!.threshold_boundary).toBe(false);
    const crossedAt = await serverNow();
    await ingest(customer, images, [50]); // 1100 >= 1000: ingestion signals the workflow

    const closed = await closedPeriod(sub._id, 0);
    expect(closed).toMatchObject({ _id: first.id, close_reason: 'threshold', amount_total: 1100, charge_state: 'charged' });
    // The end was pulled in to a few seconds after detection, and the close came right at it.
    expect(closed.period_end).toBeGreaterThanOrEqual(crossedAt + THRESHOLD_CLOSE_DELAY_SECONDS);
    expect(closed.period_end).toBeLessThan(crossedAt + THRESHOLD_CLOSE_DELAY_SECONDS + 60);
    expect(closed.closed_at! - crossedAt).toBeLessThan(THRESHOLD_CLOSE_DELAY_SECONDS + 60);
    const next = await openPeriodOf(sub._id);
    expect(next).toMatchObject({ start: closed.period_end, end: sub.current_period_end, threshold_boundary: false });

    await ingest(customer, images, [7]);
    const usage = await subscriptionUsage(mongo.db, store._id, sub._id, await env.currentTimeMs());
    expect(usage.map((p) => [p.status, p.close_reason, p.amount_total])).toEqual([
      ['open', null, 70],
      ['closed', 'threshold', 1100],
    ]);
    expect(usage[1].charge).toBe(closed.charge);
    const charges = await usageChargesOf(sub._id);
    expect(charges.map((c) => [c.amount, c.status])).toEqual([[1100, 'succeeded']]);
    await recordHistory(env.client, usageWorkflowId(sub._id), 'usage-threshold-closed-prompt');
  });

  test('a threshold reached seconds before the cycle ends still closes with reason threshold, at the cycle end', async () => {
    const { sub, customer } = await subscribe();
    await price(sub, { meter: images._id, unit_amount: 10, billing_threshold: 1000 });
    const first = await openPeriodOf(sub._id);
    await skipTo(first.end - 2);
    await ingest(customer, images, [120]);
    const closed = await closedPeriod(sub._id, 0);
    expect(closed).toMatchObject({ _id: first.id, close_reason: 'threshold', period_end: first.end, amount_total: 1200 });
  });
});

describe('late events', () => {
  test('an event whose period is closed is charged with the next usage charge, on a line naming its period, once; summaries keep it at its own time', async () => {
    const { sub, customer } = await subscribe();
    await price(sub, { meter: images._id, unit_amount: 100, included_units: 2 });
    const first = await openPeriodOf(sub._id);
    await ingest(customer, images, [5]);
    await skipTo(first.end + CLOSE_GRACE_SECONDS + 30);
    const closedFirst = await closedPeriod(sub._id, 0);
    expect(closedFirst).toMatchObject({ period_end: first.end, amount_total: 300 }); // 5 - 2 included = 3 x 100 (a charge is at least 1 BRL)
    const second = await openPeriodOf(sub._id);
    expect(second.start).toBe(first.end);

    // A late event stamped in the first period (well within 35 days) and one on time.
    const now = await env.currentTimeMs();
    const lateAt = first.start + 3600;
    const results = await ingestMeterEvents(
      deps(),
      store._id,
      [
        { event_name: images.event_name, identifier: `late-${sub._id}`, timestamp: lateAt, payload: { customer_id: customer, value: 4 } },
        { event_name: images.event_name, identifier: `ontime-${sub._id}`, payload: { customer_id: customer, value: 1 } },
      ],
      { now },
    );
    expect(results.map((r) => r.status)).toEqual(['accepted', 'accepted']);
    // Sent again: a duplicate, counted once.
    await ingestMeterEvents(
      deps(),
      store._id,
      [{ event_name: images.event_name, identifier: `late-${sub._id}`, timestamp: lateAt, payload: { customer_id: customer, value: 4 } }],
      { now },
    );

    const [open] = await subscriptionUsage(mongo.db, store._id, sub._id, await env.currentTimeMs());
    expect(open.lines).toEqual([
      expect.objectContaining({ event_name: images.event_name, quantity: 1, included: 2, amount: 0, late_period: null }),
      // On top of the first period's 5 (2 included): 4 more, all billable.
      expect.objectContaining({ event_name: images.event_name, quantity: 4, amount: 400, late_period: { start: first.start, end: first.end } }),
    ]);
    // The closed period is not reopened: what was charged stays.
    expect((await closedPeriod(sub._id, 0)).amount_total).toBe(300);
    // Summaries show it at its own timestamp.
    const summary = await meterEventSummaries(mongo.db, store._id, images._id, { customer, start_time: first.start, end_time: first.end });
    expect(summary.data.map((d) => d.aggregated_value)).toEqual([9]);

    await skipTo(second.end + CLOSE_GRACE_SECONDS + 30);
    const closedSecond = await closedPeriod(sub._id, 1);
    expect(closedSecond).toMatchObject({ amount_total: 400 });
    const charges = await usageChargesOf(sub._id);
    expect(charges.map((c) => c.amount)).toEqual([300, 400]);
    const lateLine = (charges[1] as unknown as { lines: { description: string; unit_amount: number }[] }).lines.find((l) =>
      l.description.includes('late'),
    );
    expect(lateLine).toMatchObject({
      description: `${images.display_name} (late, ${isoDate(first.start)} to ${isoDate(first.end)})`,
      unit_amount: 400,
    });
  });
});

describe('subscription ended', () => {
  test('a canceled subscription closes its period with subscription_ended and the usage is still charged', async () => {
    const { sub, customer } = await subscribe();
    await price(sub, { meter: images._id, unit_amount: 10 });
    await openPeriodOf(sub._id);
    await ingest(customer, images, [30]);
    await env.client.workflow.getHandle(subscriptionWorkflowId(sub._id)).executeUpdate(cancelUpdate, { args: [{}] });
    const canceledAt = await serverNow();
    await env.sleep(RECOMPUTE_SECONDS * 1000 + 60_000);
    const closed = await closedPeriod(sub._id);
    expect(closed).toMatchObject({ close_reason: 'subscription_ended', amount_total: 300 });
    expect(closed.period_end).toBeGreaterThanOrEqual(canceledAt);
    expect(closed.period_end).toBeLessThan(sub.current_period_end!);
    expect(closed.charge_refusal).toBeNull();
    expect(closed.charge).not.toBeNull();
    const [charge] = await usageChargesOf(sub._id);
    expect(charge).toMatchObject({ _id: closed.charge, amount: 300, status: 'succeeded' });
    // The workflow ends: nothing more to open for a canceled subscription.
    const result = await env.client.workflow.getHandle(usageWorkflowId(sub._id)).result();
    expect(result).toEqual({ finished: 'ended' });
    expect(await collections(mongo.db).db.collection('usage_periods').countDocuments({ subscription: sub._id })).toBe(1);
    await recordHistory(env.client, usageWorkflowId(sub._id), 'usage-subscription-ended');
  });
});

describe('reactivation', () => {
  test('a subscription reactivated after its usage ended opens a new period, charged at its end', async () => {
    const { sub, customer } = await subscribe();
    await price(sub, { meter: images._id, unit_amount: 10 });
    const first = await openPeriodOf(sub._id);
    const subscription = env.client.workflow.getHandle(subscriptionWorkflowId(sub._id));
    await subscription.executeUpdate(cancelUpdate, { args: [{}] });
    await env.sleep(RECOMPUTE_SECONDS * 1000 + 60_000);
    await closedPeriod(sub._id, 0);
    // Polled, not awaited through result(): the time-skipping client would skip past every timer (10 years).
    const usage = env.client.workflow.getHandle(usageWorkflowId(sub._id));
    await waitFor(async () => (await usage.describe()).status.name === 'COMPLETED', { timeoutMs: 20_000, description: 'usage workflow ended' });

    const reactivated = await subscription.executeUpdate(reactivateUpdate, { args: [{}] });
    expect(reactivated.status).toBe('active');
    const next = await waitFor(
      async () => {
        const open = (await findUsageState(mongo.db, store._id, sub._id))?.open;
        return open && open.id !== first.id ? open : null;
      },
      { timeoutMs: 20_000, description: 'a new usage period open after the reactivation' },
    );
    expect(next.end).toBe(reactivated.current_period_end);
    await ingest(customer, images, [25]);

    await skipTo(next.end + CLOSE_GRACE_SECONDS + 60);
    const closed = await closedPeriod(sub._id, 1);
    expect(closed).toMatchObject({ _id: next.id, close_reason: 'period_end', amount_total: 250, charge_state: 'charged' });
    const charges = await usageChargesOf(sub._id);
    expect(charges.map((c) => [c._id, c.amount, c.status])).toEqual([[closed.charge, 250, 'succeeded']]);
    await recordHistory(env.client, usageWorkflowId(sub._id), 'usage-reactivated');
  });
});

describe('long runs', () => {
  // Hourly recomputes and a short history bound: a few days make several runs.
  const HISTORY_LIMIT = 120;
  const longQueue = uniqueTaskQueue('usage-periods-long');
  let longWorker: Worker;
  let longRunning: Promise<void>;
  const longDeps = () => ({ db: mongo.db, temporal: env.client, taskQueue: longQueue });

  beforeAll(async () => {
    longWorker = await createBillingWorker({
      connection: env.nativeConnection,
      taskQueue: longQueue,
      db: mongo.db,
      temporal: env.client,
      activityDeps: { usageRecomputeSeconds: 60 * 60, usageHistoryEventsLimit: HISTORY_LIMIT },
    });
    longRunning = longWorker.run();
  });

  afterAll(async () => {
    longWorker?.shutdown();
    await longRunning?.catch(() => undefined);
  });

  async function currentRun(subId: string): Promise<{ runId: string; events: number }> {
    const handle = env.client.workflow.getHandle(usageWorkflowId(subId));
    const { runId } = await handle.describe();
    const history = await env.client.workflow.getHandle(usageWorkflowId(subId), runId).fetchHistory();
    return { runId, events: history.events?.length ?? 0 };
  }

  test('an open period recomputed for days continues as new with a bounded history, and stays the same period', async () => {
    const { subscription: sub, customer } = await seedUsageSubscription(longDeps(), { store, offer, now: await env.currentTimeMs() });
    await putUsageItem(longDeps(), store._id, sub._id, { meter: images._id, unit_amount: 10 }, await env.currentTimeMs());
    const open = await openPeriodOf(sub._id);
    const before = await currentRun(sub._id);
    await env.sleep(3 * DAY * 1000);
    const after = await currentRun(sub._id);
    expect(after.runId).not.toBe(before.runId);
    expect(after.events).toBeLessThan(HISTORY_LIMIT + 30);
    // Polled: a fresh run is briefly 'opening' (finding its period again) before it is 'open'.
    const queryState = () => env.client.workflow.getHandle(usageWorkflowId(sub._id)).query(usageStateQuery);
    const state = await waitFor(
      async () => {
        const s = await queryState();
        return s.phase === 'open' ? s : null;
      },
      { timeoutMs: 10_000, description: 'the usage run open' },
    );
    expect(state).toMatchObject({ phase: 'open', open: { id: open.id } });
    // The new run still recomputes the same period from the events.
    await ingestMeterEvents(longDeps(), store._id, [{ event_name: images.event_name, payload: { customer_id: customer._id, value: 4 } }], {
      now: await env.currentTimeMs(),
    });
    await env.sleep(61 * 60 * 1000);
    const recomputed = await waitFor(
      async () => {
        const s = await queryState();
        return s.open?.amount_total === 40 ? s : null;
      },
      { timeoutMs: 10_000, description: 'the open period recomputed' },
    );
    expect(recomputed.open).toMatchObject({ id: open.id, amount_total: 40 });
    await recordHistory(env.client, usageWorkflowId(sub._id), 'usage-open-period-continued-as-new');
  });

  test('a paused subscription waits across runs with a bounded history, and its resume opens a period at once', async () => {
    const { subscription: sub } = await seedUsageSubscription(longDeps(), { store, offer, now: await env.currentTimeMs() });
    await putUsageItem(longDeps(), store._id, sub._id, { meter: images._id, unit_amount: 10 }, await env.currentTimeMs());
    const first = await openPeriodOf(sub._id);
    const subscription = env.client.workflow.getHandle(subscriptionWorkflowId(sub._id));
    await subscription.executeUpdate(pauseUpdate, { args: [{}] });
    // The next hourly recompute closes the period; then the run waits for the subscription.
    await env.sleep(2 * 60 * 60 * 1000);
    await closedPeriod(sub._id, 0);
    const waiting = await currentRun(sub._id);
    await env.sleep(3 * DAY * 1000);
    const after = await currentRun(sub._id);
    expect(after.runId).not.toBe(waiting.runId);
    expect(after.events).toBeLessThan(HISTORY_LIMIT + 30);
    // Polled: once an hour the run is briefly 'opening' (asking whether a period can open).
    const state = await waitFor(
      async () => {
        const s = await env.client.workflow.getHandle(usageWorkflowId(sub._id)).query(usageStateQuery);
        return s.phase === 'waiting' ? s : null;
      },
      { timeoutMs: 10_000, description: 'the usage run waiting' },
    );
    expect(state).toMatchObject({ phase: 'waiting', reason: 'not_chargeable', open: null });

    await subscription.executeUpdate(resumeUpdate, { args: [{}] });
    const next = await waitFor(
      async () => {
        const open = (await findUsageState(mongo.db, store._id, sub._id))?.open;
        return open && open.id !== first.id ? open : null;
      },
      { timeoutMs: 20_000, description: 'a usage period open after the resume' },
    );
    expect(next.end).toBe(sub.current_period_end);
    await recordHistory(env.client, usageWorkflowId(sub._id), 'usage-paused-resumed');
  });
});
