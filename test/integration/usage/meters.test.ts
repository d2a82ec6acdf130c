// What this tests: /v1/billing/meters over real HTTP against the test database: create with defaults and
// options, event_name rules and uniqueness, list with the status filter, retrieve, rename (only
// display_name), deactivate (once, no way back, also against renames from other processes), and the
// store boundary.
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { deactivateMeter, renameMeter } from '../../../store/meters';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, type TestMongo } from '../../support/env';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;
let other: TestStore;

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  store = await createTestStore(mongo.db);
  other = await createTestStore(mongo.db);
});

afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

let n = 0;
const uniqueName = (base = 'api.requests') => `${base}.${++n}`;
const create = (json: unknown, key = store.key) => call(api, key, 'POST', '/v1/billing/meters', { json });

describe('create', () => {
  test('201 with the billing.meter object and its defaults (sum, customer_id, value, active)', async () => {
    const eventName = uniqueName();
    const res = await create({ display_name: 'API requests', event_name: eventName });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      object: 'billing.meter',
      display_name: 'API requests',
      event_name: eventName,
      default_aggregation: { formula: 'sum' },
      customer_mapping: { type: 'by_id', event_payload_key: 'customer_id' },
      value_settings: { event_payload_key: 'value' },
      status: 'active',
      status_transitions: { deactivated_at: null },
      livemode: true,
    });
    expect(res.body.id).toMatch(/^mtr_/);
    expect(res.body.updated).toBe(res.body.created);
  });

  test('formula, customer and value payload keys are kept as sent (form-encoded too)', async () => {
    const eventName = uniqueName('gpu-seconds');
    const res = await call(api, store.key, 'POST', '/v1/billing/meters', {
      form: `display_name=GPU&event_name=${eventName}&default_aggregation[formula]=last&customer_mapping[type]=by_id&customer_mapping[event_payload_key]=account&value_settings[event_payload_key]=seconds`,
    });
    expect(res.status).toBe(201);
    expect(res.body.default_aggregation).toEqual({ formula: 'last' });
    expect(res.body.customer_mapping).toEqual({ type: 'by_id', event_payload_key: 'account' });
    expect(res.body.value_settings).toEqual({ event_payload_key: 'seconds' });
  });

  test('an event_name already used in the store is 400 event_name_taken; another store may use it', async () => {
    const eventName = uniqueName();
    expect((await create({ display_name: 'A', event_name: eventName })).status).toBe(201);
    const again = await create({ display_name: 'B', event_name: eventName });
    expect(again.status).toBe(400);
    expect(again.body.error).toMatchObject({ type: 'invalid_request_error', code: 'event_name_taken', param: 'event_name' });
    expect((await create({ display_name: 'C', event_name: eventName }, other.key)).status).toBe(201);
  });

  test.each([
    ['upper case', 'Api.Requests'],
    ['a space', 'api requests'],
    ['a slash', 'api/requests'],
    ['101 characters', 'a'.repeat(101)],
    ['empty', ''],
  ])('event_name with %s is 400 parameter_invalid on event_name', async (_what, eventName) => {
    const res = await create({ display_name: 'X', event_name: eventName });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_invalid', param: 'event_name' });
  });

  test('event_name of exactly 100 characters of a-z0-9_.- is accepted', async () => {
    const name = `z_.-9${'x'.repeat(95)}`;
    expect((await create({ display_name: 'X', event_name: name })).status).toBe(201);
  });

  test('display_name: missing is parameter_missing, empty or over 250 characters parameter_invalid', async () => {
    const missing = await create({ event_name: uniqueName() });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'parameter_missing', param: 'display_name' });
    for (const display_name of ['', 'd'.repeat(251)]) {
      const res = await create({ display_name, event_name: uniqueName() });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'parameter_invalid', param: 'display_name' });
    }
    expect((await create({ display_name: 'd'.repeat(250), event_name: uniqueName() })).status).toBe(201);
  });

  test('customer_mapping[type] other than by_id and an unknown formula are refused with their param', async () => {
    const mapping = await create({ display_name: 'X', event_name: uniqueName(), customer_mapping: { type: 'by_email' } });
    expect(mapping.status).toBe(400);
    expect(mapping.body.error).toMatchObject({ code: 'parameter_invalid', param: 'customer_mapping.type' });
    const formula = await create({ display_name: 'X', event_name: uniqueName(), default_aggregation: { formula: 'max' } });
    expect(formula.status).toBe(400);
    expect(formula.body.error).toMatchObject({ code: 'parameter_invalid', param: 'default_aggregation.formula' });
  });

  test('a read-only key cannot create a meter (403 insufficient_scope)', async () => {
    const reader = await store.makeKey(['read']);
    const res = await create({ display_name: 'X', event_name: uniqueName() }, reader.key);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
  });
});

