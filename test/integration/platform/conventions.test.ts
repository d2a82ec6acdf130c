// The spec's common conventions over real HTTP against FerretDB: headers on every response, body and
// query encodings, the error object for every failure (unknown paths, bad bodies, schema and domain
// validation with nested params, bugs), versions, the authentication table, and the /docs error reference.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Type } from '@sinclair/typebox';
import { testMongo, type TestMongo } from '../../support/env';
import { call, createTestStore, type TestApi, type TestStore } from '../../support/api';
import { startApiWithRoutes } from '../../support/custom-api';
import { collections } from '../../../store/collections';
import { createApiKey } from '../../../store/stores';
import { ERROR_CODES, ERROR_TYPES, statusOf } from '../../../domain/errors';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;

const validCustomer = {
  email: 'ana@example.com',
  name: 'Ana Souza',
  phone: '+5511987654321',
  document: { type: 'cpf', number: '529.982.247-25' },
};

beforeAll(async () => {
  mongo = await testMongo();
  api = await startApiWithRoutes({
    db: mongo.db,
    // Auth failures below would otherwise exhaust the per-address window (rate-limits.test.ts covers it).
    config: { ipRateLimit: 10_000 },
    routes: (v1) => {
      v1.post(
        '/test/echo',
        {
          schema: {
            body: Type.Object(
              {
                n: Type.Optional(Type.Integer()),
                flag: Type.Optional(Type.Boolean()),
                tags: Type.Optional(Type.Array(Type.String())),
                nested: Type.Optional(Type.Object({ a: Type.Integer(), b: Type.Object({ c: Type.String() }) })),
              },
              { additionalProperties: false },
            ),
          },
        },
        async (request) => ({ body: request.body }),
      );
      v1.get(
        '/test/query',
        {
          schema: {
            querystring: Type.Object({ created: Type.Optional(Type.Object({ gte: Type.Integer() })), ids: Type.Optional(Type.Array(Type.String())) }),
          },
        },
        async (request) => ({
          query: request.query,
        }),
      );
      v1.get('/test/boom', async () => {
        throw new Error('database password is hunter2 at /srv/app/secret.ts:42');
      });
    },
  });
  store = await createTestStore(mongo.db);
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

function expectError(res: { status: number; body: any }, status: number, type: string, code: string, param: string | null = null) {
  expect({ status: res.status, type: res.body?.error?.type, code: res.body?.error?.code, param: res.body?.error?.param }).toEqual({
    status,
    type,
    code,
    param,
  });
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.doc_url).toBe(`${api.url}/docs#errors`);
}

function expectCommonHeaders(headers: Headers) {
  expect(headers.get('request-id')).toMatch(/^req_[0-9a-f]{20}$/);
  expect(headers.get('cache-control')).toBe('no-store');
  expect(headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(headers.get('x-ratelimit-limit')).toMatch(/^\d+$/);
  expect(headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
  expect(Number(headers.get('x-ratelimit-reset'))).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
}

describe('headers on every response', () => {
  it('an authenticated 200 carries Request-Id, rate headers, no-store and Service-Version', async () => {
    const res = await call(api, store.key, 'GET', '/v1/account');
    expect(res.status).toBe(200);
    expectCommonHeaders(res.headers);
    expect(res.headers.get('x-ratelimit-limit')).toBe('100');
    expect(res.headers.get('service-version')).toBe('2026-11-01');
  });

  it('each request gets its own Request-Id', async () => {
    const [a, b] = await Promise.all([call(api, store.key, 'GET', '/v1/account'), call(api, store.key, 'GET', '/v1/account')]);
    expect(a.headers.get('request-id')).not.toBe(b.headers.get('request-id'));
  });

  it('401, 404 (inside and outside /v1), 400 and 500 responses carry the same headers; only authenticated ones carry Service-Version', async () => {
    const unauthenticated = await call(api, null, 'GET', '/v1/account');
    const unknownV1 = await call(api, null, 'GET', '/v1/nothing-here');
    const outside = await call(api, null, 'GET', '/customers');
    const badBody = await call(api, store.key, 'POST', '/v1/customers', { headers: { 'content-type': 'text/plain' } });
    const boom = await call(api, store.key, 'GET', '/v1/test/boom');
    for (const res of [unauthenticated, unknownV1, outside, badBody, boom]) expectCommonHeaders(res.headers);
    expect(unauthenticated.headers.get('service-version')).toBeNull();
    expect(unknownV1.headers.get('service-version')).toBeNull();
    expect(badBody.headers.get('service-version')).toBe('2026-11-01');
    expect(boom.headers.get('service-version')).toBe('2026-11-01');
  });
});

describe('hosted pages', () => {
  it('a public route outside /v1 (a hosted page) needs no key and is not counted in any rate window', async () => {
    const api10 = await startApiWithRoutes({
      db: mongo.db,
      config: { ipRateLimit: 2 },
      routes: () => undefined,
      pages: (root) => {
        root.get('/test-page', { config: { public: true }, schema: { hide: true } }, async (_request, reply) =>
          reply.type('text/html').send('<p>page</p>'),
        );
      },
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${api10.url}/test-page`, { headers: { 'X-Forwarded-For': '192.0.2.44' } });
        statuses.push(res.status);
        expect(res.headers.get('x-ratelimit-limit')).toBeNull();
        expect(res.headers.get('request-id')).toMatch(/^req_[0-9a-f]{20}$/);
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
    } finally {
      await api10.close();
    }
  });
});

describe('error reference page', () => {
  it('GET /docs answers 200 HTML without a key, with an errors anchor listing every error type and every code of the closed list', async () => {
    const res = await fetch(`${api.url}/docs`);
    const page = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page).toContain('id="errors"');
    for (const type of ERROR_TYPES) expect(page).toContain(`<code>${type}</code>`);
    for (const code of ERROR_CODES) expect(page).toContain(`<tr id="${code}"><td><code>${code}</code></td><td>${statusOf(code)}</td>`);
  });

  it("an error's doc_url is the page's errors section, and the page it names answers 200", async () => {
    const refused = await call(api, null, 'GET', '/v1/account');
    const docUrl = new URL(refused.body.error.doc_url);
    expect([docUrl.origin, docUrl.pathname, docUrl.hash]).toEqual([api.url, '/docs', '#errors']);
    expect((await fetch(docUrl)).status).toBe(200);
  });
});

describe('unknown paths', () => {
  it.each(['/v1/nothing-here', '/v1/customers/cust_1/nothing', '/customers', '/', '/v2/customers', '/v1'])(
    'GET %s answers 404 resource_missing in the error format',
    async (path) => {
      const res = await call(api, store.key, 'GET', path);
      expectError(res, 404, 'invalid_request_error', 'resource_missing');
    },
  );

  it('an unknown method on a known path answers 404 resource_missing', async () => {
    const res = await call(api, store.key, 'PUT', '/v1/customers');
    expectError(res, 404, 'invalid_request_error', 'resource_missing');
  });

  it('an unknown path answers 404 even without a key', async () => {
    const res = await call(api, null, 'GET', '/v1/nothing-here');
    expectError(res, 404, 'invalid_request_error', 'resource_missing');
  });
});

describe('request bodies and query strings', () => {
  it('form bodies use bracket notation for objects and lists, and numbers and booleans are converted', async () => {
    const form = 'n=42&flag=true&tags[0]=x&tags[1]=y&nested[a]=7&nested[b][c]=deep';
    const res = await call(api, store.key, 'POST', '/v1/test/echo', { form });
    expect(res.status).toBe(200);
    expect(res.body.body).toEqual({ n: 42, flag: true, tags: ['x', 'y'], nested: { a: 7, b: { c: 'deep' } } });
  });

  it('form lists also accept a[]=x&a[]=y', async () => {
    const res = await call(api, store.key, 'POST', '/v1/test/echo', { form: 'tags[]=x&tags[]=y&flag=false' });
    expect(res.status).toBe(200);
    expect(res.body.body).toEqual({ tags: ['x', 'y'], flag: false });
  });

  it('JSON bodies are accepted with a charset parameter', async () => {
    const res = await fetch(`${api.url}/v1/test/echo`, {
      method: 'POST',
      headers: { authorization: `Bearer ${store.key}`, 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ n: 1, nested: { a: 2, b: { c: 'z' } } }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ body: { n: 1, nested: { a: 2, b: { c: 'z' } } } });
  });

  it('the query string takes the same bracket notation', async () => {
    const res = await call(api, store.key, 'GET', '/v1/test/query?created[gte]=100&ids[]=a&ids[]=b');
    expect(res.status).toBe(200);
    expect(res.body.query).toEqual({ created: { gte: 100 }, ids: ['a', 'b'] });
  });

  it('a text that is not a number where a number is expected is parameter_invalid naming the nested field', async () => {
    const res = await call(api, store.key, 'POST', '/v1/test/echo', { form: 'nested[a]=seven&nested[b][c]=x' });
    expectError(res, 400, 'invalid_request_error', 'parameter_invalid', 'nested.a');
  });

  it.each([
    ['text/plain', 'email=a@b.co'],
    ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="email"\r\n\r\na@b.co\r\n--x--'],
    ['application/xml', '<email>a@b.co</email>'],
  ])('a %s body answers 400 parameter_invalid', async (contentType, body) => {
    const direct = await fetch(`${api.url}/v1/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${store.key}`, 'content-type': contentType },
      body,
    });
    expectError({ status: direct.status, body: await direct.json() }, 400, 'invalid_request_error', 'parameter_invalid');
  });

  it.each([['[1,2]'], ['"text"'], ['42'], ['null'], ['true'], ['{"email": '], ['{bad json}']])(
    'the JSON body %s (not an object) answers 400 parameter_invalid',
    async (body) => {
      const res = await fetch(`${api.url}/v1/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${store.key}`, 'content-type': 'application/json' },
        body,
      });
      expectError({ status: res.status, body: await res.json() }, 400, 'invalid_request_error', 'parameter_invalid');
    },
  );

  it.each([
    ['{"__proto__": {"polluted": "yes"}}'],
    ['{"n": 1, "nested": {"a": 2, "b": {"c": "x", "__proto__": {"polluted": "yes"}}}}'],
    ['{"constructor": {"prototype": {"polluted": "yes"}}}'],
    ['{"tags": [{"constructor": {"prototype": {"polluted": "yes"}}}]}'],
  ])('the JSON body %s (a prototype-poisoning key) answers 400 parameter_invalid and pollutes nothing', async (body) => {
    for (const path of ['/v1/test/echo', '/v1/customers']) {
      const res = await fetch(`${api.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${store.key}`, 'content-type': 'application/json' },
        body,
      });
      const parsed = (await res.json()) as { error: { message: string } };
      expectError({ status: res.status, body: parsed }, 400, 'invalid_request_error', 'parameter_invalid');
      expect(parsed.error.message).toBe('The JSON request body may not contain "__proto__" or "constructor.prototype" keys.');
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('form keys __proto__ and constructor[prototype] are dropped by the parser, polluting nothing', async () => {
    const res = await call(api, store.key, 'POST', '/v1/test/echo', { form: '__proto__[polluted]=yes&constructor[prototype][polluted]=yes&n=3' });
    expect([res.status, res.body.body]).toEqual([200, { n: 3 }]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('a POST without any body is an empty set of parameters (an update of an unknown id is then 404)', async () => {
    const res = await fetch(`${api.url}/v1/customers/cust_unknown`, { method: 'POST', headers: { authorization: `Bearer ${store.key}` } });
    expectError({ status: res.status, body: await res.json() }, 404, 'invalid_request_error', 'resource_missing', 'id');
  });

  it('unknown parameters are refused with parameter_invalid naming them', async () => {
    const res = await call(api, store.key, 'POST', '/v1/customers', { json: { ...validCustomer, favourite_color: 'blue' } });
    expectError(res, 400, 'invalid_request_error', 'parameter_invalid', 'favourite_color');
    const query = await call(api, store.key, 'GET', '/v1/customers?colour=blue');
    expectError(query, 400, 'invalid_request_error', 'parameter_invalid', 'colour');
  });
});

describe('error object and params', () => {
  it('a missing nested field from schema validation is parameter_missing with a dotted param (form)', async () => {
    const res = await call(api, store.key, 'POST', '/v1/customers', {
      form: 'email=ana@example.com&name=Ana+Souza&phone=%2B5511987654321&document[type]=cpf',
    });
    expectError(res, 400, 'invalid_request_error', 'parameter_missing', 'document.number');
  });

  it('a missing top-level field is parameter_missing naming it (JSON)', async () => {
    const { phone: _phone, ...withoutPhone } = validCustomer;
    const res = await call(api, store.key, 'POST', '/v1/customers', { json: withoutPhone });
    expectError(res, 400, 'invalid_request_error', 'parameter_missing', 'phone');
  });

  it('a missing address part found by the domain rules is parameter_missing address.city', async () => {
    const res = await call(api, store.key, 'POST', '/v1/customers', {
      json: { ...validCustomer, address: { line1: 'Rua A, 1', state: 'SP', postal_code: '01000-000', country: 'BR' } },
    });
    expectError(res, 400, 'invalid_request_error', 'parameter_missing', 'address.city');
  });

  it('an invalid enum value nested in an object is parameter_invalid document.type', async () => {
    const res = await call(api, store.key, 'POST', '/v1/customers', { json: { ...validCustomer, document: { type: 'ssn', number: '1' } } });
    expectError(res, 400, 'invalid_request_error', 'parameter_invalid', 'document.type');
  });

  it('a metadata key over 40 characters is parameter_invalid naming the key', async () => {
    const key = 'k'.repeat(41);
    const res = await call(api, store.key, 'POST', '/v1/customers', { json: { ...validCustomer, metadata: { [key]: 'v' } } });
    expectError(res, 400, 'invalid_request_error', 'parameter_invalid', `metadata.${key}`);
  });

  it('a handler that throws answers 500 api_error/internal_error with the Request-Id and no internals', async () => {
    const res = await call(api, store.key, 'GET', '/v1/test/boom');
    expectError(res, 500, 'api_error', 'internal_error');
    const text = JSON.stringify(res.body);
    expect(text).not.toMatch(/hunter2|secret\.ts|stack|at \//);
    expect(res.body.error.message).toContain(res.headers.get('request-id')!);
    expect(Object.keys(res.body.error).sort()).toEqual(['code', 'doc_url', 'message', 'param', 'type']);
  });
});

describe('versioning', () => {
  it("without Service-Version the key's pinned version is used and echoed", async () => {
    const res = await call(api, store.key, 'GET', '/v1/account');
    expect(res.body.api_version).toBe('2026-11-01');
    expect(res.body.api_key.default_version).toBe('2026-11-01');
    expect(res.headers.get('service-version')).toBe('2026-11-01');
  });

  it('a known Service-Version is accepted and echoed', async () => {
    const res = await call(api, store.key, 'GET', '/v1/account', { headers: { 'Service-Version': '2026-11-01' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('service-version')).toBe('2026-11-01');
  });

  it('an unknown Service-Version answers 400 invalid_api_version listing the accepted versions', async () => {
    const res = await call(api, store.key, 'GET', '/v1/account', { headers: { 'Service-Version': '2020-01-01' } });
    expectError(res, 400, 'invalid_request_error', 'invalid_api_version', 'Service-Version');
    expect(res.body.error.message).toContain('2026-11-01');
  });

  it("a Stripe client's Stripe-Version header is ignored", async () => {
    const res = await call(api, store.key, 'GET', '/v1/account', { headers: { 'Stripe-Version': '2025-01-27.acacia' } });
    expect(res.status).toBe(200);
  });
});

describe('authentication', () => {
  const INVALID = 'Invalid API key provided.';

  it.each([
    ['no Authorization header', undefined],
    ['a scheme that is neither Bearer nor Basic', 'Token abc'],
    ['an empty header', ''],
  ])('%s answers 401 api_key_missing', async (_what, header) => {
    const res = await call(api, null, 'GET', '/v1/account', header === undefined ? {} : { headers: { authorization: header } });
    expectError(res, 401, 'authentication_error', 'api_key_missing');
  });

  it('a wrong shape, an unknown key, a wrong secret and a deleted store all answer 401 invalid_api_key with one identical message', async () => {
    const keyId = store.key.slice(8, 20);
    const doomed = await createTestStore(mongo.db);
    await collections(mongo.db).stores.deleteOne({ _id: doomed.store._id });
    const cases = [
      'vk_live_short',
      `sk_live_${'a'.repeat(44)}`,
      `vk_live_${'a'.repeat(44)}`,
      `vk_live_${keyId}${'b'.repeat(32)}`,
      `${store.key}x`,
      doomed.key,
    ];
    const messages = new Set<string>();
    for (const key of cases) {
      const res = await call(api, key, 'GET', '/v1/account');
      expectError(res, 401, 'authentication_error', 'invalid_api_key');
      messages.add(res.body.error.message);
    }
    expect([...messages]).toEqual([INVALID]);
  });

  it('HTTP Basic with a non-empty password is refused as invalid_api_key', async () => {
    const basic = Buffer.from(`${store.key}:secret`).toString('base64');
    const res = await call(api, null, 'GET', '/v1/account', { headers: { authorization: `Basic ${basic}` } });
    expectError(res, 401, 'authentication_error', 'invalid_api_key');
  });

  it('a revoked key answers 401 api_key_revoked on the very next request', async () => {
    const { key, id } = await store.makeKey(['read', 'write']);
    expect((await call(api, key, 'GET', '/v1/account')).status).toBe(200);
    await collections(mongo.db).apiKeys.updateOne({ _id: id }, { $set: { revoked_at: Math.floor(Date.now() / 1000) } });
    const res = await call(api, key, 'GET', '/v1/account');
    expectError(res, 401, 'authentication_error', 'api_key_revoked');
  });

  it('a key past its expiry answers 401 api_key_expired', async () => {
    const { key } = await store.makeKey(['read'], { expiresAt: Math.floor(Date.now() / 1000) - 1 });
    const res = await call(api, key, 'GET', '/v1/account');
    expectError(res, 401, 'authentication_error', 'api_key_expired');
  });

  it('a key whose expiry is ahead works', async () => {
    const { key } = await store.makeKey(['read'], { expiresAt: Math.floor(Date.now() / 1000) + 3600 });
    expect((await call(api, key, 'GET', '/v1/account')).status).toBe(200);
  });

  it('a store with the API switched off answers 403 api_not_enabled even with a valid key', async () => {
    const off = await createTestStore(mongo.db);
    await collections(mongo.db).stores.updateOne({ _id: off.store._id }, { $set: { api_enabled: false } });
    const res = await call(api, off.key, 'GET', '/v1/account');
    expectError(res, 403, 'permission_error', 'api_not_enabled');
    expect(res.headers.get('x-ratelimit-limit')).toBe('100');
  });

  it('an inactive store answers 403 project_inactive', async () => {
    const inactive = await createTestStore(mongo.db);
    await collections(mongo.db).stores.updateOne({ _id: inactive.store._id }, { $set: { active: false } });
    const res = await call(api, inactive.key, 'POST', '/v1/customers', { json: validCustomer });
    expectError(res, 403, 'permission_error', 'project_inactive');
  });

  it('a read-only key may GET but a POST answers 403 insufficient_scope', async () => {
    const { key } = await store.makeKey(['read']);
    expect((await call(api, key, 'GET', '/v1/customers')).status).toBe(200);
    const res = await call(api, key, 'POST', '/v1/customers', { json: validCustomer });
    expectError(res, 403, 'permission_error', 'insufficient_scope');
    expect(await collections(mongo.db).customers.countDocuments({ store_id: store.store._id, email: validCustomer.email })).toBe(0);
  });

  it('a write-only key may POST but a GET answers 403 insufficient_scope', async () => {
    const { key } = await store.makeKey(['write']);
    const res = await call(api, key, 'GET', '/v1/account');
    expectError(res, 403, 'permission_error', 'insufficient_scope');
    const created = await call(api, key, 'POST', '/v1/customers', { json: { ...validCustomer, email: 'writer@example.com' } });
    expect(created.status).toBe(201);
  });

  it('Bearer and Basic are equivalent', async () => {
    const basic = Buffer.from(`${store.key}:`).toString('base64');
    const viaBasic = await call(api, null, 'GET', '/v1/account', { headers: { authorization: `Basic ${basic}` } });
    const viaBearer = await call(api, store.key, 'GET', '/v1/account');
    expect(viaBasic.status).toBe(200);
    expect(viaBasic.body).toEqual(viaBearer.body);
  });

  it('a key of another store reads that store only', async () => {
    const other = await createTestStore(mongo.db, { name: 'Other Store' });
    const { key } = await createApiKey(mongo.db, { storeId: other.store._id, name: 'other', scopes: ['read'] });
    const res = await call(api, key, 'GET', '/v1/account');
    expect(res.body.id).toBe(other.store._id);
  });
});
