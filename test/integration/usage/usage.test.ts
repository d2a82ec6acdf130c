// What this tests: usage over real HTTP with the real worker on the Temporal dev server and
// the test database — posting an item starts `usage/<sub_id>`, which opens the cycle's period; GET usage
// computes the open period at call time; replayed identifiers are counted once; an event sent before
// the item existed is never counted; a deactivated meter keeps its quantity at zero price; offer
// usage rows are inherited once (never over an API item); the workflow's `state` query shows the
// open period; closing waits for ingestion batches begun before the period's end, not for later ones.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestWorker } from '../../support/worker';
import { addOfferUsageRow } from '../../../store/catalog';
import type { OfferDoc } from '../../../store/collections';
import { customerKey, findUsageState } from '../../../store/usage';
import { JOURNAL_LEASE_MS, journalsCollection, type JournalDoc } from '../../../store/usage-rollups';
import { createUsageActivities } from '../../../activities/usage';
import { ensureUsageForSubscription } from '../../../services/usage/shared';
import { putUsageItem } from '../../../services/usage/items';
import { runUsageRoutine } from '../../../services/usage/routine';
import { CLOSE_GRACE_SECONDS } from '../../../domain/usage-periods';
import { usageStateQuery, usageWorkflowId } from '../../../workflows/usage-periods/messages';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { seedUsageOffer, seedUsageSubscription } from '../../support/usage';

let mongo: TestMongo;
let temporal: TestTemporal;
let worker: Worker;
let running: Promise<void>;
let api: TestApi;
let store: TestStore;
let other: TestStore;
let offer: OfferDoc;
const taskQueue = uniqueTaskQueue('usage-api');

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  store = await createTestStore(mongo.db);
  other = await createTestStore(mongo.db);
  offer = await seedUsageOffer(mongo.db, store.store._id);
  worker = await createTestWorker(mongo, temporal, taskQueue);
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await api?.close();
  await temporal?.close();
  await mongo?.close();
});

let n = 0;
const get = (path: string, key = store.key) => call(api, key, 'GET', path);
const post = (path: string, json: unknown) => call(api, store.key, 'POST', path, { json });

async function meter(extra: Record<string, unknown> = {}) {
  return (await post('/v1/billing/meters', { display_name: `Meter ${++n}`, event_name: `usage.${n}`, ...extra })).body as {
    id: string;
    event_name: string;
  };
}

/** An active subscription (its first period paid, its own workflow not started: nothing renews here). */
async function subscription(customer?: Parameters<typeof seedUsageSubscription>[1]['customer']) {
  return seedUsageSubscription({ db: mongo.db, taskQueue }, { store: store.store, offer, customer });
}

const openPeriod = (subId: string) =>
  waitFor(async () => (await findUsageState(mongo.db, store.store._id, subId))?.open ?? null, { timeoutMs: 20_000, description: 'period open' });

