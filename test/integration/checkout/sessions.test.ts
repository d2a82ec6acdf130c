// What this tests: POST/GET /v1/checkout/sessions and POST expire over real HTTP with FerretDB,
// Temporal and a billing worker: every create parameter, the object's fields, the list filters,
// the session workflow starting with its search attributes, and every error code with its param.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { collections } from '../../../store/collections';
import { checkoutSessionsCollection } from '../../../store/checkout-sessions';
import { checkoutSessionWorkflowId } from '../../../workflows/checkout-session/messages';
import { startTestApi, type TestApi, type TestStore } from '../../support/api';
import {
  call,
  createSession,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';
import { waitFor } from '../../support/env';
import { insertCustomer, newCustomerDoc } from '../../../store/customers';

let stack: CheckoutStack;
let api: TestApi;
let store: TestStore;
let catalog: CheckoutCatalog;
let customerId: string;

const now = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  stack = await startCheckoutStack('checkout-sessions');
  api = stack.api;
  store = await createTestStore(stack.mongo.db);
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
  const customer = newCustomerDoc(store.store._id, { email: 'ana@example.com', name: 'Ana Souza' }, {});
  await insertCustomer(stack.mongo.db, customer);
  customerId = customer._id;
});

afterAll(async () => {
  await stack?.close();
});

function expectError(res: { status: number; body: any }, status: number, type: string, code: string, param: string | null) {
  expect({ status: res.status, type: res.body?.error?.type, code: res.body?.error?.code, param: res.body?.error?.param }).toEqual({
    status,
    type,
    code,
    param,
  });
}

