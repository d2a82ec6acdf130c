// GET /v1/openapi.json and /v1/postman.json over real HTTP: a valid OpenAPI 3.1 document generated from
// the route schemas, covering every registered /v1 route with its errors, every $ref resolving; and a
// Postman collection converted from it. Both are built once.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import Fastify from 'fastify';
import { Validator } from '@seriousme/openapi-schema-validator';
import { testMongo, type TestMongo } from '../../support/env';
import { call, startTestApi, type TestApi } from '../../support/api';
import { componentSchemas, routeModules } from '../../../api/routes';
import { ErrorResponse } from '../../../api/http-schemas';
import { createTestConnection } from '../../../adapters/provider/test-connection';

const conversions = vi.hoisted(() => ({ count: 0 }));
vi.mock('openapi-to-postmanv2', async (importOriginal) => {
  const original = await importOriginal<typeof import('openapi-to-postmanv2')>();
  return {
    ...original,
    convertV2: (...args: Parameters<typeof original.convertV2>) => {
      conversions.count += 1;
      return original.convertV2(...args);
    },
  };
});

let mongo: TestMongo;
let api: TestApi;
let doc: any;

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  const res = await call(api, null, 'GET', '/v1/openapi.json');
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

/** Every route the route modules register, as the document names it (`/v1/customers/{id}`). */
async function registeredRoutes(): Promise<string[]> {
  const app = Fastify();
  app.decorate('deps', { db: mongo.db, config: api.config, temporal: api.app.deps.temporal, provider: createTestConnection({ db: mongo.db }) });
  app.addSchema(ErrorResponse);
  for (const schema of componentSchemas) app.addSchema(schema);
  const found: string[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (method !== 'HEAD' && route.url.startsWith('/v1/')) found.push(`${method} ${route.url.replace(/:([A-Za-z_]+)/g, '{$1}')}`);
    }
  });
  await app.register(
    async (v1) => {
      for (const routes of routeModules) await v1.register(routes);
    },
    { prefix: '/v1' },
  );
  await app.ready();
  await app.close();
  return found;
}

function operations(): [string, string, any][] {
  return Object.entries(doc.paths).flatMap(([path, ops]: [string, any]) =>
    Object.entries(ops).map(([method, op]) => [method.toUpperCase(), path, op] as [string, string, any]),
  );
}

describe('GET /v1/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document, served without a key with the usual headers', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc);
    expect(result).toEqual({ valid: true });
    const res = await call(api, null, 'GET', '/v1/openapi.json');
    expect(res.headers.get('request-id')).toMatch(/^req_[0-9a-f]{20}$/);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('describes every /v1 route the route modules register, and nothing outside /v1', async () => {
    const routes = await registeredRoutes();
    expect(routes.length).toBeGreaterThanOrEqual(9);
    const described = operations().map(([method, path]) => `${method} ${path}`);
    expect(described.sort()).toEqual([...new Set(routes)].sort());
    expect(Object.keys(doc.paths).every((p) => p.startsWith('/v1/'))).toBe(true);
    expect(doc.paths['/v1/openapi.json']).toBeUndefined();
  });

  it('every operation answers its errors with the Error component, has a success schema and an operationId', () => {
    for (const [method, path, op] of operations()) {
      const where = `${method} ${path}`;
      for (const status of ['400', '401', '403', '404', '409', '429', '500']) {
        expect(op.responses[status]?.content?.['application/json']?.schema, `${where} ${status}`).toEqual({ $ref: '#/components/schemas/Error' });
        expect(op.responses[status].description, `${where} ${status}`).not.toBe('Default Response');
      }
      const success = Object.keys(op.responses).filter((s) => s.startsWith('2'));
      expect(success.length, where).toBeGreaterThan(0);
      expect(op.operationId, where).toMatch(/^[a-z0-9_]+$/);
    }
    const ids = operations().map(([, , op]) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('every $ref resolves to a component, and the named schemas are components', () => {
    const refs: string[] = [];
    const visit = (node: unknown) => {
      if (Array.isArray(node)) node.forEach(visit);
      else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (k === '$ref' && typeof v === 'string') refs.push(v);
          else visit(v);
        }
      }
    };
    visit(doc);
    expect(refs.length).toBeGreaterThan(10);
    for (const ref of refs) {
      expect(ref).toMatch(/^#\/components\/schemas\//);
      expect(doc.components.schemas[ref.split('/').pop()!], ref).toBeDefined();
    }
    for (const name of ['Error', 'Account', 'Customer', 'Order', 'Offer', 'Product']) expect(doc.components.schemas[name]).toBeDefined();
    expect(doc.components.schemas.Error.properties.error.required).toEqual(['type', 'code', 'message', 'param', 'doc_url']);
  });

  it('POST operations take JSON and form bodies, and document Idempotency-Key and Service-Version', () => {
    const posts = operations().filter(([method]) => method === 'POST');
    expect(posts.length).toBeGreaterThan(0);
    for (const [, path, op] of posts) {
      const headers = (op.parameters ?? []).filter((p: any) => p.in === 'header').map((p: any) => p.name);
      expect(headers, path).toEqual(expect.arrayContaining(['Idempotency-Key', 'Service-Version']));
      if (op.requestBody) expect(Object.keys(op.requestBody.content).sort(), path).toEqual(['application/json', 'application/x-www-form-urlencoded']);
    }
    const create = doc.paths['/v1/customers'].post;
    expect(create.requestBody.content['application/x-www-form-urlencoded'].encoding.document).toEqual({ style: 'deepObject', explode: true });
    expect(create.requestBody.content['application/json'].schema.required).toEqual(['email', 'name', 'phone', 'document']);
  });

  it('query objects use bracket notation (deepObject) and list pagination is described', () => {
    const created = doc.paths['/v1/orders'].get.parameters.find((p: any) => p.name === 'created');
    expect(created).toMatchObject({ in: 'query', style: 'deepObject', explode: true });
    const limit = doc.paths['/v1/customers'].get.parameters.find((p: any) => p.name === 'limit');
    expect(limit.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 10 });
  });

  it('the document is generated once and served from memory', async () => {
    expect(api.app.swagger()).toBe(api.app.swagger());
  });
});

describe('GET /v1/postman.json', () => {
  it('is a Postman v2.1 collection with one request per operation, converted once', async () => {
    const before = conversions.count;
    const first = await call(api, null, 'GET', '/v1/postman.json');
    const second = await call(api, null, 'GET', '/v1/postman.json');
    expect(first.status).toBe(200);
    expect(first.body.info.schema).toContain('v2.1.0');
    expect(second.body).toEqual(first.body);
    expect(conversions.count - before).toBeLessThanOrEqual(1);
    const requests: { method: string; url: { path: string[] } }[] = [];
    const collect = (items: any[]) => items.forEach((i) => (i.item ? collect(i.item) : requests.push(i.request)));
    collect(first.body.item);
    expect(requests).toHaveLength(operations().length);
    expect(requests.map((r) => `${r.method} /${r.url.path.join('/')}`)).toContain('POST /v1/customers');
  });
});
