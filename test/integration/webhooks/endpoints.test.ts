// /v1/webhook_endpoints over real HTTP against the database: create, retrieve, list oldest first, update
// semantics, rotate_secret, delete, and every refusal (invalid_url, private_host for literal
// addresses, internal names and names resolving to private addresses, invalid_event_type, limits,
// unknown ids) with its status, type, code and param. No worker runs here: no event is emitted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointsCollection, SECRET_ROTATION_OVERLAP_MS } from '../../../store/webhook-endpoints';
import { testMongo, type TestMongo } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { fakeResolver } from '../../support/fake-dns';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;
let other: TestStore;

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({
    db: mongo.db,
    config: {
      webhookAllowedHosts: [],
      webhookResolver: fakeResolver({
        'hooks.example.com': ['93.184.216.34'],
        'sneaky.example.com': ['10.1.2.3'],
        'mixed.example.com': ['93.184.216.34', '192.168.0.10'],
        'v6.example.com': ['fd12:3456::1'],
      }),
    },
  });
  store = await createTestStore(mongo.db);
  other = await createTestStore(mongo.db);
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

const create = (body: unknown, key = store.key) => call(api, key, 'POST', '/v1/webhook_endpoints', { json: body });

function expectError(res: { status: number; body: any }, status: number, type: string, code: string, param: string | null) {
  expect({ status: res.status, type: res.body?.error?.type, code: res.body?.error?.code, param: res.body?.error?.param }).toEqual({
    status,
    type,
    code,
    param,
  });
}

describe('create, retrieve, list', () => {
  it('creates an enabled endpoint on 2026-11-01 receiving [*], with a whsec_ secret shown once', async () => {
    const res = await create({ url: 'https://hooks.example.com/a', description: 'orders' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      object: 'webhook_endpoint',
      url: 'https://hooks.example.com/a',
      description: 'orders',
      enabled_events: ['*'],
      api_version: '2026-11-01',
      status: 'enabled',
      disabled_reason: null,
      consecutive_failures: 0,
      created_via: 'api',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9]{32}$/),
      livemode: true,
      created: expect.any(Number),
    });
    const fetched = await call(api, store.key, 'GET', `/v1/webhook_endpoints/${res.body.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).not.toHaveProperty('secret');
    const { secret: _secret, ...withoutSecret } = res.body;
    expect(fetched.body).toEqual(withoutSecret);
  });

  it('a replayed create and rotate_secret return the secret, and what the idempotency store keeps is sealed (no whsec_ at rest)', async () => {
    const key = `create-${Date.now()}`;
    const first = await call(api, store.key, 'POST', '/v1/webhook_endpoints', {
      json: { url: 'https://hooks.example.com/sealed' },
      headers: { 'idempotency-key': key },
    });
    const replay = await call(api, store.key, 'POST', '/v1/webhook_endpoints', {
      json: { url: 'https://hooks.example.com/sealed' },
      headers: { 'idempotency-key': key },
    });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.secret).toBe(first.body.secret);
    const rotateKey = `rotate-${Date.now()}`;
    const rotated = await call(api, store.key, 'POST', `/v1/webhook_endpoints/${first.body.id}/rotate_secret`, {
      headers: { 'idempotency-key': rotateKey },
    });
    const rotatedAgain = await call(api, store.key, 'POST', `/v1/webhook_endpoints/${first.body.id}/rotate_secret`, {
      headers: { 'idempotency-key': rotateKey },
    });
    expect(rotatedAgain.body.secret).toBe(rotated.body.secret);
    const stored = await mongo.db
      .collection('idempotency_keys')
      .find({ store_id: store.store._id, key: { $in: [key, rotateKey] } })
      .toArray();
    expect(stored).toHaveLength(2);
    expect(JSON.stringify(stored)).not.toContain('whsec_');
    expect(stored.every((doc) => String(doc.response.body).startsWith('sealed:v1:'))).toBe(true);
  });

  it('at most 16 endpoints per store, even for 20 creates at once: the rest get 400 parameter_invalid saying so; deleting one frees its place', async () => {
    const crowded = await createTestStore(mongo.db);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => create({ url: `https://hooks.example.com/crowd-${i}` }, crowded.key)));
    const created = results.filter((r) => r.status === 201);
    expect(created).toHaveLength(16);
    for (const refused of results.filter((r) => r.status !== 201)) {
      expectError(refused, 400, 'invalid_request_error', 'parameter_invalid', null);
      expect(refused.body.error.message).toContain('at most 16 webhook endpoints');
    }
    expect(await endpointsCollection(mongo.db).countDocuments({ store_id: crowded.store._id })).toBe(16);
    expect((await call(api, crowded.key, 'DELETE', `/v1/webhook_endpoints/${created[0].body.id}`)).status).toBe(200);
    expect((await create({ url: 'https://hooks.example.com/after-delete' }, crowded.key)).status).toBe(201);
    expect((await create({ url: 'https://hooks.example.com/seventeenth' }, crowded.key)).status).toBe(400);
  });

  it('accepts a form body with enabled_events[] and the original catalog', async () => {
    const res = await call(api, store.key, 'POST', '/v1/webhook_endpoints', {
      form: 'url=https://hooks.example.com/form&enabled_events[]=order.paid&enabled_events[]=subscription.*&api_version=2026-09-01',
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ api_version: '2026-09-01', enabled_events: ['order.paid', 'subscription.*'], description: null });
  });

  it('lists endpoints oldest first without secrets, with cursors', async () => {
    const fresh = await createTestStore(mongo.db);
    const ids: string[] = [];
    for (const n of [1, 2, 3]) ids.push((await create({ url: `https://hooks.example.com/${n}` }, fresh.key)).body.id);
    const all = await call(api, fresh.key, 'GET', '/v1/webhook_endpoints');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ object: 'list', url: '/v1/webhook_endpoints', has_more: false });
    expect(all.body.data.map((e: any) => e.id)).toEqual(ids);
    expect(all.body.data.some((e: any) => 'secret' in e)).toBe(false);
    const page = await call(api, fresh.key, 'GET', `/v1/webhook_endpoints?limit=1&starting_after=${ids[0]}`);
    expect(page.body.data.map((e: any) => e.id)).toEqual([ids[1]]);
    expect(page.body.has_more).toBe(true);
  });

  it("answers another store's endpoint like an unknown one", async () => {
    const mine = await create({ url: 'https://hooks.example.com/mine' });
    const res = await call(api, other.key, 'GET', `/v1/webhook_endpoints/${mine.body.id}`);
    expectError(res, 404, 'invalid_request_error', 'resource_missing', 'id');
  });
});

