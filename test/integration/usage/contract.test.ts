// What this tests: four metered-usage rules of the spec, over real HTTP with two API processes (this one
// and a child with its own memory) and a real worker on the Temporal dev server. Event rule 6: the usage
// routine on the worker sends one billing.meter.error_report_triggered per meter and finished hour, with
// the whole hour's count (events from both processes summed), and never a second one, even when the
// routine that sent it died before marking the hour. Usage rule 1: a non-zero unit_amount beside tiers is
// kept and left out of the price. Event summaries: any instants without a window, aligned ones with a
// window, at most one year. Meter deactivation through one process refuses the next event on the other;
// a non-object payload on the single call is invalid_payload.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { HOUR, windowStart } from '../../../domain/usage-periods';
import { ensureUsageRoutine, routineState, runRoutineNow, usageRoutineWorkflowId } from '../../../services/operations/routines';
import { ERROR_REPORT_DELAY_SECONDS, sendErrorReports } from '../../../services/usage/error-reports';
import { ingestMeterEvents } from '../../../services/usage/ingestion';
import { findUsageState, meterEventsCollection } from '../../../store/usage';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { startApiProcess, type ApiProcess } from '../../support/app-processes';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { stopRoutines } from '../../support/routines';
import { createTestWorker } from '../../support/worker';
import { seedCustomer, seedUsageOffer, seedUsageSubscription } from '../../support/usage';

let mongo: TestMongo;
let temporal: TestTemporal;
let api: TestApi;
let other: ApiProcess;
let worker: Worker;
let running: Promise<void>;
let store: TestStore;
const taskQueue = uniqueTaskQueue('usage-contract');

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  const shared = { MONGODB_DB: mongo.db.databaseName, TEMPORAL_NAMESPACE: temporal.namespace, TEMPORAL_TASK_QUEUE: taskQueue };
  [api, other, worker] = await Promise.all([
    startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue }),
    startApiProcess(shared),
    createTestWorker(mongo, temporal, taskQueue),
  ]);
  running = worker.run();
  store = await createTestStore(mongo.db);
}, 240_000);

afterAll(async () => {
  if (temporal) await stopRoutines(temporal.client, taskQueue);
  worker?.shutdown();
  await running?.catch(() => undefined);
  await other?.group.stop();
  await api?.close();
  await temporal?.close();
  await mongo?.close();
});

let n = 0;
const nowSeconds = () => Math.floor(Date.now() / 1000);
const post = (path: string, json: unknown, to: { url: string } = api) => call(to, store.key, 'POST', path, { json });
const get = (path: string, to: { url: string } = api) => call(to, store.key, 'GET', path);

