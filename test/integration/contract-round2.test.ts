// What this tests: contract deviations a merchant would hit, each quoted from the spec, over real HTTP
// with FerretDB, Temporal and a billing worker. JSON null (or an empty form value) in a required field
// is parameter_missing for that param, not a coerced 0 or ""; POST /customers with a known email
// answers 200 with that customer whatever else is sent; a typo beside `*` in enabled_events is refused;
// line_items[0][price] errors name `offer`; customer_email stays as passed after payment; PIX is
// refused by the server outside BRL and with a free trial, whatever the form says.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { findCheckoutSession } from '../../store/checkout-sessions';
import { buyerForm, call, createSession, createTestStore, seedCheckoutCatalog, startCheckoutStack, type CheckoutCatalog, type CheckoutStack } from '../support/checkout-fixtures';
import type { TestStore } from '../support/api';
import { waitFor } from '../support/env';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;

beforeAll(async () => {
  stack = await startCheckoutStack('contract-round2');
  store = await createTestStore(stack.mongo.db);
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
});

afterAll(async () => {
  await stack?.close();
});

function expectError(res: { status: number; body: any }, status: number, code: string, param: string | null) {
  expect({ status: res.status, type: res.body?.error?.type, code: res.body?.error?.code, param: res.body?.error?.param }).toEqual({
    status,
    type: 'invalid_request_error',
    code,
    param,
  });
}

const post = (path: string, json: unknown) => call(stack.api, store.key, 'POST', path, { json });
const customer = (email: string) => ({ email, name: 'Ana Souza', phone: '+5511987654321', document: { type: 'cpf', number: '52998224725' } });

describe('JSON null in a required field', () => {
  test('is parameter_missing for that param (top level, nested, and an empty form value), never coerced', async () => {
    expectError(await post('/v1/customers', { ...customer(`null1-${Date.now()}@example.com`), name: null }), 400, 'parameter_missing', 'name');
    expectError(await post('/v1/customers', { ...customer(`null2-${Date.now()}@example.com`), document: { type: null, number: '52998224725' } }), 400, 'parameter_missing', 'document.type');
    expectError(await post('/v1/billing/meters', { display_name: null, event_name: `nulls.${Date.now()}` }), 400, 'parameter_missing', 'display_name');
    expectError(await post('/v1/webhook_endpoints', { url: null }), 400, 'parameter_missing', 'url');
    const form = await call(stack.api, store.key, 'POST', '/v1/customers', { form: `email=&name=Ana+Souza&phone=%2B5511987654321&document[type]=cpf&document[number]=52998224725` });
    expectError(form, 400, 'parameter_missing', 'email');
    // A nullable field still takes null.
    const withNullAddress = await post('/v1/customers', { ...customer(`null3-${Date.now()}@example.com`), address: null });
    expect([withNullAddress.status, withNullAddress.body.address]).toEqual([201, null]);
  });
});

describe('POST /v1/customers with a known email', () => {
  test('answers 200 with the existing customer, no field changed, even when the other fields would not validate', async () => {
    const email = `known-${Date.now()}@example.com`;
    const first = await post('/v1/customers', customer(email));
    expect(first.status).toBe(201);
    for (const body of [
      { email, name: 'X' },
      { email: email.toUpperCase(), name: null, phone: 'not a phone', document: { type: 'nope' } },
      { email, name: 'Other Name', unknown_field: true },
    ]) {
      const again = await post('/v1/customers', body);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
    }
    // A new email still gets the full validation.
    expectError(await post('/v1/customers', { email: `new-${Date.now()}@example.com`, name: 'X', phone: '+5511987654321', document: { type: 'cpf', number: '52998224725' } }), 400, 'parameter_invalid', 'name');
  });
});

describe('enabled_events', () => {
  test('a typo beside * is refused with invalid_event_type naming it, on create and on update', async () => {
    const created = await post('/v1/webhook_endpoints', { url: 'https://hooks.example.com/typo', enabled_events: ['*', 'custmer.created'] });
    expectError(created, 400, 'invalid_event_type', 'enabled_events[1]');
    const ok = await post('/v1/webhook_endpoints', { url: 'https://hooks.example.com/typo', enabled_events: ['*'] });
    expect(ok.status).toBe(201);
    expectError(await post(`/v1/webhook_endpoints/${ok.body.id}`, { enabled_events: ['custmer.created', '*'] }), 400, 'invalid_event_type', 'enabled_events[0]');
  });
});

