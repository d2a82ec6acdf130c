// GET /v1/account over real HTTP against FerretDB: the key's store and the key itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testMongo, type TestMongo } from '../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../support/api';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  store = await createTestStore(mongo.db, { name: 'Acme Brasil', slug: 'acme' });
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

describe('GET /v1/account', () => {
  it('answers 200 with the account object for a valid key', async () => {
    const res = await call(api, store.key, 'GET', '/v1/account');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: store.store._id,
      object: 'account',
      name: 'Acme Brasil',
      slug: 'acme',
      country: 'BR',
      currency: 'brl',
      timezone: 'America/Sao_Paulo',
      api_key: { id: store.keyId, name: 'test key', scopes: ['read', 'write'], default_version: '2026-11-01' },
      api_version: '2026-11-01',
      livemode: true,
    });
    expect(res.headers.get('request-id')).toMatch(/^req_[0-9a-f]{20}$/);
    expect(res.headers.get('service-version')).toBe('2026-11-01');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('accepts HTTP Basic with the key as user and an empty password', async () => {
    const basic = Buffer.from(`${store.key}:`).toString('base64');
    const res = await call(api, null, 'GET', '/v1/account', { headers: { authorization: `Basic ${basic}` } });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(store.store._id);
  });
});