async function meter(extra: Record<string, unknown> = {}) {
  const res = await post('/v1/billing/meters', { display_name: `Meter ${++n}`, event_name: `contract.${n}`, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; event_name: string };
}

interface ErrorReport {
  meter: string;
  validation_start: number;
  validation_end: number;
  reason: { error_count: number; error_types: { code: string; error_count: number }[] };
}

/** The meter's error reports as the API lists them (newest first), with their envelopes. */
async function reportsOf(meterId: string): Promise<{ type: string; api_version: string; object: ErrorReport }[]> {
  const res = await get('/v1/events?type=billing.meter.error_report_triggered&limit=100');
  expect(res.status).toBe(200);
  return (res.body.data as { type: string; api_version: string; data: { object: ErrorReport } }[])
    .filter((e) => e.data.object.meter === meterId)
    .map((e) => ({ type: e.type, api_version: e.api_version, object: e.data.object }));
}

describe('billing.meter.error_report_triggered (event rule 6)', () => {
  test("the worker's usage routine reports a finished hour once with its whole count; the running hour waits; a lost mark sends nothing twice", async () => {
    const m = await meter();
    const customer = await seedCustomer(mongo.db, store.store._id);
    const offer = await seedUsageOffer(mongo.db, store.store._id);
    const { customer: subscribed, subscription: sub } = await seedUsageSubscription({ db: mongo.db, taskQueue }, { store: store.store, offer });
    expect((await post(`/v1/subscriptions/${sub._id}/usage_items`, { meter: m.id, unit_amount: 1 })).status).toBe(201);
    // An hour already over (its report due): events arrived in it at two moments, as two API calls would
    // have ingested them; HTTP can only send into the running hour.
    const pastHour = windowStart(nowSeconds() - ERROR_REPORT_DELAY_SECONDS, HOUR) - HOUR;
    const deps = { db: mongo.db, temporal: temporal.client, taskQueue };
    const ev = (customerId: string, identifier?: string) => ({
      event_name: m.event_name,
      identifier,
      payload: { customer_id: customerId, value: 1 },
    });
    const first = await ingestMeterEvents(deps, store.store._id, [ev(customer._id, 'a'), ev(customer._id, 'b'), ev(customer._id)], {
      now: (pastHour + 600) * 1000,
    });
    const second = await ingestMeterEvents(deps, store.store._id, [ev(customer._id, 'a'), ev(customer._id), ev(subscribed._id)], {
      now: (pastHour + 1800) * 1000,
    });
    expect([...first, ...second].map((r) => r.status)).toEqual(['accepted', 'accepted', 'accepted', 'duplicate', 'accepted', 'accepted']);
    // The running hour: reported only once it is over.
    expect((await post('/v1/billing/meter_events', ev(customer._id))).status).toBe(201);

    await ensureUsageRoutine(temporal.client, taskQueue, { usageEveryMs: 60 * 60_000 });
    const [report, ...more] = await waitFor(
      async () => {
        const found = await reportsOf(m.id);
        return found.length > 0 ? found : null;
      },
      { timeoutMs: 30_000, description: 'the routine to send the finished hour’s report' },
    );
    expect(more).toEqual([]);
    // 4 unattached events: the duplicate is not counted again, the attached one not at all.
    expect(report).toMatchObject({
      type: 'billing.meter.error_report_triggered',
      api_version: '2026-11-01',
      object: {
        meter: m.id,
        validation_start: pastHour,
        validation_end: pastHour + HOUR,
        reason: { error_count: 4, error_types: [{ code: 'no_subscription_for_customer', error_count: 4 }] },
      },
    });

    // A routine that died after sending and before marking the hour: the next run (run_now) sends nothing new.
    const routine = usageRoutineWorkflowId(taskQueue);
    const runs = await waitFor(async () => (await routineState(temporal.client, routine)).runs || null, {
      timeoutMs: 30_000,
      description: 'the first run to end',
    });
    await mongo.db
      .collection<{ _id: string; reported: boolean }>('usage_error_reports')
      .updateOne({ _id: `${m.id}|${pastHour}` }, { $set: { reported: false } });
    await runRoutineNow(temporal.client, routine);
    await waitFor(async () => (await routineState(temporal.client, routine)).runs > runs, {
      timeoutMs: 30_000,
      description: 'the routine to run again',
    });
    expect(
      await mongo.db.collection<{ _id: string; reported: boolean }>('usage_error_reports').findOne({ _id: `${m.id}|${pastHour}` }),
    ).toMatchObject({ reported: true });
    expect(await reportsOf(m.id)).toHaveLength(1);
  });

  test("events sent to two API processes at once count in the hour's one report", async () => {
    const m = await meter();
    const customer = await seedCustomer(mongo.db, store.store._id);
    const ev = () => ({ event_name: m.event_name, payload: { customer_id: customer._id, value: 1 } });
    const sent = await Promise.all([
      post('/v1/billing/meter_events/batch', { events: [ev(), ev(), ev()] }),
      post('/v1/billing/meter_events/batch', { events: [ev(), ev()] }, other),
      post('/v1/billing/meter_events', ev(), other),
      post('/v1/billing/meter_events', ev()),
    ]);
    expect(sent.map((r) => r.status)).toEqual([200, 200, 201, 201]);
    expect(await reportsOf(m.id)).toEqual([]);

    // Once the hour (or both hours, when the sends straddled a boundary) is over: one report each, 7 in all.
    const arrived = await meterEventsCollection(mongo.db).find({ meter: m.id }).toArray();
    const hours = [...new Set(arrived.map((e) => windowStart(e.created, HOUR)))].sort();
    await sendErrorReports({ db: mongo.db }, (hours.at(-1)! + HOUR + ERROR_REPORT_DELAY_SECONDS) * 1000);
    const reports = await reportsOf(m.id);
    expect(reports.map((r) => r.object.validation_start).sort()).toEqual(hours);
    expect(reports.reduce((sum, r) => sum + r.object.reason.error_count, 0)).toBe(7);
  });
});

describe('tiers beside unit_amount (usage rule 1)', () => {
  test('a non-zero unit_amount beside tiers is kept on the item and left out of the price', async () => {
    const m = await meter();
    const offer = await seedUsageOffer(mongo.db, store.store._id);
    const { subscription: sub, customer } = await seedUsageSubscription({ db: mongo.db, taskQueue }, { store: store.store, offer });
    const tiers = [
      { up_to: 10, unit_amount: 2 },
      { up_to: null, unit_amount: 1, flat_amount: 50 },
    ];
    const item = await post(`/v1/subscriptions/${sub._id}/usage_items`, { meter: m.id, unit_amount: 500, tiers });
    expect(item.status, JSON.stringify(item.body)).toBe(201);
    expect(item.body).toMatchObject({ unit_amount: 500, tiers });
    await waitFor(async () => (await findUsageState(mongo.db, store.store._id, sub._id))?.open ?? null, {
      timeoutMs: 20_000,
      description: 'period open',
    });

    const events = [6, 9].map((value) => ({ event_name: m.event_name, payload: { customer_id: customer._id, value } }));
    expect((await post('/v1/billing/meter_events/batch', { events }, other)).body.accepted).toBe(2);
    const usage = await get(`/v1/subscriptions/${sub._id}/usage`);
    // 10 x 2 + 5 x 1 + 50 flat = 75; with unit_amount it would be 7,500.
    expect(usage.body.data[0]).toMatchObject({
      lines: [{ meter: m.id, quantity: 15, included: 0, billable: 15, unit_amount: null, amount: 75 }],
      amount_total: 75,
    });
    expect((await get(`/v1/subscriptions/${sub._id}/usage_items`)).body.data[0]).toMatchObject({ unit_amount: 500, tiers });
  });
});

describe('event summaries: windows and range', () => {
  test('without a window any two instants work; with one they must be aligned; the range is at most one year', async () => {
    const m = await meter();
    const customer = (await seedCustomer(mongo.db, store.store._id))._id;
    const base = windowStart(nowSeconds() - 10 * 86_400, HOUR);
    const events = [
      [base + 100, 1],
      [base + 1_000, 2],
      [base + HOUR + 5, 4],
      [base + 2 * HOUR + 30, 8],
    ].map(([timestamp, value]) => ({ event_name: m.event_name, timestamp, payload: { customer_id: customer, value } }));
    expect((await post('/v1/billing/meter_events/batch', { events })).body.accepted).toBe(4);
    const summaries = (query: string) => get(`/v1/billing/meters/${m.id}/event_summaries?customer=${customer}&${query}`);

    // Partial hours at both ends: only the events inside [start, end) count.
    const any = await summaries(`start_time=${base + 500}&end_time=${base + 2 * HOUR + 30}`);
    expect(any.status, JSON.stringify(any.body)).toBe(200);
    expect(any.body.data).toEqual([
      expect.objectContaining({
        object: 'billing.meter_event_summary',
        meter: m.id,
        customer,
        aggregated_value: 6,
        start_time: base + 500,
        end_time: base + 2 * HOUR + 30,
      }),
    ]);

    const unaligned = await summaries(`start_time=${base + 500}&end_time=${base + 2 * HOUR}&value_grouping_window=hour`);
    expect(unaligned.status).toBe(400);
    expect(unaligned.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'parameter_invalid',
      param: 'start_time',
      message: 'start_time must be at the start of an hour (a multiple of 3600).',
    });
    const hourly = await summaries(`start_time=${base}&end_time=${base + 2 * HOUR}&value_grouping_window=hour`);
    expect(hourly.body.data.map((s: { aggregated_value: number }) => s.aggregated_value)).toEqual([4, 3]);

    const start = base + 17;
    const yearLater = new Date(start * 1000);
    yearLater.setUTCFullYear(yearLater.getUTCFullYear() + 1);
    const end = yearLater.getTime() / 1000;
    const year = await summaries(`start_time=${start}&end_time=${end}`);
    expect(year.status).toBe(200);
    expect(year.body.data[0]).toMatchObject({ aggregated_value: 15, start_time: start, end_time: end });
    const over = await summaries(`start_time=${start}&end_time=${end + 1}`);
    expect(over.status).toBe(400);
    expect(over.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'parameter_invalid',
      param: 'end_time',
      message: 'The range between start_time and end_time is at most one year.',
    });
  });
});

