// What this tests: meter event ingestion over real HTTP against the test database (no workflows needed):
// idempotent identifiers (201 then 200 with the stored event), generated identifiers, payload and
// timestamp rules with their error codes, the batch call's per-item results and statuses,
// attachment on arrival (event rule 5) and the hourly error report for unattached events.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { collections, type OfferDoc } from '../../../store/collections';
import { meterEventsCollection } from '../../../store/usage';
import { ERROR_REPORT_DELAY_SECONDS, sendErrorReports } from '../../../services/usage/error-reports';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, type TestMongo } from '../../support/env';
import { seedCustomer, seedUsageOffer, seedUsageSubscription } from '../../support/usage';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;
let other: TestStore;
let offer: OfferDoc;

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  store = await createTestStore(mongo.db);
  other = await createTestStore(mongo.db);
  offer = await seedUsageOffer(mongo.db, store.store._id);
});

afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

let n = 0;
const now = () => Math.floor(Date.now() / 1000);

async function meter(extra: Record<string, unknown> = {}, key = store.key) {
  const res = await call(api, key, 'POST', '/v1/billing/meters', { json: { display_name: 'Images', event_name: `images.${++n}`, ...extra } });
  expect(res.status).toBe(201);
  return res.body as { id: string; event_name: string };
}

const send = (json: unknown, key = store.key) => call(api, key, 'POST', '/v1/billing/meter_events', { json });
const batch = (events: unknown[], key = store.key) => call(api, key, 'POST', '/v1/billing/meter_events/batch', { json: { events } });

const deps = () => ({ db: mongo.db, taskQueue: 'unused' });

async function subscriptionWithItem(meterId: string, customer?: Awaited<ReturnType<typeof seedCustomer>>) {
  const { subscription, customer: c } = await seedUsageSubscription(deps(), { store: store.store, offer, customer });
  const item = await call(api, store.key, 'POST', `/v1/subscriptions/${subscription._id}/usage_items`, { json: { meter: meterId, unit_amount: 1 } });
  expect(item.status).toBe(201);
  return { subscription, customer: c };
}

