// What this tests: POST /v1/customers with a known email, over real HTTP with FerretDB, Temporal and a
// billing worker: 200 with that customer unchanged whatever else is sent (even fields that would not
// validate, even when its email claim is gone), while the email itself is still checked and a read-only
// key is refused before any lookup.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, createTestStore, startCheckoutStack, type CheckoutStack } from '../../support/checkout-fixtures';
import type { TestStore } from '../../support/api';

let stack: CheckoutStack;
let store: TestStore;

beforeAll(async () => {
  stack = await startCheckoutStack('customer-contract');
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
let seq = 0;
const uniqueEmail = (tag: string) => `${tag}-${++seq}-${Date.now()}@example.com`;
const customerBody = (email: string) => ({ email, name: 'Ana Souza', phone: '+5511987654321', document: { type: 'cpf', number: '52998224725' } });

describe('POST /v1/customers with a known email', () => {
  test('answers 200 with the existing customer, no field changed, even when the other fields would not validate', async () => {
    const email = `known-${Date.now()}@example.com`;
    const first = await post('/v1/customers', customerBody(email));
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
    expectError(
      await post('/v1/customers', {
        email: `new-${Date.now()}@example.com`,
        name: 'X',
        phone: '+5511987654321',
        document: { type: 'cpf', number: '52998224725' },
      }),
      400,
      'parameter_invalid',
      'name',
    );
  });

  test('a customer whose email claim is gone is still found by its email: 200 with it unchanged, whatever else is sent', async () => {
    const email = uniqueEmail('claimless');
    const first = await post('/v1/customers', customerBody(email));
    expect(first.status).toBe(201);
    await stack.mongo.db.collection('customer_emails').deleteOne({ _id: `${store.store._id}|${email}` } as never);
    for (const body of [
      { email: ` ${email.toUpperCase()} `, name: 'X' },
      // Schema-valid, refused only by the rules (the phone; the CPF's check digits where the store verifies them).
      { email, name: 'Other Name', phone: '12', document: { type: 'cpf', number: '11111111112' } },
      { ...customerBody(email), name: 'Other Name' },
    ]) {
      const again = await post('/v1/customers', body);
      expect([again.status, again.body]).toEqual([200, first.body]);
    }
    expect((await get(`/v1/customers/${first.body.id}`)).body).toEqual(first.body);
    const events = await stack.mongo.db
      .collection('events')
      .find({ store_id: store.store._id, type: { $in: ['customer.created', 'customer.updated'] } })
      .toArray();
    expect(events.filter((e) => JSON.parse(e.data_json).object.id === first.body.id).map((e) => e.type)).toEqual(['customer.created']);
  });

  test('the email itself is still checked, and a read-only key is refused before any lookup', async () => {
    const email = uniqueEmail('known');
    expect((await post('/v1/customers', customerBody(email))).status).toBe(201);
    expectError(await post('/v1/customers', customerBody('not-an-email')), 400, 'parameter_invalid', 'email', 'email');
    expectError(await post('/v1/customers', { ...customerBody(email), email: null }), 400, 'parameter_missing', 'email', 'email');
    const reader = await store.makeKey(['read']);
    const refused = await call(stack.api, reader.key, 'POST', '/v1/customers', { json: { email } });
    expect({ status: refused.status, type: refused.body.error.type, code: refused.body.error.code }).toEqual({
      status: 403,
      type: 'permission_error',
      code: 'insufficient_scope',
    });
  });
});
