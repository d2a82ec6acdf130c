// What this tests: GET /v1/billing/meters/{id}/event_summaries over real HTTP against the test database:
// hourly and daily windows and a single range, only windows with events, newest first, events
// attached or not, sum/count/last meters, one customer at a time, and each refusal with its param.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { OfferDoc } from '../../../store/collections';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, type TestMongo } from '../../support/env';
import { seedCustomer, seedUsageOffer, seedUsageSubscription } from '../../support/usage';

const HOUR = 3600;
const DAY = 24 * HOUR;

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;
let offer: OfferDoc;
/** Start of the UTC day three days ago: every event below is well inside the 35-day window. */
const D = Math.floor(Date.now() / 1000 / DAY) * DAY - 3 * DAY;

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  store = await createTestStore(mongo.db);
  offer = await seedUsageOffer(mongo.db, store.store._id);
});

afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

let n = 0;
async function meter(formula: 'sum' | 'count' | 'last' = 'sum') {
  const res = await call(api, store.key, 'POST', '/v1/billing/meters', {
    json: { display_name: 'S', event_name: `sum.${++n}`, default_aggregation: { formula } },
  });
  return res.body as { id: string; event_name: string };
}

async function send(m: { event_name: string }, customer: string, points: [number, number][]) {
  const res = await call(api, store.key, 'POST', '/v1/billing/meter_events/batch', {
    json: { events: points.map(([timestamp, value]) => ({ event_name: m.event_name, payload: { customer_id: customer, value }, timestamp })) },
  });
  expect(res.body.accepted).toBe(points.length);
}

const summaries = (meterId: string, query: string) => call(api, store.key, 'GET', `/v1/billing/meters/${meterId}/event_summaries?${query}`);
const values = (body: { data: { start_time: number; end_time: number; aggregated_value: number }[] }) =>
  body.data.map((s) => [s.start_time - D, s.end_time - D, s.aggregated_value]);

const points: [number, number][] = [
  [D + HOUR + 600, 2],
  [D + HOUR + 3000, 3],
  [D + 5 * HOUR, 4],
  [D + DAY + 2 * HOUR, 10],
];

describe('windows', () => {
  let m: { id: string; event_name: string };
  let customer: string;

  beforeAll(async () => {
    m = await meter();
    customer = (await seedCustomer(mongo.db, store.store._id))._id;
    await send(m, customer, points);
    // Another customer's events never show up.
    await send(m, (await seedCustomer(mongo.db, store.store._id))._id, [[D + HOUR + 60, 1000]]);
  });

  test('hourly windows: only windows with events, newest first, with the summary object shape', async () => {
    const res = await summaries(m.id, `customer=${customer}&start_time=${D}&end_time=${D + 2 * DAY}&value_grouping_window=hour`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'list', url: `/v1/billing/meters/${m.id}/event_summaries`, has_more: false });
    expect(values(res.body)).toEqual([
      [DAY + 2 * HOUR, DAY + 3 * HOUR, 10],
      [5 * HOUR, 6 * HOUR, 4],
      [HOUR, 2 * HOUR, 5],
    ]);
    expect(res.body.data[0]).toMatchObject({ object: 'billing.meter_event_summary', meter: m.id, customer, livemode: true });
    expect(typeof res.body.data[0].id).toBe('string');
  });

  test('daily windows sum each UTC day', async () => {
    const res = await summaries(m.id, `customer=${customer}&start_time=${D}&end_time=${D + 3 * DAY}&value_grouping_window=day`);
    expect(values(res.body)).toEqual([
      [DAY, 2 * DAY, 10],
      [0, DAY, 9],
    ]);
  });

  test('without a window: one summary of the whole range, whole days and edge hours alike', async () => {
    const whole = await summaries(m.id, `customer=${customer}&start_time=${D}&end_time=${D + 2 * DAY}`);
    expect(values(whole.body)).toEqual([[0, 2 * DAY, 19]]);
    const partial = await summaries(m.id, `customer=${customer}&start_time=${D + 2 * HOUR}&end_time=${D + DAY + 3 * HOUR}`);
    expect(values(partial.body)).toEqual([[2 * HOUR, DAY + 3 * HOUR, 14]]);
    const empty = await summaries(m.id, `customer=${customer}&start_time=${D + 10 * HOUR}&end_time=${D + 20 * HOUR}`);
    expect(empty.body.data).toEqual([]);
  });

  test('without a window, start_time and end_time are any instants: partial hours count exactly the events inside', async () => {
    // [D+1h+601s, D+5h+1s): the events at 1h+3000s (3) and 5h (4), not the one at 1h+600s.
    const across = await summaries(m.id, `customer=${customer}&start_time=${D + HOUR + 601}&end_time=${D + 5 * HOUR + 1}`);
    expect(values(across.body)).toEqual([[HOUR + 601, 5 * HOUR + 1, 7]]);
    // Inside one hour: only the event at 1h+600s.
    const inside = await summaries(m.id, `customer=${customer}&start_time=${D + HOUR + 500}&end_time=${D + HOUR + 700}`);
    expect(values(inside.body)).toEqual([[HOUR + 500, HOUR + 700, 2]]);
    // Over whole days plus both partial ends.
    const wide = await summaries(m.id, `customer=${customer}&start_time=${D + HOUR + 601}&end_time=${D + DAY + 2 * HOUR + 1}`);
    expect(values(wide.body)).toEqual([[HOUR + 601, DAY + 2 * HOUR + 1, 17]]);
  });
});

