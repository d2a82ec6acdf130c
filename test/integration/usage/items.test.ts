// What this tests: /v1/subscriptions/{id}/usage_items over real HTTP against the test database: create with
// the defaults, replace on the same meter (same id), list envelope, delete shape, and each refusal
// (unknown subscription, meter or item; inactive meter; currency_mismatch; price rules).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { OfferDoc } from '../../../store/collections';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, type TestMongo } from '../../support/env';
import { seedUsageOffer, seedUsageSubscription } from '../../support/usage';

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
async function meter(key = store.key) {
  const res = await call(api, key, 'POST', '/v1/billing/meters', { json: { display_name: 'Images', event_name: `items.${++n}` } });
  return res.body as { id: string };
}

async function subscription(currency?: string) {
  return (await seedUsageSubscription({ db: mongo.db, taskQueue: 'unused' }, { store: store.store, offer, currency })).subscription;
}

const post = (subId: string, json: unknown, key = store.key) => call(api, key, 'POST', `/v1/subscriptions/${subId}/usage_items`, { json });

describe('create and replace', () => {
  test('201 with the usage_item and its defaults (included 0, tiers null, rounding up, no threshold, no label)', async () => {
    const [m, sub] = [await meter(), await subscription()];
    const res = await post(sub._id, { meter: m.id, unit_amount: 2.5 });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      object: 'usage_item',
      meter: m.id,
      subscription: sub._id,
      offer: null,
      currency: 'brl',
      unit_amount: 2.5,
      included_units: 0,
      tiers: null,
      rounding: 'up',
      billing_threshold: null,
      label: null,
      source: 'api',
      livemode: true,
    });
    expect(res.body.id).toMatch(/^usi_/);
  });

  test('posting the same meter again replaces the item: 200, same id, new values', async () => {
    const [m, sub] = [await meter(), await subscription()];
    const first = await post(sub._id, { meter: m.id, unit_amount: 2.5, label: 'Images' });
    const second = await post(sub._id, {
      meter: m.id,
      tiers: [
        { up_to: 1000, unit_amount: 1 },
        { up_to: null, unit_amount: 0.5, flat_amount: 500 },
      ],
      unit_amount: 0,
      included_units: 100,
      rounding: 'nearest',
      billing_threshold: 50000,
    });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({
      id: first.body.id,
      unit_amount: 0,
      included_units: 100,
      rounding: 'nearest',
      billing_threshold: 50000,
      label: null,
      tiers: [
        { up_to: 1000, unit_amount: 1 },
        { up_to: null, unit_amount: 0.5, flat_amount: 500 },
      ],
    });
    const list = await call(api, store.key, 'GET', `/v1/subscriptions/${sub._id}/usage_items`);
    expect(list.body.data).toHaveLength(1);
  });

  test('tiers sent form-encoded, with up_to inf for the last tier', async () => {
    const [m, sub] = [await meter(), await subscription()];
    const res = await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/usage_items`, {
      form: `meter=${m.id}&unit_amount=0&tiers[0][up_to]=100&tiers[0][unit_amount]=2&tiers[1][up_to]=inf&tiers[1][unit_amount]=1&tiers[1][flat_amount]=300`,
    });
    expect(res.status).toBe(201);
    expect(res.body.tiers).toEqual([
      { up_to: 100, unit_amount: 2 },
      { up_to: null, unit_amount: 1, flat_amount: 300 },
    ]);
  });

  test('currency equal to the subscription (any case) is accepted; another is 400 currency_mismatch', async () => {
    const [m, sub] = [await meter(), await subscription('usd')];
    expect((await post(sub._id, { meter: m.id, unit_amount: 1, currency: 'USD' })).body.currency).toBe('usd');
    const res = await post(sub._id, { meter: m.id, unit_amount: 1, currency: 'brl' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'currency_mismatch', param: 'currency' });
    expect(res.body.error.message).toContain('usd');
  });
});

describe('refusals', () => {
  test('unknown or foreign subscription is 404 on id; unknown or foreign meter 404 on meter', async () => {
    const [m, sub] = [await meter(), await subscription()];
    const noSub = await post('sub_nope', { meter: m.id, unit_amount: 1 });
    expect(noSub.status).toBe(404);
    expect(noSub.body.error).toMatchObject({ code: 'resource_missing', param: 'id' });
    expect((await post(sub._id, { meter: m.id, unit_amount: 1 }, other.key)).status).toBe(404);
    const foreignMeter = await meter(other.key);
    for (const id of ['mtr_nope', foreignMeter.id]) {
      const res = await post(sub._id, { meter: id, unit_amount: 1 });
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'resource_missing', param: 'meter' });
    }
  });

  test('an inactive meter is 400 meter_inactive on meter', async () => {
    const [m, sub] = [await meter(), await subscription()];
    await call(api, store.key, 'POST', `/v1/billing/meters/${m.id}/deactivate`);
    const res = await post(sub._id, { meter: m.id, unit_amount: 1 });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'meter_inactive', param: 'meter' });
  });

  test.each([
    [{ unit_amount: 1, meter: undefined }, 'parameter_missing', 'meter'],
    [{}, 'parameter_missing', 'unit_amount'],
    [{ unit_amount: -1 }, 'parameter_invalid', 'unit_amount'],
    [{ unit_amount: 1, included_units: -1 }, 'parameter_invalid', 'included_units'],
    [{ unit_amount: 1, rounding: 'down' }, 'parameter_invalid', 'rounding'],
    [{ unit_amount: 1, billing_threshold: 10.5 }, 'parameter_invalid', 'billing_threshold'],
    [{ unit_amount: 1, billing_threshold: 0 }, 'parameter_invalid', 'billing_threshold'],
    [{ unit_amount: 1, label: 'l'.repeat(121) }, 'parameter_invalid', 'label'],
    [{ tiers: [] }, 'parameter_invalid', 'tiers'],
    [{ tiers: Array.from({ length: 21 }, (_, i) => ({ up_to: i === 20 ? null : i + 1, unit_amount: 1 })) }, 'parameter_invalid', 'tiers'],
    [{ tiers: [{ up_to: 10, unit_amount: 1 }] }, 'parameter_invalid', 'tiers[0].up_to'],
    [
      {
        tiers: [
          { up_to: 10, unit_amount: 1 },
          { up_to: 5, unit_amount: 1 },
          { up_to: null, unit_amount: 1 },
        ],
      },
      'parameter_invalid',
      'tiers[1].up_to',
    ],
    [{ tiers: [{ up_to: null, unit_amount: 1, flat_amount: 1.5 }] }, 'parameter_invalid', 'tiers[0].flat_amount'],
    [{ tiers: [{ up_to: null }] }, 'parameter_missing', 'tiers[0].unit_amount'],
    [{ unit_amount: 1, color: 'red' }, 'parameter_invalid', 'color'],
  ])('body %j is 400 %s on %s', async (body, code, param) => {
    const [m, sub] = [await meter(), await subscription()];
    const res = await post(sub._id, { meter: m.id, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error, JSON.stringify(res.body)).toBeDefined();
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code, param });
  });
});

test('a non-zero unit_amount beside tiers is accepted, not refused (the tiers price the usage; pricing is unit-tested)', async () => {
  const [m, sub] = [await meter(), await subscription()];
  const res = await post(sub._id, { meter: m.id, unit_amount: 5, tiers: [{ up_to: null, unit_amount: 1 }] });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body).toMatchObject({ unit_amount: 5, tiers: [{ up_to: null, unit_amount: 1 }] });
});

describe('list and delete', () => {
  test('GET returns a list envelope of all the items, newest first; other stores see 404', async () => {
    const [a, b, sub] = [await meter(), await meter(), await subscription()];
    const first = (await post(sub._id, { meter: a.id, unit_amount: 1 })).body;
    const second = (await post(sub._id, { meter: b.id, unit_amount: 2 })).body;
    const list = await call(api, store.key, 'GET', `/v1/subscriptions/${sub._id}/usage_items`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ object: 'list', url: `/v1/subscriptions/${sub._id}/usage_items`, has_more: false, data: [second, first] });
    expect((await call(api, other.key, 'GET', `/v1/subscriptions/${sub._id}/usage_items`)).status).toBe(404);
  });

  test('DELETE returns {id, object, deleted: true}; the item is gone; deleting again is 404 on itemId', async () => {
    const [m, sub] = [await meter(), await subscription()];
    const item = (await post(sub._id, { meter: m.id, unit_amount: 1 })).body;
    const res = await call(api, store.key, 'DELETE', `/v1/subscriptions/${sub._id}/usage_items/${item.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: item.id, object: 'usage_item', deleted: true });
    expect((await call(api, store.key, 'GET', `/v1/subscriptions/${sub._id}/usage_items`)).body.data).toEqual([]);
    const again = await call(api, store.key, 'DELETE', `/v1/subscriptions/${sub._id}/usage_items/${item.id}`);
    expect(again.status).toBe(404);
    expect(again.body.error).toMatchObject({ code: 'resource_missing', param: 'itemId' });
  });

  test("an item of another subscription cannot be deleted through this one's path (404)", async () => {
    const [m, a, b] = [await meter(), await subscription(), await subscription()];
    const item = (await post(a._id, { meter: m.id, unit_amount: 1 })).body;
    const res = await call(api, store.key, 'DELETE', `/v1/subscriptions/${b._id}/usage_items/${item.id}`);
    expect(res.status).toBe(404);
    expect((await call(api, store.key, 'GET', `/v1/subscriptions/${a._id}/usage_items`)).body.data).toHaveLength(1);
  });
});