describe('GET /subscriptions/{id}/usage', () => {
  test('an item starts the usage workflow: the cycle period opens, computed at call time from the events', async () => {
    const m = await meter();
    const { subscription: sub, customer } = await subscription();
    const before = await get(`/v1/subscriptions/${sub._id}/usage`);
    expect(before.body).toEqual({ object: 'list', url: `/v1/subscriptions/${sub._id}/usage`, has_more: false, data: [] });
    await post(`/v1/subscriptions/${sub._id}/usage_items`, { meter: m.id, unit_amount: 2.5, included_units: 10 });
    const open = await openPeriod(sub._id);
    expect([open.start, open.end]).toEqual([sub.current_period_start, sub.current_period_end]);

    await post('/v1/billing/meter_events/batch', {
      events: [5, 10, 6].map((value) => ({ event_name: m.event_name, payload: { customer_id: customer._id, value } })),
    });
    const t = Math.floor(Date.now() / 1000);
    const usage = await get(`/v1/subscriptions/${sub._id}/usage`);
    expect(usage.status).toBe(200);
    expect(usage.body.data).toHaveLength(1);
    expect(usage.body.data[0]).toMatchObject({
      id: open.id,
      object: 'usage_period',
      subscription: sub._id,
      status: 'open',
      close_reason: null,
      period_start: sub.current_period_start,
      period_end: sub.current_period_end,
      currency: 'brl',
      lines: [{ meter: m.id, event_name: m.event_name, quantity: 21, included: 10, billable: 11, unit_amount: 2.5, amount: 28 }],
      amount_total: 28,
      charge: null,
      closed_at: null,
      livemode: true,
    });
    expect(usage.body.data[0].computed_at).toBeGreaterThanOrEqual(t - 1);
    expect(usage.body.data[0].id).toMatch(/^usp_/);
  });

  test('the workflow answers the state query with the open period', async () => {
    const m = await meter();
    const { subscription: sub } = await subscription();
    await post(`/v1/subscriptions/${sub._id}/usage_items`, { meter: m.id, unit_amount: 1 });
    const open = await openPeriod(sub._id);
    const state = await waitFor(
      async () => {
        const s = await temporal.client.workflow.getHandle(usageWorkflowId(sub._id)).query(usageStateQuery);
        return s.open ? s : null;
      },
      { timeoutMs: 20_000, description: 'state query shows the period' },
    );
    expect(state).toMatchObject({ subscription: sub._id, phase: 'open', open: { id: open.id, status: 'open' } });
  });

  test('events replayed with the same identifiers are counted once', async () => {
    const m = await meter();
    const { subscription: sub, customer } = await subscription();
    await post(`/v1/subscriptions/${sub._id}/usage_items`, { meter: m.id, unit_amount: 1 });
    await openPeriod(sub._id);
    const events = Array.from({ length: 50 }, (_, i) => ({
      event_name: m.event_name,
      identifier: `r-${i}`,
      payload: { customer_id: customer._id, value: 2 },
    }));
    const first = await post('/v1/billing/meter_events/batch', { events });
    expect(first.body).toMatchObject({ accepted: 50, duplicates: 0 });
    const replay = await post('/v1/billing/meter_events/batch', { events });
    expect(replay.body).toMatchObject({ accepted: 0, duplicates: 50 });
    for (let i = 0; i < 5; i++) await post('/v1/billing/meter_events', events[i]);
    const usage = await get(`/v1/subscriptions/${sub._id}/usage`);
    expect(usage.body.data[0].lines[0]).toMatchObject({ quantity: 100, amount: 100 });
  });

  test('an event sent before the item existed stays unattached and is never counted', async () => {
    const m = await meter();
    const { subscription: sub, customer } = await subscription();
    const early = await post('/v1/billing/meter_events', {
      event_name: m.event_name,
      identifier: 'early',
      payload: { customer_id: customer._id, value: 40 },
    });
    expect(early.body.subscription).toBeNull();
    await post(`/v1/subscriptions/${sub._id}/usage_items`, { meter: m.id, unit_amount: 1 });
    await openPeriod(sub._id);
    const replayed = await post('/v1/billing/meter_events', {
      event_name: m.event_name,
      identifier: 'early',
      payload: { customer_id: customer._id, value: 40 },
    });
    expect(replayed.status).toBe(200);
    expect(replayed.body.subscription).toBeNull();
    const later = await post('/v1/billing/meter_events', { event_name: m.event_name, payload: { customer_id: customer._id, value: 3 } });
    expect(later.body.subscription).toBe(sub._id);
    const usage = await get(`/v1/subscriptions/${sub._id}/usage`);
    expect(usage.body.data[0].lines[0]).toMatchObject({ quantity: 3, amount: 3 });
  });

  test('a deactivated meter keeps its quantity in the open period at zero price', async () => {
    const [a, b] = [await meter(), await meter({ default_aggregation: { formula: 'last' } })];
    const { subscription: sub, customer } = await subscription();
    await post(`/v1/subscriptions/${sub._id}/usage_items`, { meter: a.id, unit_amount: 10 });
    await post(`/v1/subscriptions/${sub._id}/usage_items`, { meter: b.id, unit_amount: 100 });
    await openPeriod(sub._id);
    const now = Math.floor(Date.now() / 1000);
    await post('/v1/billing/meter_events', { event_name: a.event_name, payload: { customer_id: customer._id, value: 4 } });
    await post('/v1/billing/meter_events/batch', {
      events: [
        // Ahead of arrival (allowed up to 5 minutes) so all fall inside the period that just opened.
        { event_name: b.event_name, payload: { customer_id: customer._id, value: 7 }, timestamp: now + 10 },
        { event_name: b.event_name, payload: { customer_id: customer._id, value: 3 }, timestamp: now + 30 },
        { event_name: b.event_name, payload: { customer_id: customer._id, value: 9 }, timestamp: now + 20 },
      ],
    });
    const before = (await get(`/v1/subscriptions/${sub._id}/usage`)).body.data[0];
    expect(before.amount_total).toBe(40 + 300);
    await post(`/v1/billing/meters/${a.id}/deactivate`, {});
    const after = (await get(`/v1/subscriptions/${sub._id}/usage`)).body.data[0];
    const lineA = after.lines.find((l: { meter: string }) => l.meter === a.id);
    const lineB = after.lines.find((l: { meter: string }) => l.meter === b.id);
    expect(lineA).toMatchObject({ quantity: 4, billable: 4, unit_amount: 0, amount: 0 });
    expect(lineB).toMatchObject({ quantity: 3, amount: 300 }); // last: the latest timestamp, not the latest arrival
    expect(after.amount_total).toBe(300);
    expect((await get(`/v1/subscriptions/${sub._id}/usage_items`)).body.data).toHaveLength(2);
  });

  test('unknown or foreign subscription is 404 resource_missing on id', async () => {
    const { subscription: sub } = await subscription();
    for (const [key, id] of [
      [store.key, 'sub_nope'],
      [other.key, sub._id],
    ]) {
      const res = await get(`/v1/subscriptions/${id}/usage`, key);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'resource_missing', param: 'id' });
    }
  });
});