describe('create', () => {
  test('an ofr_ id with defaults gives an open session with every field and a running workflow with search attributes', async () => {
    const before = now();
    const res = await createSession(api, store, { offer: catalog.oneOff._id });
    expect(res.status).toBe(201);
    const s = res.body;
    expect(s).toMatchObject({
      object: 'checkout.session',
      status: 'open',
      payment_status: 'unpaid',
      url: `${api.url}/c/${s.id}`,
      mode: 'payment',
      offer: { id: catalog.oneOff._id, name: catalog.oneOff.name },
      pack: null,
      currency: null,
      amount_total: 19700,
      customer: null,
      customer_email: null,
      customer_name: null,
      client_reference_id: null,
      metadata: {},
      subscription_data: { metadata: {} },
      discounts: [],
      success_url: null,
      cancel_url: null,
      redirect_delay: 5,
      locale: null,
      order: null,
      subscription: null,
      completed_at: null,
      livemode: true,
    });
    expect(s.id).toMatch(/^cs_/);
    expect(s.created).toBeGreaterThanOrEqual(before);
    expect(s.expires_at - s.created).toBe(24 * 60 * 60);

    const description = await stack.temporal.client.workflow.getHandle(checkoutSessionWorkflowId(s.id)).describe();
    expect(description.status.name).toBe('RUNNING');
    expect(description.searchAttributes.StoreId).toEqual([store.store._id]);
  });

  test('a checkout slug with currency usd fixes the currency and prices the session in it', async () => {
    const res = await createSession(api, store, { offer: catalog.oneOff.slug, currency: 'USD' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ currency: 'usd', amount_total: 3900, offer: { id: catalog.oneOff._id } });
  });

  test('a pack of the offer is kept and amount_total is null', async () => {
    const res = await createSession(api, store, { offer: catalog.oneOff._id, pack: 5 });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ pack: 5, amount_total: null });
  });

  test('line_items[0] is an alias of offer and pack in form encoding; offer and pack take precedence', async () => {
    const alias = await call(api, store.key, 'POST', '/v1/checkout/sessions', {
      form: `line_items[0][price]=${catalog.oneOff.slug}&line_items[0][quantity]=10`,
    });
    expect(alias.status).toBe(201);
    expect(alias.body).toMatchObject({ offer: { id: catalog.oneOff._id }, pack: 10, amount_total: null });

    const both = await createSession(api, store, {
      offer: catalog.monthly._id,
      pack: undefined,
      line_items: [{ price: catalog.oneOff._id, quantity: 1 }],
    });
    expect(both.status).toBe(201);
    expect(both.body.offer.id).toBe(catalog.monthly._id);
    expect(both.body.pack).toBeNull();
  });

  test('offer and pack sent with line_items for another offer: the item is ignored as a whole; its quantity is a pack only of its own offer', async () => {
    const withPack = await createSession(api, store, {
      offer: catalog.oneOff._id,
      pack: 5,
      line_items: [{ price: catalog.monthly._id, quantity: 10 }],
    });
    expect(withPack.status).toBe(201);
    expect(withPack.body).toMatchObject({ offer: { id: catalog.oneOff._id }, pack: 5 });
    // Another offer's quantity is not checked against this offer's packs (the monthly offer has none).
    const otherItem = await createSession(api, store, { offer: catalog.monthly._id, line_items: [{ price: catalog.oneOff._id, quantity: 10 }] });
    expect(otherItem.status).toBe(201);
    expect(otherItem.body).toMatchObject({ offer: { id: catalog.monthly._id }, pack: null });
    // The same offer named both ways (slug and id): the item's quantity is its pack when pack is absent.
    const sameOffer = await createSession(api, store, { offer: catalog.oneOff.slug, line_items: [{ price: catalog.oneOff._id, quantity: 10 }] });
    expect(sameOffer.status).toBe(201);
    expect(sameOffer.body).toMatchObject({ offer: { id: catalog.oneOff._id }, pack: 10 });
  });

  test('every optional parameter is stored and returned, form-encoded, with the placeholder kept', async () => {
    const expiresAt = now() + 3600;
    const success = 'http://localhost:3000/thanks?session={CHECKOUT_SESSION_ID}';
    const form = new URLSearchParams({
      offer: catalog.monthly._id,
      mode: 'subscription',
      customer_email: 'Buyer@Example.COM',
      customer_name: 'Jo',
      client_reference_id: 'user-42',
      'metadata[plan.tier]': 'gold',
      'metadata[count]': '3',
      'subscription_data[metadata][seat]': 'A1',
      'discounts[0][coupon]': catalog.coupon.code.toUpperCase(),
      success_url: success,
      cancel_url: 'https://shop.example.com/cart',
      redirect_delay: '0',
      expires_at: String(expiresAt),
      locale: 'pt',
      allow_promotion_codes: 'true',
    });
    const res = await call(api, store.key, 'POST', '/v1/checkout/sessions', { form: form.toString() });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      mode: 'subscription',
      amount_total: 4990,
      customer_email: 'buyer@example.com',
      customer_name: 'Jo',
      client_reference_id: 'user-42',
      metadata: { 'plan.tier': 'gold', count: '3' },
      subscription_data: { metadata: { seat: 'A1' } },
      discounts: [{ coupon: catalog.coupon.code }],
      success_url: success,
      cancel_url: 'https://shop.example.com/cart',
      redirect_delay: 0,
      expires_at: expiresAt,
      locale: 'pt',
    });
  });

  test('a customer fills customer_email and customer_name with its own values', async () => {
    const res = await createSession(api, store, { offer: catalog.oneOff._id, customer: customerId, customer_email: 'other@example.com' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ customer: customerId, customer_email: 'ana@example.com', customer_name: 'Ana Souza' });
    const description = await stack.temporal.client.workflow.getHandle(checkoutSessionWorkflowId(res.body.id)).describe();
    expect(description.searchAttributes.CustomerId).toEqual([customerId]);
  });

  test('the same Idempotency-Key returns the same session without creating another', async () => {
    const key = `cs-${Math.random()}`;
    const first = await createSession(api, store, { offer: catalog.oneOff._id }, { 'Idempotency-Key': key });
    const second = await createSession(api, store, { offer: catalog.oneOff._id }, { 'Idempotency-Key': key });
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.id).toBe(first.body.id);
  });
});