describe('single event', () => {
  test('a new identifier is 201 with the event; the same identifier again is 200 with the stored event, stored once', async () => {
    const m = await meter();
    const customer = await seedCustomer(mongo.db, store.store._id);
    const body = { event_name: m.event_name, identifier: 'req-1', payload: { customer_id: customer._id, value: 3 }, timestamp: now() - 60 };
    const first = await send(body);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      object: 'billing.meter_event',
      event_name: m.event_name,
      identifier: 'req-1',
      payload: { customer_id: customer._id, value: 3 },
      customer: customer._id,
      subscription: null,
      value: 3,
      timestamp: body.timestamp,
      livemode: true,
    });
    expect(first.body.id).toMatch(/^mev_/);
    const again = await send({ ...body, payload: { customer_id: customer._id, value: 99 } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await meterEventsCollection(mongo.db).countDocuments({ store_id: store.store._id, meter: m.id })).toBe(1);
  });

  test('the same identifier on two meters is two events (idempotency is per meter)', async () => {
    const [a, b] = [await meter(), await meter()];
    const customer = await seedCustomer(mongo.db, store.store._id);
    const ra = await send({ event_name: a.event_name, identifier: 'shared', payload: { customer_id: customer._id, value: 1 } });
    const rb = await send({ event_name: b.event_name, identifier: 'shared', payload: { customer_id: customer._id, value: 1 } });
    expect([ra.status, rb.status]).toEqual([201, 201]);
    expect(ra.body.id).not.toBe(rb.body.id);
  });

  test('without identifier one is generated and every call counts', async () => {
    const m = await meter();
    const customer = await seedCustomer(mongo.db, store.store._id);
    const body = { event_name: m.event_name, payload: { customer_id: customer._id, value: 1 } };
    const [a, b] = [await send(body), await send(body)];
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.identifier).not.toBe(b.body.identifier);
    expect(a.body.timestamp).toBeGreaterThanOrEqual(now() - 5);
  });

  test('stripe_customer_id is accepted as the customer id; a count meter counts 1 whatever the value', async () => {
    const m = await meter({ default_aggregation: { formula: 'count' } });
    const customer = await seedCustomer(mongo.db, store.store._id);
    const res = await send({ event_name: m.event_name, payload: { stripe_customer_id: customer._id } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ customer: customer._id, value: 1 });
  });

  test('a custom customer key and value key are read from the payload; form bodies send numbers as text', async () => {
    const m = await meter({ customer_mapping: { event_payload_key: 'account' }, value_settings: { event_payload_key: 'gb' } });
    const customer = await seedCustomer(mongo.db, store.store._id);
    const res = await call(api, store.key, 'POST', '/v1/billing/meter_events', {
      form: `event_name=${m.event_name}&payload[account]=${customer._id}&payload[gb]=2.5&timestamp=${now() - 10}`,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ customer: customer._id, value: 2.5 });
  });

  test('payload rules: over 20 keys, a nested value, a missing customer or value are 400 invalid_payload', async () => {
    const m = await meter();
    const customer = await seedCustomer(mongo.db, store.store._id);
    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, i]));
    const cases: [unknown, string][] = [
      [{ ...many, customer_id: customer._id }, 'payload'],
      [{ customer_id: customer._id, value: 1, extra: { nested: true } }, 'payload.extra'],
      [{ customer_id: customer._id, value: 1, list: [1] }, 'payload.list'],
      [{ customer_id: customer._id, value: 1, nothing: null }, 'payload.nothing'],
      [{ value: 1 }, 'payload.customer_id'],
      [{ customer_id: customer._id }, 'payload.value'],
      [{ customer_id: customer._id, value: 'lots' }, 'payload.value'],
      [{ customer_id: 42, value: 1 }, 'payload.customer_id'],
    ];
    for (const [payload, param] of cases) {
      const res = await send({ event_name: m.event_name, payload });
      expect(res.status, JSON.stringify(payload)).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_payload', param });
    }
    const twenty = Object.fromEntries(Array.from({ length: 18 }, (_, i) => [`k${i}`, i % 2 ? 'x' : true]));
    expect((await send({ event_name: m.event_name, payload: { ...twenty, customer_id: customer._id, value: 1 } })).status).toBe(201);
  });

  test('timestamp more than 35 days back or 5 minutes ahead is 400 timestamp_out_of_range; the edges are accepted', async () => {
    const m = await meter();
    const customer = await seedCustomer(mongo.db, store.store._id);
    const at = (timestamp: number) => send({ event_name: m.event_name, payload: { customer_id: customer._id, value: 1 }, timestamp });
    for (const timestamp of [now() - 35 * 86400 - 120, now() + 5 * 60 + 120]) {
      const res = await at(timestamp);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'timestamp_out_of_range', param: 'timestamp' });
    }
    expect((await at(now() - 35 * 86400 + 120)).status).toBe(201);
    expect((await at(now() + 4 * 60)).status).toBe(201);
  });

  test('unknown event_name is 400 no_meter_found; an inactive meter is 400 meter_inactive', async () => {
    const customer = await seedCustomer(mongo.db, store.store._id);
    const unknown = await send({ event_name: 'never.created', payload: { customer_id: customer._id, value: 1 } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ type: 'invalid_request_error', code: 'no_meter_found', param: 'event_name' });
    const m = await meter();
    await call(api, store.key, 'POST', `/v1/billing/meters/${m.id}/deactivate`);
    const inactive = await send({ event_name: m.event_name, payload: { customer_id: customer._id, value: 1 } });
    expect(inactive.status).toBe(400);
    expect(inactive.body.error).toMatchObject({ type: 'invalid_request_error', code: 'meter_inactive', param: 'event_name' });
  });

  test('a meter of another store is no_meter_found; an unknown or foreign customer is 404 resource_missing', async () => {
    const foreign = await meter({}, other.key);
    const customer = await seedCustomer(mongo.db, store.store._id);
    const res = await send({ event_name: foreign.event_name, payload: { customer_id: customer._id, value: 1 } });
    expect(res.body.error.code).toBe('no_meter_found');
    const m = await meter();
    const stranger = await seedCustomer(mongo.db, other.store._id);
    for (const id of ['cust_nope', stranger._id]) {
      const missing = await send({ event_name: m.event_name, payload: { customer_id: id, value: 1 } });
      expect(missing.status).toBe(404);
      expect(missing.body.error).toMatchObject({ type: 'invalid_request_error', code: 'resource_missing', param: 'payload.customer_id' });
    }
  });

  test('missing event_name or payload is 400 parameter_missing; an identifier over 100 characters parameter_invalid', async () => {
    const customer = await seedCustomer(mongo.db, store.store._id);
    const noName = await send({ payload: { customer_id: customer._id, value: 1 } });
    expect(noName.body.error).toMatchObject({ code: 'parameter_missing', param: 'event_name' });
    const m = await meter();
    const noPayload = await send({ event_name: m.event_name });
    expect(noPayload.body.error).toMatchObject({ code: 'parameter_missing', param: 'payload' });
    const long = await send({ event_name: m.event_name, identifier: 'i'.repeat(101), payload: { customer_id: customer._id, value: 1 } });
    expect(long.body.error).toMatchObject({ code: 'parameter_invalid', param: 'identifier' });
  });
});