describe('offer inheritance', () => {
  test('the routine starts usage for a new subscription of an offer with usage rows; rows are copied once, in its currency, never over an API item', async () => {
    const [m1, m2] = [await meter(), await meter()];
    const usageOffer = await seedUsageOffer(mongo.db, store.store._id, { name: 'Metered plan' });
    const row = { included_units: 0, tiers: null, rounding: 'up' as const, billing_threshold: null, label: 'Images' };
    await addOfferUsageRow(mongo.db, store.store._id, usageOffer._id, { ...row, meter: m1.id, currency: 'brl', unit_amount: 3 });
    await addOfferUsageRow(mongo.db, store.store._id, usageOffer._id, { ...row, meter: m1.id, currency: 'usd', unit_amount: 1 });
    await addOfferUsageRow(mongo.db, store.store._id, usageOffer._id, { ...row, meter: m2.id, currency: 'brl', unit_amount: 5 });
    const { subscription: usd } = await seedUsageSubscription(
      { db: mongo.db, taskQueue },
      { store: store.store, offer: usageOffer, currency: 'usd', now: Date.now() - 120_000 },
    );
    // An item set through the API before the routine ran is kept as it is.
    await post(`/v1/subscriptions/${usd._id}/usage_items`, { meter: m2.id, unit_amount: 9 });
    await runUsageRoutine({ db: mongo.db, temporal: temporal.client, taskQueue }, Date.now());
    await openPeriod(usd._id);
    const items = (await get(`/v1/subscriptions/${usd._id}/usage_items`)).body.data as {
      meter: string;
      unit_amount: number;
      source: string;
      offer: string | null;
      currency: string;
    }[];
    const byMeter = Object.fromEntries(items.map((i) => [i.meter, i]));
    // m1: the usd row; m2: no usd row, the store currency's (brl) row would apply, but the API item stays.
    expect(byMeter[m1.id]).toMatchObject({ unit_amount: 1, source: 'offer', offer: usageOffer._id, currency: 'usd' });
    expect(byMeter[m2.id]).toMatchObject({ unit_amount: 9, source: 'api', offer: null });

    // Later changes on the offer do not alter the copies, and inheritance does not happen twice.
    await addOfferUsageRow(mongo.db, store.store._id, usageOffer._id, { ...row, meter: m1.id, currency: 'usd', unit_amount: 50 });
    await call(api, store.key, 'DELETE', `/v1/subscriptions/${usd._id}/usage_items/${(byMeter[m1.id] as unknown as { id: string }).id}`);
    await runUsageRoutine({ db: mongo.db, temporal: temporal.client, taskQueue }, Date.now());
    const state = await findUsageState(mongo.db, store.store._id, usd._id);
    expect(state?.inherited).toBe(true);
    const after = (await get(`/v1/subscriptions/${usd._id}/usage_items`)).body.data as { meter: string }[];
    expect(after.map((i) => i.meter)).toEqual([m2.id]);
  });

  test('ensureUsageForSubscription (the hook for subscription creation) starts usage only for offers with usage rows', async () => {
    const m = await meter();
    const plain = await seedUsageOffer(mongo.db, store.store._id, { name: 'Plain plan' });
    const metered = await seedUsageOffer(mongo.db, store.store._id, { name: 'Metered plan 2' });
    await addOfferUsageRow(mongo.db, store.store._id, metered._id, {
      meter: m.id,
      currency: 'brl',
      unit_amount: 2,
      included_units: 0,
      tiers: null,
      rounding: 'up',
      billing_threshold: null,
      label: null,
    });
    const deps = { db: mongo.db, temporal: temporal.client, taskQueue };
    const { subscription: withoutRows } = await seedUsageSubscription({ db: mongo.db, taskQueue }, { store: store.store, offer: plain });
    const { subscription: withRows } = await seedUsageSubscription({ db: mongo.db, taskQueue }, { store: store.store, offer: metered });
    expect(await ensureUsageForSubscription(deps, withoutRows)).toBe(false);
    expect(await ensureUsageForSubscription(deps, withRows)).toBe(true);
    await openPeriod(withRows._id);
    const items = (await get(`/v1/subscriptions/${withRows._id}/usage_items`)).body.data;
    expect(items).toMatchObject([{ meter: m.id, unit_amount: 2, source: 'offer', offer: metered._id }]);
    expect(await findUsageState(mongo.db, store.store._id, withoutRows._id)).toBeNull();
  });
});

