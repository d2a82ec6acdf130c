// What this tests: JSON null is never coerced, over real HTTP with FerretDB, Temporal and a billing worker:
// null (or an empty form value) in a required param is parameter_missing naming it, top level or nested,
// across endpoints, never a coerced 0 or ""; null in an optional param counts as not sent (defaults
// apply), and a nullable field still takes null.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  call,
  createSession,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';
import type { TestStore } from '../../support/api';
import { seedUsageOffer, seedUsageSubscription } from '../../support/usage';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;

beforeAll(async () => {
  stack = await startCheckoutStack('null-params-contract');
  store = await createTestStore(stack.mongo.db);
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
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
let seq = 0;
const uniqueEmail = (tag: string) => `${tag}-${++seq}-${Date.now()}@example.com`;
const customerBody = (email: string) => ({ email, name: 'Ana Souza', phone: '+5511987654321', document: { type: 'cpf', number: '52998224725' } });

describe('null is never coerced', () => {
  test('JSON null in a required field is parameter_missing for that param (top level, nested, and an empty form value); a nullable field still takes null', async () => {
    expectError(await post('/v1/customers', { ...customerBody(`null1-${Date.now()}@example.com`), name: null }), 400, 'parameter_missing', 'name');
    expectError(
      await post('/v1/customers', { ...customerBody(`null2-${Date.now()}@example.com`), document: { type: null, number: '52998224725' } }),
      400,
      'parameter_missing',
      'document.type',
    );
    expectError(
      await post('/v1/billing/meters', { display_name: null, event_name: `nulls.${Date.now()}` }),
      400,
      'parameter_missing',
      'display_name',
    );
    expectError(await post('/v1/webhook_endpoints', { url: null }), 400, 'parameter_missing', 'url');
    const form = await call(stack.api, store.key, 'POST', '/v1/customers', {
      form: `email=&name=Ana+Souza&phone=%2B5511987654321&document[type]=cpf&document[number]=52998224725`,
    });
    expectError(form, 400, 'parameter_missing', 'email');
    // A nullable field still takes null.
    const withNullAddress = await post('/v1/customers', { ...customerBody(`null3-${Date.now()}@example.com`), address: null });
    expect([withNullAddress.status, withNullAddress.body.address]).toEqual([201, null]);
  });

  test('JSON null (or an empty form value) in a required param is parameter_missing naming it, across endpoints', async () => {
    const key = { 'Idempotency-Key': `nulls-${Date.now()}` };
    // A known subscription: an unknown one is 404 before its body is validated.
    const usageOffer = await seedUsageOffer(stack.mongo.db, store.store._id);
    const { subscription } = await seedUsageSubscription({ db: stack.mongo.db, taskQueue: 'unused' }, { store: store.store, offer: usageOffer });
    const sub = subscription._id;
    const cases: [string, unknown, string][] = [
      [`/v1/subscriptions/${sub}/charges`, { amount: null }, 'amount'],
      [`/v1/subscriptions/${sub}/charges`, { amount: 500, lines: [{ description: 'Seat', unit_amount: null }] }, 'lines[0].unit_amount'],
      ['/v1/billing_portal/sessions', { customer: null }, 'customer'],
      [`/v1/subscriptions/${sub}/change_offer`, { offer: null }, 'offer'],
      ['/v1/billing/meter_events', { event_name: null, payload: { customer_id: 'cust_x', value: 1 } }, 'event_name'],
      [`/v1/subscriptions/${sub}/usage_items`, { meter: null, unit_amount: 1 }, 'meter'],
    ];
    for (const [path, body, param] of cases) {
      expectError(
        await post(path, body, { ...key, 'Idempotency-Key': `${key['Idempotency-Key']}-${path}-${param}` }),
        400,
        'parameter_missing',
        param,
        param,
      );
    }
    const form = await call(stack.api, store.key, 'POST', `/v1/subscriptions/${sub}/charges`, {
      form: 'amount=',
      headers: { 'Idempotency-Key': `${key['Idempotency-Key']}-form` },
    });
    expectError(form, 400, 'parameter_missing', 'amount', 'amount');
  });

  test('JSON null in an optional param counts as not sent: defaults apply, and a param required only in some cases is missing', async () => {
    const session = await createSession(stack.api, store, {
      offer: null,
      line_items: [{ price: catalog.oneOff._id, quantity: null }],
      redirect_delay: null,
      locale: null,
      customer_email: null,
      allow_promotion_codes: null,
    });
    expect(session.status).toBe(201);
    expect({
      offer: session.body.offer.id,
      pack: session.body.pack,
      redirect_delay: session.body.redirect_delay,
      locale: session.body.locale,
      customer_email: session.body.customer_email,
    }).toEqual({
      offer: catalog.oneOff._id,
      pack: null,
      redirect_delay: 5,
      locale: null,
      customer_email: null,
    });
    expectError(await createSession(stack.api, store, { offer: null }), 400, 'parameter_missing', 'offer', 'offer');

    const usageOffer = await seedUsageOffer(stack.mongo.db, store.store._id);
    const { subscription } = await seedUsageSubscription({ db: stack.mongo.db, taskQueue: 'unused' }, { store: store.store, offer: usageOffer });
    const meter = (await post('/v1/billing/meters', { display_name: 'Images', event_name: `edges.${Date.now()}` })).body;
    const items = `/v1/subscriptions/${subscription._id}/usage_items`;
    expectError(await post(items, { meter: meter.id, unit_amount: null }), 400, 'parameter_missing', 'unit_amount', 'unit_amount');
    const item = await post(items, { meter: meter.id, unit_amount: 3, included_units: null, rounding: null });
    expect([item.status, item.body.unit_amount, item.body.included_units, item.body.rounding]).toEqual([201, 3, 0, 'up']);

    const customer = (await post('/v1/customers', customerBody(uniqueEmail('nulls')))).body;
    const updated = await post(`/v1/customers/${customer.id}`, { name: null, phone: null, locale: 'pt-BR' });
    expect([updated.status, updated.body.name, updated.body.phone, updated.body.locale]).toEqual([200, customer.name, customer.phone, 'pt-BR']);
  });
});