describe('checkout sessions', () => {
  test('an unknown offer through line_items[0][price] is 404 resource_missing with param offer', async () => {
    expectError(await createSession(stack.api, store, { line_items: [{ price: 'ofr_nope', quantity: 1 }] }), 404, 'resource_missing', 'offer');
  });

  async function pay(sessionId: string, form: Record<string, string>) {
    const res = await fetch(`${stack.api.url}/c/${sessionId}/pay`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
    return { status: res.status, text: await res.text() };
  }

  test('customer_email stays as passed after payment: null when not passed, the passed one when passed', async () => {
    const plain = (await createSession(stack.api, store, { offer: catalog.oneOff._id })).body;
    const passed = (await createSession(stack.api, store, { offer: catalog.oneOff._id, customer_email: 'given@example.com' })).body;
    expect((await pay(plain.id, { ...buyerForm(), method: 'card', card_number: '4242424242424242' })).status).toBe(303);
    expect((await pay(passed.id, { ...buyerForm({ email: 'given@example.com' }), method: 'card', card_number: '4242424242424242' })).status).toBe(303);
    for (const [id, email] of [[plain.id, null], [passed.id, 'given@example.com']] as const) {
      await waitFor(async () => (await findCheckoutSession(stack.mongo.db, store.store._id, id))?.status === 'complete' || null, { description: `${id} complete` });
      const read = await call(stack.api, store.key, 'GET', `/v1/checkout/sessions/${id}`);
      expect({ status: read.body.status, customer_email: read.body.customer_email, hasCustomer: read.body.customer !== null }).toEqual({ status: 'complete', customer_email: email, hasCustomer: true });
    }
  });

  test('PIX is refused by the server outside BRL and with a free trial (a hand-made form), and the session stays open', async () => {
    const usd = (await createSession(stack.api, store, { offer: catalog.oneOff._id, currency: 'usd' })).body;
    const trial = (await createSession(stack.api, store, { offer: catalog.trial._id })).body;
    for (const id of [usd.id, trial.id]) {
      const res = await pay(id, { ...buyerForm(), method: 'pix' });
      expect(res.status).toBe(400);
      expect(res.text).toContain('PIX is only available for payments in BRL without a free trial.');
      const doc = await findCheckoutSession(stack.mongo.db, store.store._id, id);
      expect({ status: doc?.status, order: doc?.order }).toEqual({ status: 'open', order: null });
    }
    // BRL without a trial: the PIX is generated.
    const brl = (await createSession(stack.api, store, { offer: catalog.oneOff._id })).body;
    expect((await pay(brl.id, { ...buyerForm(), method: 'pix' })).status).toBe(303);
  });
});

describe('a free-trial sign-up from checkout', () => {
  test('reaches a 2026-09-01 endpoint as subscription.created (no order is created, so no order.paid)', async () => {
    const trialStore = await createTestStore(stack.mongo.db);
    const trialCatalog = await seedCheckoutCatalog(stack.mongo.db, trialStore.store._id);
    const endpoint = await call(stack.api, trialStore.key, 'POST', '/v1/webhook_endpoints', { json: { url: 'https://hooks.example.com/legacy', api_version: '2026-09-01' } });
    expect(endpoint.status).toBe(201);
    const session = (await createSession(stack.api, trialStore, { offer: trialCatalog.trial._id })).body;
    const res = await fetch(`${stack.api.url}/c/${session.id}/pay`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...buyerForm(), method: 'card', card_number: '4242424242424242' }).toString(),
    });
    expect(res.status).toBe(303);
    const legacy = await waitFor(async () => {
      const events = await stack.mongo.db.collection('events').find({ store_id: trialStore.store._id, api_version: '2026-09-01' }).toArray();
      return events.some((e) => e.type === 'subscription.created') ? events : null;
    }, { description: 'the 2026-09-01 subscription.created' });
    const created = legacy.find((e) => e.type === 'subscription.created')!;
    expect(created.targets).toEqual([endpoint.body.id]);
    expect(JSON.parse(created.data_json).object).toMatchObject({ status: 'trialing' });
    expect(legacy.map((e) => e.type)).not.toContain('order.paid');
  });
});
