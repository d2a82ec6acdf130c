// What this tests: every authenticated response carries Service-Version (the spec's common conventions),
// the 429 of a key's rate window included, with the version asked for when one is sent; an answer to a
// request without a valid key carries none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testMongo, type TestMongo } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;

beforeAll(async () => {
  mongo = await testMongo();
  // Two requests a minute per key: the third is the 429.
  api = await startTestApi({ db: mongo.db, config: { keyRateLimit: 2, keyRateWindowMs: 60_000 } });
  store = await createTestStore(mongo.db);
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

describe('Service-Version', () => {
  it("a key's 429 carries Service-Version (the key's version, or the one asked for) beside Retry-After", async () => {
    const answers = [];
    for (let n = 0; n < 3; n++) answers.push(await call(api, store.key, 'GET', '/v1/account'));
    const limited = answers[2];
    expect([limited.status, limited.body.error.code]).toEqual([429, 'rate_limit']);
    expect(limited.headers.get('retry-after')).not.toBeNull();
    expect(answers.map((res) => res.headers.get('service-version'))).toEqual(['2026-11-01', '2026-11-01', '2026-11-01']);
    const asked = await call(api, store.key, 'GET', '/v1/account', { headers: { 'Service-Version': '2026-11-01' } });
    expect([asked.status, asked.headers.get('service-version')]).toEqual([429, '2026-11-01']);
  });

  it('a 403 of a key without the scope carries it; a 401 carries none', async () => {
    const readOnly = await store.makeKey(['read']);
    const refused = await call(api, readOnly.key, 'POST', '/v1/customers', { json: {} });
    expect([refused.status, refused.headers.get('service-version')]).toEqual([403, '2026-11-01']);
    const anonymous = await call(api, 'vk_live_wrongwrongwrongwrongwrongwrongwrongwrongwrong00', 'GET', '/v1/account');
    expect([anonymous.status, anonymous.headers.get('service-version')]).toEqual([401, null]);
  });
});