describe('meter deactivation and payloads on the single call', () => {
  test('a deactivation through the other process refuses the next event here at once, single and batch', async () => {
    const m = await meter();
    const customer = (await seedCustomer(mongo.db, store.store._id))._id;
    const ev = () => ({ event_name: m.event_name, payload: { customer_id: customer, value: 1 } });
    // This process has just read the active meter.
    expect((await post('/v1/billing/meter_events', ev())).status).toBe(201);

    const deactivated = await post(`/v1/billing/meters/${m.id}/deactivate`, undefined, other);
    expect(deactivated.body).toMatchObject({ id: m.id, status: 'inactive', status_transitions: { deactivated_at: expect.any(Number) } });
    const single = await post('/v1/billing/meter_events', ev());
    expect(single.status).toBe(400);
    expect(single.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'meter_inactive',
      param: 'event_name',
      message: `The meter for '${m.event_name}' is inactive.`,
    });
    const batch = await post('/v1/billing/meter_events/batch', { events: [ev(), ev()] });
    expect(batch.status).toBe(400);
    expect(batch.body.error).toMatchObject({ type: 'invalid_request_error', code: 'meter_inactive', param: 'events', accepted: 0, errors: 2 });
    expect(batch.body.error.results[1]).toEqual({
      status: 'error',
      error: { code: 'meter_inactive', param: 'event_name', message: `The meter for '${m.event_name}' is inactive.` },
    });
  });

  test('a payload that is not an object is 400 invalid_payload on the single call, JSON or form, as in the batch', async () => {
    const m = await meter();
    const expected = {
      type: 'invalid_request_error',
      code: 'invalid_payload',
      param: 'payload',
      message: 'payload is an object of keys and values.',
    };
    for (const payload of ['customer_id=cust_1', [1, 2], 42, false]) {
      const single = await post('/v1/billing/meter_events', { event_name: m.event_name, payload }, other);
      expect(single.status, JSON.stringify(payload)).toBe(400);
      expect(single.body.error).toMatchObject(expected);
      const batch = await post('/v1/billing/meter_events/batch', { events: [{ event_name: m.event_name, payload }] }, other);
      expect(batch.body.error.results[0].error).toEqual({ code: 'invalid_payload', param: 'payload', message: expected.message });
    }
    const form = await call(other, store.key, 'POST', '/v1/billing/meter_events', { form: `event_name=${m.event_name}&payload=text` });
    expect(form.status).toBe(400);
    expect(form.body.error).toMatchObject(expected);
  });
});