describe('read, update, deactivate', () => {
  test('retrieve returns the meter; an unknown id or another store meter is 404 resource_missing on id', async () => {
    const created = (await create({ display_name: 'Mine', event_name: uniqueName() })).body;
    const got = await call(api, store.key, 'GET', `/v1/billing/meters/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created);
    for (const [key, id] of [
      [store.key, 'mtr_nope'],
      [other.key, created.id],
    ]) {
      const res = await call(api, key, 'GET', `/v1/billing/meters/${id}`);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'resource_missing', param: 'id' });
    }
  });

  test('update changes display_name only; event_name or formula in the body is 400 parameter_invalid', async () => {
    const created = (await create({ display_name: 'Old', event_name: uniqueName() })).body;
    const renamed = await call(api, store.key, 'POST', `/v1/billing/meters/${created.id}`, { json: { display_name: 'New name' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: created.id, display_name: 'New name', event_name: created.event_name });
    const immutable = await call(api, store.key, 'POST', `/v1/billing/meters/${created.id}`, { json: { event_name: 'other.name' } });
    expect(immutable.status).toBe(400);
    expect(immutable.body.error).toMatchObject({ code: 'parameter_invalid', param: 'event_name' });
    const formula = await call(api, store.key, 'POST', `/v1/billing/meters/${created.id}`, { json: { default_aggregation: { formula: 'count' } } });
    expect(formula.status).toBe(400);
    expect(formula.body.error).toMatchObject({ code: 'parameter_invalid', param: 'default_aggregation' });
    expect((await call(api, other.key, 'POST', `/v1/billing/meters/${created.id}`, { json: { display_name: 'x' } })).status).toBe(404);
  });

  test('deactivate sets inactive with deactivated_at; deactivating again keeps it (no reactivation)', async () => {
    const created = (await create({ display_name: 'Soon gone', event_name: uniqueName() })).body;
    const first = await call(api, store.key, 'POST', `/v1/billing/meters/${created.id}/deactivate`);
    expect(first.status).toBe(200);
    expect(first.body.status).toBe('inactive');
    expect(typeof first.body.status_transitions.deactivated_at).toBe('number');
    const again = await call(api, store.key, 'POST', `/v1/billing/meters/${created.id}/deactivate`);
    expect(again.body.status).toBe('inactive');
    expect(again.body.status_transitions.deactivated_at).toBe(first.body.status_transitions.deactivated_at);
    const renamed = await call(api, store.key, 'POST', `/v1/billing/meters/${created.id}`, { json: { display_name: 'Renamed after' } });
    expect(renamed.body).toMatchObject({ status: 'inactive', display_name: 'Renamed after' });
  });

  test('renames and deactivations at once from separate processes: inactive, one deactivated_at, one of the names', async () => {
    const created = (await create({ display_name: 'Racing', event_name: uniqueName() })).body;
    const clients = await Promise.all(Array.from({ length: 6 }, () => MongoClient.connect(inject('mongoUri'))));
    try {
      const dbs = clients.map((c) => c.db(mongo.db.databaseName));
      const storeId = store.store._id;
      const results = await Promise.all(
        dbs.map((db, i) => (i % 2 === 0 ? renameMeter(db, storeId, created.id, `Name ${i}`) : deactivateMeter(db, storeId, created.id))),
      );
      const deactivatedAt = results.filter((_, i) => i % 2 === 1).map((m) => m.deactivated_at);
      expect(new Set(deactivatedAt).size).toBe(1);
      const final = (await call(api, store.key, 'GET', `/v1/billing/meters/${created.id}`)).body;
      expect(final).toMatchObject({ status: 'inactive', status_transitions: { deactivated_at: deactivatedAt[0] } });
      expect(['Name 0', 'Name 2', 'Name 4']).toContain(final.display_name);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  test('list is newest first, filters by status, paginates, and shows only the store meters', async () => {
    const fresh = await createTestStore(mongo.db);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await create({ display_name: `M${i}`, event_name: uniqueName() }, fresh.key)).body.id);
    await call(api, fresh.key, 'POST', `/v1/billing/meters/${ids[1]}/deactivate`);
    const all = await call(api, fresh.key, 'GET', '/v1/billing/meters');
    expect(all.body).toMatchObject({ object: 'list', url: '/v1/billing/meters', has_more: false });
    expect(all.body.data.map((m: { id: string }) => m.id)).toEqual([...ids].reverse());
    const active = await call(api, fresh.key, 'GET', '/v1/billing/meters?status=active');
    expect(active.body.data.map((m: { id: string }) => m.id)).toEqual([ids[2], ids[0]]);
    const inactive = await call(api, fresh.key, 'GET', '/v1/billing/meters?status=inactive');
    expect(inactive.body.data.map((m: { id: string }) => m.id)).toEqual([ids[1]]);
    const page = await call(api, fresh.key, 'GET', '/v1/billing/meters?limit=2');
    expect(page.body.has_more).toBe(true);
    const next = await call(api, fresh.key, 'GET', `/v1/billing/meters?limit=2&starting_after=${page.body.data[1].id}`);
    expect(next.body.data.map((m: { id: string }) => m.id)).toEqual([ids[0]]);
    const bad = await call(api, fresh.key, 'GET', '/v1/billing/meters?status=paused');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'parameter_invalid', param: 'status' });
  });
});