describe('batch', () => {
  test('each item is answered on its own: accepted, duplicate (earlier or in the same batch) or error; 200', async () => {
    const m = await meter();
    const customer = await seedCustomer(mongo.db, store.store._id);
    const ev = (identifier: string, value: unknown = 1) => ({ event_name: m.event_name, identifier, payload: { customer_id: customer._id, value } });
    await send(ev('old'));
    const res = await batch([
      ev('a'),
      ev('old'),
      ev('b', 'x'),
      { event_name: 'nope', payload: { customer_id: customer._id, value: 1 } },
      ev('a'),
      ev('c'),
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'billing.meter_event_batch', accepted: 2, duplicates: 2, errors: 2 });
    expect(res.body.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'duplicate', 'error', 'error', 'duplicate', 'accepted']);
    expect(res.body.results[2].error).toMatchObject({ code: 'invalid_payload', param: 'payload.value' });
    expect(res.body.results[3].error).toMatchObject({ code: 'no_meter_found' });
    expect(res.body.results[4].id).toBe(res.body.results[0].id);
    expect(await meterEventsCollection(mongo.db).countDocuments({ store_id: store.store._id, meter: m.id })).toBe(3); // old, a, c
  });

  test('a batch of only duplicates is 200 (the events are in); a batch where nothing got in is 400 with the results', async () => {
    const m = await meter();
    const customer = await seedCustomer(mongo.db, store.store._id);
    const ev = { event_name: m.event_name, identifier: 'dup', payload: { customer_id: customer._id, value: 1 } };
    await send(ev);
    const dups = await batch([ev, ev]);
    expect(dups.status).toBe(200);
    expect(dups.body).toMatchObject({ accepted: 0, duplicates: 2, errors: 0 });
    const none = await batch([
      { event_name: 'nope', payload: { customer_id: customer._id, value: 1 } },
      { ...ev, timestamp: now() + 3600 },
    ]);
    expect(none.status).toBe(400);
    expect(none.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_invalid', param: 'events', accepted: 0, errors: 2 });
    expect(none.body.error.results.map((r: { error: { code: string } }) => r.error.code)).toEqual(['no_meter_found', 'timestamp_out_of_range']);
    const sameCode = await batch([{ event_name: 'nope', payload: {} }]);
    expect(sameCode.status).toBe(400);
    expect(sameCode.body.error.code).toBe('no_meter_found');
  });

  test('0 or 101 events, or events that is not a list, is 400 parameter_invalid on events', async () => {
    const m = await meter();
    const customer = await seedCustomer(mongo.db, store.store._id);
    const ev = { event_name: m.event_name, payload: { customer_id: customer._id, value: 1 } };
    for (const events of [[], Array.from({ length: 101 }, () => ev)]) {
      const res = await batch(events);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'parameter_invalid', param: 'events' });
    }
    const notList = await call(api, store.key, 'POST', '/v1/billing/meter_events/batch', { json: { events: 'x' } });
    expect(notList.body.error).toMatchObject({ code: 'parameter_invalid', param: 'events' });
    const hundred = await batch(Array.from({ length: 100 }, () => ev));
    expect(hundred.status).toBe(200);
    expect(hundred.body.accepted).toBe(100);
  });
});

