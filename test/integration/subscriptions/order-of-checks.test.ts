// What this tests: the spec's order of checks over real HTTP. An unknown subscription answers 404
// resource_missing before its body (or query) is validated (POST /subscriptions/{id}, DELETE and each action),
// kept under the Idempotency-Key like any 4xx; the same body on a known subscription is still 400.
// On charges, a missing Idempotency-Key is idempotency_key_required before anything else, a malformed body
// and a wrong content type included, and an unknown subscription 404 before the body is validated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testMongo, type TestMongo } from '../../support/env';
import { createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { seedCatalog, seedSubscription } from '../../support/subscriptions';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;
let known: string;

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  store = await createTestStore(mongo.db);
  const catalog = await seedCatalog(mongo.db, store.store._id);
  known = (await seedSubscription({ db: mongo.db, taskQueue: 'none' }, { store: store.store, offer: catalog.monthly, product: catalog.product }))._id;
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

type Res = { status: number; body: any };
const errorOf = (res: Res) => [res.status, res.body?.error?.type, res.body?.error?.code, res.body?.error?.param];

/** A raw request: any body text and content type. */
async function rawCall(method: string, path: string, body: string | undefined, contentType: string | undefined, headers: Record<string, string>) {
  const response = await fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${store.key}`, ...(contentType ? { 'content-type': contentType } : {}), ...headers },
    body,
  });
  const text = await response.text();
  return { status: response.status, replayed: response.headers.get('idempotent-replayed'), body: text ? JSON.parse(text) : null };
}

/** Bodies that parse but do not validate (a body that cannot be parsed is refused first: nothing was read to check). */
const badBodies: [string, string, string][] = [
  ['an unknown parameter', '{"nonsense": 1}', 'application/json'],
  ['a form with an unknown parameter', 'nonsense=1', 'application/x-www-form-urlencoded'],
];
/** Bodies that cannot be read at all. */
const unreadableBodies: [string, string, string][] = [
  ['malformed JSON', '{"reason": ', 'application/json'],
  ['a wrong content type', 'reason=x', 'text/plain'],
];

const actions: [string, string][] = [
  ['POST', ''],
  ['POST', '/pause'],
  ['POST', '/resume'],
  ['POST', '/reactivate'],
  ['POST', '/change_offer'],
];

describe('an unknown subscription is 404 before its body is read', () => {
  for (const [method, action] of actions) {
    for (const [what, body, type] of badBodies) {
      it(`${method} /subscriptions/{id}${action} with ${what}`, async () => {
        const unknown = await rawCall(method, `/v1/subscriptions/sub_unknown000000000000${action}`, body, type, {});
        expect(errorOf(unknown)).toEqual([404, 'invalid_request_error', 'resource_missing', 'id']);
        const onKnown = await rawCall(method, `/v1/subscriptions/${known}${action}`, body, type, {});
        expect(errorOf(onKnown).slice(0, 2)).toEqual([400, 'invalid_request_error']);
        expect(['parameter_invalid', 'parameter_missing']).toContain(onKnown.body.error.code);
      });
    }
  }

  it('POST /subscriptions/{id}/usage_items with a body that does not validate', async () => {
    const unknown = await rawCall('POST', '/v1/subscriptions/sub_unknown000000000000/usage_items', '{"nonsense": 1}', 'application/json', {});
    expect(errorOf(unknown)).toEqual([404, 'invalid_request_error', 'resource_missing', 'id']);
    const onKnown = await rawCall('POST', `/v1/subscriptions/${known}/usage_items`, '{"nonsense": 1}', 'application/json', {});
    expect(errorOf(onKnown).slice(0, 2)).toEqual([400, 'invalid_request_error']);
  });

  it('GET /subscriptions/{id}/charges with a status the list does not know', async () => {
    const unknown = await rawCall('GET', '/v1/subscriptions/sub_unknown000000000000/charges?status=bad', undefined, undefined, {});
    expect(errorOf(unknown)).toEqual([404, 'invalid_request_error', 'resource_missing', 'id']);
    const onKnown = await rawCall('GET', `/v1/subscriptions/${known}/charges?status=bad`, undefined, undefined, {});
    expect(errorOf(onKnown).slice(0, 3)).toEqual([400, 'invalid_request_error', 'parameter_invalid']);
  });

  it('DELETE with an unknown query parameter', async () => {
    const unknown = await rawCall('DELETE', '/v1/subscriptions/sub_unknown000000000000?nonsense=1', undefined, undefined, {});
    expect(errorOf(unknown)).toEqual([404, 'invalid_request_error', 'resource_missing', 'id']);
    const onKnown = await rawCall('DELETE', `/v1/subscriptions/${known}?nonsense=1`, undefined, undefined, {});
    expect(errorOf(onKnown).slice(0, 3)).toEqual([400, 'invalid_request_error', 'parameter_invalid']);
  });
});

describe('charges: the Idempotency-Key first, then the subscription', () => {
  for (const [what, body, type] of [
    ...badBodies,
    ...unreadableBodies,
    ['a body without amount', '{}', 'application/json'] as [string, string, string],
  ]) {
    it(`without a key, ${what} is idempotency_key_required (known and unknown subscription)`, async () => {
      for (const id of [known, 'sub_unknown000000000000']) {
        const res = await rawCall('POST', `/v1/subscriptions/${id}/charges`, body, type, {});
        expect(errorOf(res)).toEqual([400, 'idempotency_error', 'idempotency_key_required', 'Idempotency-Key']);
      }
    });

    if (unreadableBodies.some(([name]) => name === what)) continue;
    it(`with a key, ${what} on an unknown subscription is 404, replayed under the key`, async () => {
      const key = { 'Idempotency-Key': `k-${Math.random()}` };
      const res = await rawCall('POST', '/v1/subscriptions/sub_unknown000000000000/charges', body, type, key);
      expect(errorOf(res)).toEqual([404, 'invalid_request_error', 'resource_missing', 'id']);
      const again = await rawCall('POST', '/v1/subscriptions/sub_unknown000000000000/charges', body, type, key);
      expect([again.status, again.replayed]).toEqual([404, 'true']);
    });
  }
});
