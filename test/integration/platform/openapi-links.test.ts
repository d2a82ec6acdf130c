// What this tests: /v1/openapi.json over real HTTP carries what a client (or a fuzzer's stateful phase)
// needs to go past invented ids: links from each create to its retrieve, update, actions and lists, each
// naming an operation of the document and parameters it has, and followable on a real answer; the body
// examples it gives are accepted as they are; the rules it writes into the schemas (patterns, formats)
// are the ones the code enforces (a value outside them is refused with the spec's 400).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testMongo, type TestMongo } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;
let doc: any;

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db, config: { webhookAllowedHosts: ['hooks.example.com'] } });
  store = await createTestStore(mongo.db);
  doc = (await call(api, null, 'GET', '/v1/openapi.json')).body;
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

interface Op {
  method: string;
  path: string;
  operation: any;
}

function operations(): Map<string, Op> {
  const out = new Map<string, Op>();
  for (const [path, methods] of Object.entries<any>(doc.paths)) {
    for (const [method, operation] of Object.entries<any>(methods)) out.set(operation.operationId, { method, path, operation });
  }
  return out;
}

const linksOf = (operationId: string, status: string) => operations().get(operationId)!.operation.responses[status]?.links ?? {};
const targetsOf = (operationId: string, status: string) => Object.values<any>(linksOf(operationId, status)).map((l) => l.operationId);

/** `$response.body#/a/0/b` read from a response body. */
function resolve(expression: string, body: any): unknown {
  const pointer = expression.replace('$response.body#', '');
  return pointer
    .split('/')
    .slice(1)
    .reduce((value, key) => value?.[key], body);
}

describe('links', () => {
  it('lead from each create to its retrieve, update, actions and lists', () => {
    expect(targetsOf('post_customers', '201')).toEqual(
      expect.arrayContaining(['get_customers_by_id', 'post_customers_by_id', 'get_subscriptions', 'get_orders', 'post_billing_portal_sessions']),
    );
    expect(targetsOf('post_checkout_sessions', '201')).toEqual(
      expect.arrayContaining(['get_checkout_sessions_by_id', 'post_checkout_sessions_by_id_expire', 'get_checkout_sessions']),
    );
    expect(targetsOf('post_webhook_endpoints', '201')).toEqual(
      expect.arrayContaining([
        'get_webhook_endpoints_by_id',
        'post_webhook_endpoints_by_id',
        'delete_webhook_endpoints_by_id',
        'post_webhook_endpoints_by_id_test',
      ]),
    );
    expect(targetsOf('post_billing_meters', '201')).toEqual(
      expect.arrayContaining(['get_billing_meters_by_id', 'post_billing_meters_by_id', 'post_billing_meters_by_id_deactivate', 'get_billing_meters']),
    );
    expect(targetsOf('post_test_helpers_test_clocks', '201')).toEqual(
      expect.arrayContaining(['get_test_helpers_test_clocks_by_id', 'post_test_helpers_test_clocks_by_id_advance', 'get_test_helpers_test_clocks']),
    );
    expect(targetsOf('post_subscriptions_by_id_charges', '201')).toEqual(
      expect.arrayContaining(['get_subscription_charges_by_id', 'get_subscriptions_by_id_charges']),
    );
    expect(targetsOf('post_subscriptions_by_id_usage_items', '201')).toContain('delete_subscriptions_by_id_usage_items_by_item_id');
    // Subscriptions are made by checkout, not by a create: their list's first item leads to every action.
    expect(targetsOf('get_subscriptions', '200')).toEqual(
      expect.arrayContaining([
        'get_subscriptions_by_id',
        'post_subscriptions_by_id_pause',
        'post_subscriptions_by_id_charges',
        'delete_subscriptions_by_id',
      ]),
    );
  });

  it('name operations of the document and only parameters their target has', () => {
    const ops = operations();
    let count = 0;
    for (const { operation } of ops.values()) {
      for (const response of Object.values<any>(operation.responses)) {
        for (const link of Object.values<any>(response.links ?? {})) {
          count++;
          const target = ops.get(link.operationId);
          expect(target, link.operationId).toBeDefined();
          const names = (target!.operation.parameters ?? []).map((p: { name: string }) => p.name);
          for (const name of Object.keys(link.parameters ?? {})) expect(names, `${link.operationId} ${name}`).toContain(name);
          const body = target!.operation.requestBody?.content?.['application/json']?.schema?.properties ?? {};
          for (const name of Object.keys(link.requestBody ?? {})) expect(Object.keys(body), `${link.operationId} body ${name}`).toContain(name);
        }
      }
    }
    expect(count).toBeGreaterThan(50);
  });

  it('are followable: a customer created from the example, then each by-id link of its answer answers 200', async () => {
    const example = operations().get('post_customers')!.operation.requestBody.content['application/json'].schema.examples[0];
    const created = await call(api, store.key, 'POST', '/v1/customers', { json: example });
    expect(created.status).toBe(201);
    for (const link of Object.values<any>(linksOf('post_customers', '201'))) {
      if (link.operationId !== 'get_customers_by_id') continue;
      const target = operations().get(link.operationId)!;
      const path = target.path.replace('{id}', String(resolve(link.parameters.id, created.body)));
      expect((await call(api, store.key, 'GET', path)).body).toMatchObject({ id: created.body.id, object: 'customer' });
    }
  });
});

describe("the schemas' rules and examples", () => {
  it('every body example the document gives is accepted as it is', async () => {
    const withExamples = [...operations().values()].filter((op) => op.operation.requestBody?.content?.['application/json']?.schema?.examples);
    expect(withExamples.map((op) => op.operation.operationId).sort()).toEqual(['post_billing_meters', 'post_customers', 'post_webhook_endpoints']);
    for (const { method, path, operation } of withExamples) {
      const res = await call(api, store.key, method.toUpperCase(), path, {
        json: operation.requestBody.content['application/json'].schema.examples[0],
      });
      expect(res.status, operation.operationId).toBeLessThan(300);
    }
  });

  it("a subscription charge's Idempotency-Key is a required header (the spec's idempotency_key_required); elsewhere optional", () => {
    const header = (operationId: string) =>
      operations()
        .get(operationId)!
        .operation.parameters.find((p: { in: string; name: string }) => p.in === 'header' && p.name === 'Idempotency-Key');
    expect(header('post_subscriptions_by_id_charges')).toMatchObject({ required: true });
    expect(header('post_customers').required ?? false).toBe(false);
  });

  it('a value outside a documented pattern is refused by the code with 400 parameter_invalid on that field', async () => {
    const rules = (operationId: string, field: string) =>
      operations().get(operationId)!.operation.requestBody.content['application/json'].schema.properties[field];
    expect(rules('post_billing_meters', 'event_name')).toMatchObject({ pattern: '^[a-z0-9_.-]+$' });
    const meter = await call(api, store.key, 'POST', '/v1/billing/meters', { json: { display_name: 'Bad', event_name: 'Has Spaces' } });
    expect(meter.status).toBe(400);
    expect(meter.body.error).toMatchObject({ code: 'parameter_invalid', param: 'event_name' });
    expect(rules('post_customers', 'email')).toMatchObject({ format: 'email' });
    const customer = await call(api, store.key, 'POST', '/v1/customers', {
      json: { email: 'not-an-email', name: 'Ana Souza', phone: '+5511987654321', document: { type: 'cpf', number: '52998224725' } },
    });
    expect(customer.status).toBe(400);
    expect(customer.body.error).toMatchObject({ code: 'parameter_invalid', param: 'email' });
  });
});