describe('update, rotate, delete', () => {
  it('changes only the fields sent, ignores api_version, and [*] restores all events', async () => {
    const { body: created } = await create({ url: 'https://hooks.example.com/u', enabled_events: ['invoice.paid'], description: 'd' });
    const res = await call(api, store.key, 'POST', `/v1/webhook_endpoints/${created.id}`, {
      json: { enabled_events: ['invoice.*', 'customer.created'], api_version: '2026-09-01' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      url: created.url,
      description: 'd',
      enabled_events: ['invoice.*', 'customer.created'],
      api_version: '2026-11-01',
    });
    expect(res.body).not.toHaveProperty('secret');
    const all = await call(api, store.key, 'POST', `/v1/webhook_endpoints/${created.id}`, { json: { enabled_events: ['*'], description: null } });
    expect(all.body).toMatchObject({ enabled_events: ['*'], description: null });
    const moved = await call(api, store.key, 'POST', `/v1/webhook_endpoints/${created.id}`, { json: { url: 'https://hooks.example.com/moved' } });
    expect(moved.body.url).toBe('https://hooks.example.com/moved');
  });

  it('disabling by update leaves disabled_reason null; re-enabling resets consecutive_failures and disabled_reason', async () => {
    const { body: created } = await create({ url: 'https://hooks.example.com/d' });
    const off = await call(api, store.key, 'POST', `/v1/webhook_endpoints/${created.id}`, { json: { status: 'disabled' } });
    expect(off.body).toMatchObject({ status: 'disabled', disabled_reason: null });
    // As the delivery workflow leaves it after 20 exhausted deliveries.
    await endpointsCollection(mongo.db).updateOne(
      { _id: created.id },
      { $set: { consecutive_failures: 20, disabled_reason: 'auto-disabled after 20 exhausted deliveries' } },
    );
    const on = await call(api, store.key, 'POST', `/v1/webhook_endpoints/${created.id}`, { json: { status: 'enabled' } });
    expect(on.body).toMatchObject({ status: 'enabled', disabled_reason: null, consecutive_failures: 0 });
  });

  it('rotate_secret returns a new secret once and keeps the old one signing for 24 hours', async () => {
    const { body: created } = await create({ url: 'https://hooks.example.com/r' });
    const before = Date.now();
    const res = await call(api, store.key, 'POST', `/v1/webhook_endpoints/${created.id}/rotate_secret`);
    expect(res.status).toBe(200);
    expect(res.body.secret).toMatch(/^whsec_/);
    expect(res.body.secret).not.toBe(created.secret);
    const doc = await endpointsCollection(mongo.db).findOne({ _id: created.id });
    expect(doc).toMatchObject({ secret: res.body.secret, previous_secret: created.secret });
    expect(doc!.previous_secret_expires_at! - before).toBeGreaterThanOrEqual(SECRET_ROTATION_OVERLAP_MS - 1_000);
    expect(doc!.previous_secret_expires_at! - before).toBeLessThanOrEqual(SECRET_ROTATION_OVERLAP_MS + 5_000);
  });

  it('DELETE answers {id, object, deleted: true} and the endpoint is gone', async () => {
    const { body: created } = await create({ url: 'https://hooks.example.com/x' });
    const res = await call(api, store.key, 'DELETE', `/v1/webhook_endpoints/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: created.id, object: 'webhook_endpoint', deleted: true });
    expectError(await call(api, store.key, 'GET', `/v1/webhook_endpoints/${created.id}`), 404, 'invalid_request_error', 'resource_missing', 'id');
    expect(await endpointsCollection(mongo.db).countDocuments({ _id: created.id })).toBe(0);
  });
});

describe('refusals', () => {
  it.each(['http://hooks.example.com/a', 'ftp://hooks.example.com/a', 'hooks.example.com/a', 'not a url', 'https://user:pw@hooks.example.com/'])(
    'url %s: 400 invalid_url',
    async (url) => {
      expectError(await create({ url }), 400, 'invalid_request_error', 'invalid_url', 'url');
    },
  );

  it.each([
    'https://localhost/hook',
    'https://LOCALHOST./hook',
    'https://127.0.0.1/hook',
    'https://2130706433/hook',
    'https://10.0.0.5/hook',
    'https://192.168.1.20:8443/hook',
    'https://172.16.4.4/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://[::1]/hook',
    'https://[fd00::5]/hook',
    'https://[::ffff:10.0.0.1]/hook',
    'https://billing.internal/hook',
    'https://printer.local/hook',
    'https://intranet/hook',
    'https://sneaky.example.com/hook',
    'https://mixed.example.com/hook',
    'https://v6.example.com/hook',
  ])('url %s: 400 private_host', async (url) => {
    expectError(await create({ url }), 400, 'invalid_request_error', 'private_host', 'url');
  });

  it('an update to a private or non-https url is refused the same way', async () => {
    const { body: created } = await create({ url: 'https://hooks.example.com/p' });
    const path = `/v1/webhook_endpoints/${created.id}`;
    expectError(
      await call(api, store.key, 'POST', path, { json: { url: 'https://sneaky.example.com/' } }),
      400,
      'invalid_request_error',
      'private_host',
      'url',
    );
    expectError(
      await call(api, store.key, 'POST', path, { json: { url: 'http://hooks.example.com/' } }),
      400,
      'invalid_request_error',
      'invalid_url',
      'url',
    );
  });

  it('a url over 2000 characters: 400 parameter_invalid; a missing url: 400 parameter_missing', async () => {
    expectError(await create({ url: `https://hooks.example.com/${'a'.repeat(2000)}` }), 400, 'invalid_request_error', 'parameter_invalid', 'url');
    expectError(await create({ description: 'no url' }), 400, 'invalid_request_error', 'parameter_missing', 'url');
  });

  it('event types outside the catalog: 400 invalid_event_type naming the entry', async () => {
    expectError(
      await create({ url: 'https://hooks.example.com/e', enabled_events: ['invoice.paid', 'order.paid'] }),
      400,
      'invalid_request_error',
      'invalid_event_type',
      'enabled_events[1]',
    );
    expectError(
      await create({ url: 'https://hooks.example.com/e', api_version: '2026-09-01', enabled_events: ['checkout.session.completed'] }),
      400,
      'invalid_request_error',
      'invalid_event_type',
      'enabled_events[0]',
    );
    expectError(
      await create({ url: 'https://hooks.example.com/e', api_version: '2026-09-01', enabled_events: ['order.*', 'checkout.*'] }),
      400,
      'invalid_request_error',
      'invalid_event_type',
      'enabled_events[1]',
    );
    const { body: created } = await create({ url: 'https://hooks.example.com/e' });
    expectError(
      await call(api, store.key, 'POST', `/v1/webhook_endpoints/${created.id}`, { json: { enabled_events: ['subscription.cancelled'] } }),
      400,
      'invalid_request_error',
      'invalid_event_type',
      'enabled_events[0]',
    );
  });

  it('a pattern of 40 stars then x (which froze the API) is refused at once as invalid_event_type; an entry over 100 characters too', async () => {
    expectError(
      await create({ url: 'https://hooks.example.com/e', enabled_events: [`${'*'.repeat(40)}x`] }),
      400,
      'invalid_request_error',
      'invalid_event_type',
      'enabled_events[0]',
    );
    const long = await create({ url: 'https://hooks.example.com/e', enabled_events: [`invoice.${'a'.repeat(100)}`] });
    expect(long.status).toBe(400);
    expect(long.body.error).toMatchObject({ type: 'invalid_request_error' });
    expect(long.body.error.param).toMatch(/^enabled_events/);
  });

  it('limits: description over 200, over 100 enabled_events, unknown api_version or status: 400 parameter_invalid', async () => {
    expectError(
      await create({ url: 'https://hooks.example.com/l', description: 'x'.repeat(201) }),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'description',
    );
    expectError(
      await create({ url: 'https://hooks.example.com/l', enabled_events: Array.from({ length: 101 }, () => 'invoice.paid') }),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'enabled_events',
    );
    expectError(
      await create({ url: 'https://hooks.example.com/l', api_version: '2025-01-01' }),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'api_version',
    );
    const { body: created } = await create({ url: 'https://hooks.example.com/l', description: 'x'.repeat(200) });
    expect(created.description).toHaveLength(200);
    expectError(
      await call(api, store.key, 'POST', `/v1/webhook_endpoints/${created.id}`, { json: { status: 'paused' } }),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'status',
    );
  });

  it('unknown endpoint ids: 404 resource_missing on every route; unknown delivery cursor names the cursor', async () => {
    const unknown = '01900000-0000-7000-8000-000000000000';
    for (const [method, path] of [
      ['GET', `/v1/webhook_endpoints/${unknown}`],
      ['POST', `/v1/webhook_endpoints/${unknown}`],
      ['DELETE', `/v1/webhook_endpoints/${unknown}`],
      ['POST', `/v1/webhook_endpoints/${unknown}/rotate_secret`],
      ['POST', `/v1/webhook_endpoints/${unknown}/test`],
      ['GET', `/v1/webhook_endpoints/${unknown}/deliveries`],
    ] as const) {
      expectError(
        await call(api, store.key, method, path, method === 'POST' ? { json: {} } : {}),
        404,
        'invalid_request_error',
        'resource_missing',
        'id',
      );
    }
    const { body: created } = await create({ url: 'https://hooks.example.com/c' });
    expectError(
      await call(api, store.key, 'GET', `/v1/webhook_endpoints/${created.id}/deliveries?starting_after=${unknown}`),
      404,
      'invalid_request_error',
      'resource_missing',
      'starting_after',
    );
    expectError(
      await call(api, store.key, 'GET', `/v1/webhook_endpoints/${created.id}/deliveries?status=lost`),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'status',
    );
  });
});