describe('formulas and attachment', () => {
  test('count meters count events; last meters keep the value with the latest timestamp', async () => {
    const customer = (await seedCustomer(mongo.db, store.store._id))._id;
    const counted = await meter('count');
    await send(counted, customer, points);
    const c = await summaries(counted.id, `customer=${customer}&start_time=${D}&end_time=${D + 2 * DAY}&value_grouping_window=day`);
    expect(values(c.body)).toEqual([
      [DAY, 2 * DAY, 1],
      [0, DAY, 3],
    ]);
    const last = await meter('last');
    await send(last, customer, [
      [D + 5 * HOUR, 4],
      [D + HOUR + 3000, 3],
      [D + HOUR + 600, 2],
    ]);
    const l = await summaries(last.id, `customer=${customer}&start_time=${D}&end_time=${D + DAY}`);
    expect(values(l.body)).toEqual([[0, DAY, 4]]);
  });

  test('attached and unattached events are summed alike', async () => {
    const m = await meter();
    const { subscription, customer } = await seedUsageSubscription({ db: mongo.db, taskQueue: 'unused' }, { store: store.store, offer });
    await send(m, customer._id, [[D + HOUR, 5]]);
    await call(api, store.key, 'POST', `/v1/subscriptions/${subscription._id}/usage_items`, { json: { meter: m.id, unit_amount: 1 } });
    const attached = await call(api, store.key, 'POST', '/v1/billing/meter_events', {
      json: { event_name: m.event_name, payload: { customer_id: customer._id, value: 6 } },
    });
    expect(attached.body.subscription).toBe(subscription._id);
    const now = Math.floor(Date.now() / 1000);
    const res = await summaries(m.id, `customer=${customer._id}&start_time=${D}&end_time=${Math.ceil((now + 1) / HOUR) * HOUR}`);
    expect(res.body.data[0].aggregated_value).toBe(11);
  });
});

describe('refusals', () => {
  test.each([
    [
      'start_time not on an hour with hourly windows',
      `start_time=${D + 60}&end_time=${D + DAY}&value_grouping_window=hour`,
      'parameter_invalid',
      'start_time',
    ],
    [
      'end_time not on an hour with hourly windows',
      `start_time=${D}&end_time=${D + DAY + 1}&value_grouping_window=hour`,
      'parameter_invalid',
      'end_time',
    ],
    ['day window off a UTC day', `start_time=${D + HOUR}&end_time=${D + DAY}&value_grouping_window=day`, 'parameter_invalid', 'start_time'],
    ['end before start', `start_time=${D + DAY}&end_time=${D}`, 'parameter_invalid', 'end_time'],
    ['more than one year', `start_time=${D - 400 * DAY}&end_time=${D}`, 'parameter_invalid', 'end_time'],
    ['an unknown window', `start_time=${D}&end_time=${D + DAY}&value_grouping_window=week`, 'parameter_invalid', 'value_grouping_window'],
    ['no start_time', `end_time=${D + DAY}`, 'parameter_missing', 'start_time'],
  ])('%s is 400 %s on %s', async (_what, query, code, param) => {
    const m = await meter();
    const customer = (await seedCustomer(mongo.db, store.store._id))._id;
    const res = await summaries(m.id, `customer=${customer}&${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code, param });
  });

  test('a range of exactly one calendar year is accepted; a second more is refused', async () => {
    const m = await meter();
    const customer = (await seedCustomer(mongo.db, store.store._id))._id;
    const start = D - 300 * DAY;
    const yearLater = new Date(start * 1000);
    yearLater.setUTCFullYear(yearLater.getUTCFullYear() + 1);
    const end = yearLater.getTime() / 1000;
    expect((await summaries(m.id, `customer=${customer}&start_time=${start}&end_time=${end}&value_grouping_window=day`)).status).toBe(200);
    const over = await summaries(m.id, `customer=${customer}&start_time=${start}&end_time=${end + 1}`);
    expect(over.body.error).toMatchObject({ code: 'parameter_invalid', param: 'end_time' });
  });

  test('missing customer is parameter_missing; an unknown customer or meter is 404 resource_missing', async () => {
    const m = await meter();
    const noCustomer = await summaries(m.id, `start_time=${D}&end_time=${D + DAY}`);
    expect(noCustomer.body.error).toMatchObject({ code: 'parameter_missing', param: 'customer' });
    const unknownCustomer = await summaries(m.id, `customer=cust_nope&start_time=${D}&end_time=${D + DAY}`);
    expect(unknownCustomer.status).toBe(404);
    expect(unknownCustomer.body.error).toMatchObject({ code: 'resource_missing', param: 'customer' });
    const customer = (await seedCustomer(mongo.db, store.store._id))._id;
    const unknownMeter = await summaries('mtr_nope', `customer=${customer}&start_time=${D}&end_time=${D + DAY}`);
    expect(unknownMeter.status).toBe(404);
    expect(unknownMeter.body.error).toMatchObject({ code: 'resource_missing', param: 'id' });
  });
});