describe('attachment on arrival (event rule 5)', () => {
  test('attaches to the active subscription with an item for the meter; none without an item', async () => {
    const m = await meter();
    const bare = await meter();
    const { subscription, customer } = await subscriptionWithItem(m.id);
    const attached = await send({ event_name: m.event_name, payload: { customer_id: customer._id, value: 1 } });
    expect(attached.body.subscription).toBe(subscription._id);
    const unattached = await send({ event_name: bare.event_name, payload: { customer_id: customer._id, value: 1 } });
    expect(unattached.body.subscription).toBeNull();
  });

  test('with two subscriptions holding the item, the most recent wins unless payload.subscription_id picks one', async () => {
    const m = await meter();
    const { subscription: older, customer } = await subscriptionWithItem(m.id);
    const { subscription: newer } = await subscriptionWithItem(m.id, customer);
    const plain = await send({ event_name: m.event_name, payload: { customer_id: customer._id, value: 1 } });
    expect(plain.body.subscription).toBe(newer._id);
    const picked = await send({ event_name: m.event_name, payload: { customer_id: customer._id, value: 1, subscription_id: older._id } });
    expect(picked.body.subscription).toBe(older._id);
  });

  test('a chosen subscription without an item for the meter leaves the event unattached', async () => {
    const m = await meter();
    const { customer } = await subscriptionWithItem(m.id);
    const { subscription: plainSub } = await seedUsageSubscription(deps(), { store: store.store, offer, customer });
    const res = await send({ event_name: m.event_name, payload: { customer_id: customer._id, value: 1, subscription_id: plainSub._id } });
    expect(res.status).toBe(201);
    expect(res.body.subscription).toBeNull();
  });

  test('a canceled subscription takes no events; the decision is kept on a repeat after the item appears', async () => {
    const m = await meter();
    const { subscription, customer } = await subscriptionWithItem(m.id);
    await collections(mongo.db)
      .db.collection('subscriptions')
      .updateOne({ _id: subscription._id as never }, { $set: { status: 'canceled' } });
    const res = await send({ event_name: m.event_name, identifier: 'late', payload: { customer_id: customer._id, value: 1 } });
    expect(res.body.subscription).toBeNull();
    await collections(mongo.db)
      .db.collection('subscriptions')
      .updateOne({ _id: subscription._id as never }, { $set: { status: 'active' } });
    const replay = await send({ event_name: m.event_name, identifier: 'late', payload: { customer_id: customer._id, value: 1 } });
    expect(replay.status).toBe(200);
    expect(replay.body.subscription).toBeNull();
  });
});

describe('billing.meter.error_report_triggered', () => {
  async function reports(meterId: string) {
    const events = await collections(mongo.db).events.find({ store_id: store.store._id, type: 'billing.meter.error_report_triggered' }).toArray();
    return events.map((e) => JSON.parse(e.data_json).object).filter((o: { meter: string }) => o.meter === meterId);
  }

  test("unattached events raise one report per meter per hour once the hour is over, carrying the whole hour's count; attached ones none", async () => {
    const m = await meter();
    const customer = await seedCustomer(mongo.db, store.store._id);
    const ev = () => ({ event_name: m.event_name, payload: { customer_id: customer._id, value: 1 } });
    const res = await batch([ev(), ev(), ev()]);
    expect(res.body.accepted).toBe(3);
    await send(ev());
    await batch([ev(), ev()]);
    // Nothing while the hour runs: the report waits for the hour's full count.
    expect(await reports(m.id)).toHaveLength(0);
    await sendErrorReports({ db: mongo.db }, Date.now());
    expect(await reports(m.id)).toHaveLength(0);

    // The hour (or hours, at a boundary) the events arrived in, once over: one report each, counts adding up to 6.
    const arrived = await meterEventsCollection(mongo.db).find({ meter: m.id }).toArray();
    const hours = [...new Set(arrived.map((e) => e.created - (e.created % 3600)))];
    const afterLast = (Math.max(...hours) + 3600 + ERROR_REPORT_DELAY_SECONDS) * 1000;
    await sendErrorReports({ db: mongo.db }, afterLast);
    const sent = await reports(m.id);
    expect(sent).toHaveLength(hours.length);
    expect(sent.reduce((sum: number, r: { reason: { error_count: number } }) => sum + r.reason.error_count, 0)).toBe(6);
    if (hours.length === 1) {
      expect(sent[0]).toMatchObject({
        meter: m.id,
        validation_start: hours[0],
        validation_end: hours[0] + 3600,
        reason: { error_count: 6, error_types: [{ code: 'no_subscription_for_customer', error_count: 6 }] },
      });
    }
    // Sent again (a routine that died before marking the hour): no second report.
    await mongo.db.collection('usage_error_reports').updateMany({ meter: m.id }, { $set: { reported: false } });
    await sendErrorReports({ db: mongo.db }, afterLast);
    expect(await reports(m.id)).toHaveLength(hours.length);

    const withItem = await meter();
    const { customer: subscribed } = await subscriptionWithItem(withItem.id);
    await send({ event_name: withItem.event_name, payload: { customer_id: subscribed._id, value: 1 } });
    expect(await reports(withItem.id)).toHaveLength(0);
  });
});