describe('create errors', () => {
  test('no offer: 400 parameter_missing offer', async () => {
    expectError(await createSession(api, store, { pack: 1 }), 400, 'invalid_request_error', 'parameter_missing', 'offer');
  });

  test('unknown offer, and an offer of another store: 404 resource_missing offer', async () => {
    expectError(await createSession(api, store, { offer: 'ofr_nope' }), 404, 'invalid_request_error', 'resource_missing', 'offer');
    const other = await createTestStore(stack.mongo.db);
    const otherCatalog = await seedCheckoutCatalog(stack.mongo.db, other.store._id);
    expectError(await createSession(api, store, { offer: otherCatalog.oneOff._id }), 404, 'invalid_request_error', 'resource_missing', 'offer');
  });

  test('an archived offer: 400 offer_unavailable', async () => {
    expectError(await createSession(api, store, { offer: catalog.archived._id }), 400, 'invalid_request_error', 'offer_unavailable', 'offer');
  });

  test('an offer without a price: 400 offer_unavailable', async () => {
    const id = `ofr_noprice${Math.random().toString(36).slice(2, 10)}`;
    await collections(stack.mongo.db).offers.insertOne({ ...catalog.archived, _id: id, slug: null, active: true, prices: [] });
    expectError(await createSession(api, store, { offer: id }), 400, 'invalid_request_error', 'offer_unavailable', 'offer');
  });

  test('a pack the offer lacks: 400 pack_unavailable; out of 1..999: 400 parameter_invalid', async () => {
    expectError(await createSession(api, store, { offer: catalog.oneOff._id, pack: 3 }), 400, 'invalid_request_error', 'pack_unavailable', 'pack');
    expectError(
      await createSession(api, store, { offer: catalog.oneOff._id, pack: 1000 }),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'pack',
    );
    expectError(
      await createSession(api, store, { line_items: [{ price: catalog.oneOff._id, quantity: 7 }] }),
      400,
      'invalid_request_error',
      'pack_unavailable',
      'line_items[0].quantity',
    );
  });

  test('a currency without a price: 400 currency_unsupported listing the available ones', async () => {
    const res = await createSession(api, store, { offer: catalog.oneOff._id, currency: 'eur' });
    expectError(res, 400, 'invalid_request_error', 'currency_unsupported', 'currency');
    expect(res.body.error.message).toContain('brl, usd');
  });

  test('a mode that does not fit the offer, or is neither payment nor subscription: 400 mode_mismatch', async () => {
    expectError(
      await createSession(api, store, { offer: catalog.oneOff._id, mode: 'subscription' }),
      400,
      'invalid_request_error',
      'mode_mismatch',
      'mode',
    );
    expectError(
      await createSession(api, store, { offer: catalog.monthly._id, mode: 'payment' }),
      400,
      'invalid_request_error',
      'mode_mismatch',
      'mode',
    );
    expectError(await createSession(api, store, { offer: catalog.oneOff._id, mode: 'setup' }), 400, 'invalid_request_error', 'mode_mismatch', 'mode');
    expectError(
      await createSession(api, store, { offer: catalog.monthly._id, mode: 'anything' }),
      400,
      'invalid_request_error',
      'mode_mismatch',
      'mode',
    );
  });

  test('an unknown or inactive coupon: 400 coupon_invalid with param discounts[0].coupon', async () => {
    for (const code of ['NOPE', catalog.inactiveCoupon.code]) {
      expectError(
        await createSession(api, store, { offer: catalog.oneOff._id, discounts: [{ coupon: code }] }),
        400,
        'invalid_request_error',
        'coupon_invalid',
        'discounts[0].coupon',
      );
    }
  });

  test('an unknown customer: 404 resource_missing customer', async () => {
    expectError(
      await createSession(api, store, { offer: catalog.oneOff._id, customer: 'cust_nope' }),
      404,
      'invalid_request_error',
      'resource_missing',
      'customer',
    );
  });

  test('limits: customer_name 2..120, client_reference_id 200, redirect_delay 0..30, locale list, customer_email format', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ customer_name: 'J' }, 'customer_name'],
      [{ customer_name: 'x'.repeat(121) }, 'customer_name'],
      [{ client_reference_id: 'x'.repeat(201) }, 'client_reference_id'],
      [{ redirect_delay: 31 }, 'redirect_delay'],
      [{ redirect_delay: -1 }, 'redirect_delay'],
      [{ locale: 'pl' }, 'locale'],
      [{ customer_email: 'not-an-email' }, 'customer_email'],
      [{ metadata: { ['k'.repeat(41)]: 'v' } }, `metadata.${'k'.repeat(41)}`],
      [{ subscription_data: { metadata: { a: 'x'.repeat(501) } } }, 'subscription_data.metadata.a'],
      [{ unknown_param: 1 }, 'unknown_param'],
    ];
    for (const [extra, param] of cases) {
      expectError(await createSession(api, store, { offer: catalog.oneOff._id, ...extra }), 400, 'invalid_request_error', 'parameter_invalid', param);
    }
  });

  test('expires_at outside 30 minutes..24 hours: 400 parameter_invalid expires_at; the bounds themselves are accepted', async () => {
    expectError(
      await createSession(api, store, { offer: catalog.oneOff._id, expires_at: now() + 29 * 60 }),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'expires_at',
    );
    expectError(
      await createSession(api, store, { offer: catalog.oneOff._id, expires_at: now() + 24 * 3600 + 120 }),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'expires_at',
    );
    // The exact bounds are unit-tested (test/unit/checkout.test.ts): here the server's clock may tick past ours.
    expect((await createSession(api, store, { offer: catalog.oneOff._id, expires_at: now() + 30 * 60 + 5 })).status).toBe(201);
    expect((await createSession(api, store, { offer: catalog.oneOff._id, expires_at: now() + 24 * 3600 })).status).toBe(201);
  });

  test('success_url and cancel_url: https only (http://localhost in development), up to 2000 characters', async () => {
    expectError(
      await createSession(api, store, { offer: catalog.oneOff._id, success_url: 'http://shop.example.com/ok' }),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'success_url',
    );
    expectError(
      await createSession(api, store, { offer: catalog.oneOff._id, cancel_url: 'not a url' }),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'cancel_url',
    );
    expectError(
      await createSession(api, store, { offer: catalog.oneOff._id, success_url: `https://shop.example.com/${'a'.repeat(2000)}` }),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'success_url',
    );
    const production = await startTestApi({
      db: stack.mongo.db,
      temporal: stack.temporal.client,
      taskQueue: stack.taskQueue,
      config: { development: false },
    });
    try {
      expectError(
        await createSession(production, store, { offer: catalog.oneOff._id, success_url: 'http://localhost:3000/ok' }),
        400,
        'invalid_request_error',
        'parameter_invalid',
        'success_url',
      );
    } finally {
      await production.close();
    }
  });

  test('a store whose plan is overdue: 403 permission_error selling_blocked', async () => {
    const blocked = await createTestStore(stack.mongo.db);
    const blockedCatalog = await seedCheckoutCatalog(stack.mongo.db, blocked.store._id);
    await collections(stack.mongo.db).stores.updateOne({ _id: blocked.store._id }, { $set: { plan_overdue: true } });
    expectError(await createSession(api, blocked, { offer: blockedCatalog.oneOff._id }), 403, 'permission_error', 'selling_blocked', null);
  });

  test('a read-only key cannot create: 403 insufficient_scope', async () => {
    const { key } = await store.makeKey(['read']);
    const res = await call(api, key, 'POST', '/v1/checkout/sessions', { json: { offer: catalog.oneOff._id } });
    expectError(res, 403, 'permission_error', 'insufficient_scope', null);
  });
});

