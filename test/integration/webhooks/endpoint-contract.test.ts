// What this tests: enabled_events with `*` on webhook endpoints, over real HTTP with FerretDB, Temporal
// and a billing worker: a typo or a name of the other catalog beside `*` is invalid_event_type naming it,
// on create and on update, in JSON and in a form body, and a refused update changes nothing.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, createTestStore, startCheckoutStack, type CheckoutStack } from '../../support/checkout-fixtures';
import type { TestStore } from '../../support/api';

let stack: CheckoutStack;
let store: TestStore;

beforeAll(async () => {
  stack = await startCheckoutStack('webhook-endpoint-contract');
  store = await createTestStore(stack.mongo.db);
});

afterAll(async () => {
  await stack?.close();
});

type Res = { status: number; body: any };

/** The spec's typed error: status, type, code and param, and (when given) a message naming what `mentions` says. */
function expectError(res: Res, status: number, code: string, param: string | null, mentions?: string, type = 'invalid_request_error') {
  expect({ status: res.status, type: res.body?.error?.type, code: res.body?.error?.code, param: res.body?.error?.param }).toEqual({
    status,
    type,
    code,
    param,
  });
  if (mentions !== undefined) expect(res.body.error.message).toContain(mentions);
}

const post = (path: string, json: unknown, headers: Record<string, string> = {}) => call(stack.api, store.key, 'POST', path, { json, headers });
const get = (path: string) => call(stack.api, store.key, 'GET', path);

describe('enabled_events with *', () => {
  test('a typo beside * is refused with invalid_event_type naming it, on create and on update', async () => {
    const created = await post('/v1/webhook_endpoints', { url: 'https://hooks.example.com/typo', enabled_events: ['*', 'custmer.created'] });
    expectError(created, 400, 'invalid_event_type', 'enabled_events[1]');
    const ok = await post('/v1/webhook_endpoints', { url: 'https://hooks.example.com/typo', enabled_events: ['*'] });
    expect(ok.status).toBe(201);
    expectError(
      await post(`/v1/webhook_endpoints/${ok.body.id}`, { enabled_events: ['custmer.created', '*'] }),
      400,
      'invalid_event_type',
      'enabled_events[0]',
    );
  });

  test('a name of the other catalog or a typo beside * is invalid_event_type in either catalog and in a form body', async () => {
    const legacy = await post('/v1/webhook_endpoints', {
      url: 'https://hooks.example.com/legacy',
      api_version: '2026-09-01',
      enabled_events: ['*', 'customer.subscription.created'],
    });
    expectError(legacy, 400, 'invalid_event_type', 'enabled_events[1]', "'customer.subscription.created' is not an event type of catalog 2026-09-01");
    expectError(
      await post('/v1/webhook_endpoints', { url: 'https://hooks.example.com/p', enabled_events: ['*', 'custmer.*'] }),
      400,
      'invalid_event_type',
      'enabled_events[1]',
      'custmer.*',
    );
    const form = await call(stack.api, store.key, 'POST', '/v1/webhook_endpoints', {
      form: 'url=https%3A%2F%2Fhooks.example.com%2Fform&enabled_events[0]=*&enabled_events[1]=custmer.created',
    });
    expectError(form, 400, 'invalid_event_type', 'enabled_events[1]', 'custmer.created');
  });

  test('a refused update changes nothing', async () => {
    const endpoint = (await post('/v1/webhook_endpoints', { url: 'https://hooks.example.com/keep', enabled_events: ['customer.created'] })).body;
    expectError(
      await post(`/v1/webhook_endpoints/${endpoint.id}`, { enabled_events: ['*', 'custmer.created'], description: 'changed' }),
      400,
      'invalid_event_type',
      'enabled_events[1]',
      'custmer.created',
    );
    const read = (await get(`/v1/webhook_endpoints/${endpoint.id}`)).body;
    expect({ enabled_events: read.enabled_events, description: read.description }).toEqual({
      enabled_events: ['customer.created'],
      description: null,
    });
    await call(stack.api, store.key, 'DELETE', `/v1/webhook_endpoints/${endpoint.id}`);
  });
});