describe('closing a period', () => {
  test('waits for ingestion batches begun before the period end plus the grace, never for later ones', async () => {
    const m = await meter();
    const nowMs = Date.now();
    const { subscription: sub, customer } = await seedUsageSubscription(
      { db: mongo.db, taskQueue },
      { store: store.store, offer, now: nowMs - 2 * 60 * 60_000 },
    );
    // No workflow here: the activities run by hand, as the workflow would (what they start goes to a queue nobody polls).
    const deps = { db: mongo.db, temporal: temporal.client, taskQueue: uniqueTaskQueue('unpolled') };
    const usage = createUsageActivities(deps);
    await putUsageItem(deps, store.store._id, sub._id, { meter: m.id, unit_amount: 1 }, nowMs);
    const prepared = await usage.prepareUsagePeriod({ storeId: store.store._id, subscriptionId: sub._id, now: Math.floor(nowMs / 1000) });
    if (prepared.kind !== 'open') throw new Error(`expected an open period, got ${prepared.kind}`);
    const end = Math.floor(nowMs / 1000) - 10 * 60;
    const journal = (id: string, createdMs: number): JournalDoc => ({
      _id: id,
      store_id: store.store._id,
      customers: [customerKey(store.store._id, customer._id)],
      keys: [],
      events: [],
      lease_until: Date.now() + JOURNAL_LEASE_MS,
      created: createdMs,
    });
    const early = journal(`ubj_early_${sub._id}`, (end - 60) * 1000);
    // Begun well after the end plus the grace: a customer sending all the time always has one.
    const late = journal(`ubj_late_${sub._id}`, (end + CLOSE_GRACE_SECONDS) * 1000 + 5 * 60_000);
    await journalsCollection(mongo.db).insertMany([early, late]);
    const close = () =>
      usage.closeUsagePeriod({
        storeId: store.store._id,
        subscriptionId: sub._id,
        periodId: prepared.period.id,
        reason: 'period_end',
        end,
        now: Math.floor(Date.now() / 1000),
      });
    try {
      await expect(close()).rejects.toMatchObject({ type: 'UsageBatchesInFlight' });
      await journalsCollection(mongo.db).deleteOne({ _id: early._id });
      const closed = await close();
      expect(closed.period).toMatchObject({ id: prepared.period.id, status: 'closed', close_reason: 'period_end', period_end: end });
    } finally {
      await journalsCollection(mongo.db).deleteMany({ _id: { $in: [early._id, late._id] } });
    }
  });
});