describe('read, list and expire', () => {
  test('GET one returns the session; another store gets 404 resource_missing id', async () => {
    const created = (await createSession(api, store, { offer: catalog.oneOff._id })).body;
    const got = await call(api, store.key, 'GET', `/v1/checkout/sessions/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created);
    const other = await createTestStore(stack.mongo.db);
    expectError(await call(api, other.key, 'GET', `/v1/checkout/sessions/${created.id}`), 404, 'invalid_request_error', 'resource_missing', 'id');
  });

  test('the list is newest first and filters by client_reference_id, customer, status and payment_status', async () => {
    const ref = `ref-${Math.random()}`;
    const a = (await createSession(api, store, { offer: catalog.oneOff._id, client_reference_id: ref })).body;
    const b = (await createSession(api, store, { offer: catalog.oneOff._id, client_reference_id: ref, customer: customerId })).body;
    const byRef = await call(api, store.key, 'GET', `/v1/checkout/sessions?client_reference_id=${encodeURIComponent(ref)}`);
    expect(byRef.body.data.map((s: any) => s.id)).toEqual([b.id, a.id]);
    expect(byRef.body).toMatchObject({ object: 'list', url: '/v1/checkout/sessions', has_more: false });

    const byCustomer = await call(
      api,
      store.key,
      'GET',
      `/v1/checkout/sessions?customer=${customerId}&client_reference_id=${encodeURIComponent(ref)}`,
    );
    expect(byCustomer.body.data.map((s: any) => s.id)).toEqual([b.id]);

    await call(api, store.key, 'POST', `/v1/checkout/sessions/${a.id}/expire`);
    const expired = await call(api, store.key, 'GET', `/v1/checkout/sessions?status=expired&client_reference_id=${encodeURIComponent(ref)}`);
    expect(expired.body.data.map((s: any) => s.id)).toEqual([a.id]);
    const unpaid = await call(
      api,
      store.key,
      'GET',
      `/v1/checkout/sessions?payment_status=unpaid&status=open&client_reference_id=${encodeURIComponent(ref)}`,
    );
    expect(unpaid.body.data.map((s: any) => s.id)).toEqual([b.id]);
    const page = await call(api, store.key, 'GET', `/v1/checkout/sessions?limit=1&client_reference_id=${encodeURIComponent(ref)}`);
    expect(page.body).toMatchObject({ has_more: true, data: [{ id: b.id }] });

    expectError(await call(api, store.key, 'GET', '/v1/checkout/sessions?status=done'), 400, 'invalid_request_error', 'parameter_invalid', 'status');
    expectError(
      await call(api, store.key, 'GET', '/v1/checkout/sessions?payment_status=free'),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'payment_status',
    );
  });

  test('POST expire closes an open session (url null), emits checkout.session.expired once, then refuses with checkout_session_not_open', async () => {
    const created = (await createSession(api, store, { offer: catalog.oneOff._id })).body;
    const expired = await call(api, store.key, 'POST', `/v1/checkout/sessions/${created.id}/expire`);
    expect(expired.status).toBe(200);
    expect(expired.body).toMatchObject({ id: created.id, status: 'expired', payment_status: 'unpaid', url: null });

    const again = await call(api, store.key, 'POST', `/v1/checkout/sessions/${created.id}/expire`);
    expectError(again, 400, 'invalid_request_error', 'checkout_session_not_open', 'id');

    const events = collections(stack.mongo.db).events;
    await waitFor(
      async () =>
        (await events.countDocuments({ store_id: store.store._id, type: 'checkout.session.expired', data_json: { $regex: created.id } })) === 1,
    );
    const result = await stack.temporal.client.workflow.getHandle(checkoutSessionWorkflowId(created.id)).result();
    expect(result.status).toBe('expired');
    expect(await events.countDocuments({ store_id: store.store._id, type: 'checkout.session.expired', data_json: { $regex: created.id } })).toBe(1);
  });

  test('an open session past its deadline reads as expired with url null (GET one, the list and its status filters) before the workflow marks it', async () => {
    const ref = `overdue-${Math.random()}`;
    const created = (await createSession(api, store, { offer: catalog.oneOff._id, client_reference_id: ref })).body;
    // The deadline passed (as if the worker's timer were late): only the stored deadline moves.
    await checkoutSessionsCollection(stack.mongo.db).updateOne({ _id: created.id }, { $set: { expires_at: now() - 1 } });
    const got = await call(api, store.key, 'GET', `/v1/checkout/sessions/${created.id}`);
    expect(got.body).toMatchObject({ id: created.id, status: 'expired', payment_status: 'unpaid', url: null });
    const q = `client_reference_id=${encodeURIComponent(ref)}`;
    const listed = await call(api, store.key, 'GET', `/v1/checkout/sessions?${q}`);
    expect(listed.body.data).toMatchObject([{ id: created.id, status: 'expired', url: null }]);
    expect((await call(api, store.key, 'GET', `/v1/checkout/sessions?status=expired&${q}`)).body.data.map((s: any) => s.id)).toEqual([created.id]);
    expect((await call(api, store.key, 'GET', `/v1/checkout/sessions?status=open&${q}`)).body.data).toEqual([]);
  });

  test('POST expire of an unknown session: 404 resource_missing', async () => {
    expectError(await call(api, store.key, 'POST', '/v1/checkout/sessions/cs_nope/expire'), 404, 'invalid_request_error', 'resource_missing', 'id');
  });
});
