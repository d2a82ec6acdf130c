// What this tests: the checkout session contract where a merchant would hit a deviation, each quoted from
// the spec, over real HTTP with FerretDB, Temporal and a billing worker: line_items[0][price] errors name
// `offer`; any mode but the offer's is mode_mismatch; expires_at is exactly 30 minutes to 24 hours from the
// server's now; customer_email and customer_name stay as passed (or the customer's) after payment; PIX is
// refused outside BRL and with a free trial, by the page and by the session workflow itself; a free-trial
// sign-up completes paid with an order of amount 0 (order.paid for a 2026-09-01 endpoint) and reaches a
// 2026-09-01 endpoint as one subscription.created and a 2026-11-01 endpoint as its own events.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { checkoutSessionClient } from '../../../services/checkout/client';
import type { PayInput } from '../../../workflows/checkout-session/messages';
import {
  buyerForm,
  call,
  createSession,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';
import type { TestStore } from '../../support/api';
import { waitFor } from '../../support/env';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;

beforeAll(async () => {
  stack = await startCheckoutStack('checkout-contract');
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
const get = (path: string) => call(stack.api, store.key, 'GET', path);
const nowSeconds = () => Math.floor(Date.now() / 1000);
let seq = 0;
const uniqueEmail = (tag: string) => `${tag}-${++seq}-${Date.now()}@example.com`;
const customerBody = (email: string) => ({ email, name: 'Ana Souza', phone: '+5511987654321', document: { type: 'cpf', number: '52998224725' } });

async function payOnPage(sessionId: string, form: Record<string, string>) {
  const res = await fetch(`${stack.api.url}/c/${sessionId}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, text: await res.text() };
}

async function completed(id: string, storeId = store.store._id) {
  await waitFor(async () => (await findCheckoutSession(stack.mongo.db, storeId, id))?.status === 'complete' || null, {
    description: `${id} complete`,
  });
}

describe('checkout sessions', () => {
  test('an unknown offer through line_items[0][price] is 404 resource_missing with param offer', async () => {
    expectError(await createSession(stack.api, store, { line_items: [{ price: 'ofr_nope', quantity: 1 }] }), 404, 'resource_missing', 'offer');
  });

  test('customer_email stays as passed after payment: null when not passed, the passed one when passed', async () => {
    const plain = (await createSession(stack.api, store, { offer: catalog.oneOff._id })).body;
    const passed = (await createSession(stack.api, store, { offer: catalog.oneOff._id, customer_email: 'given@example.com' })).body;
    expect((await payOnPage(plain.id, { ...buyerForm(), method: 'card', card_number: '4242424242424242' })).status).toBe(303);
    expect(
      (await payOnPage(passed.id, { ...buyerForm({ email: 'given@example.com' }), method: 'card', card_number: '4242424242424242' })).status,
    ).toBe(303);
    for (const [id, email] of [
      [plain.id, null],
      [passed.id, 'given@example.com'],
    ] as const) {
      await waitFor(async () => (await findCheckoutSession(stack.mongo.db, store.store._id, id))?.status === 'complete' || null, {
        description: `${id} complete`,
      });
      const read = await call(stack.api, store.key, 'GET', `/v1/checkout/sessions/${id}`);
      expect({ status: read.body.status, customer_email: read.body.customer_email, hasCustomer: read.body.customer !== null }).toEqual({
        status: 'complete',
        customer_email: email,
        hasCustomer: true,
      });
    }
  });

  test('PIX is refused by the server outside BRL and with a free trial (a hand-made form), and the session stays open', async () => {
    const usd = (await createSession(stack.api, store, { offer: catalog.oneOff._id, currency: 'usd' })).body;
    const trial = (await createSession(stack.api, store, { offer: catalog.trial._id })).body;
    for (const id of [usd.id, trial.id]) {
      const res = await payOnPage(id, { ...buyerForm(), method: 'pix' });
      expect(res.status).toBe(400);
      expect(res.text).toContain('PIX is only available for payments in BRL without a free trial.');
      const doc = await findCheckoutSession(stack.mongo.db, store.store._id, id);
      expect({ status: doc?.status, order: doc?.order }).toEqual({ status: 'open', order: null });
    }
    // BRL without a trial: the PIX is generated.
    const brl = (await createSession(stack.api, store, { offer: catalog.oneOff._id })).body;
    expect((await payOnPage(brl.id, { ...buyerForm(), method: 'pix' })).status).toBe(303);
  });
});

describe('checkout session mode', () => {
  test("any mode but the offer's (another mode, unknown text, another case, a long text) is 400 mode_mismatch with param mode", async () => {
    for (const [offer, mode] of [
      [catalog.oneOff._id, 'setup'],
      [catalog.oneOff._id, 'subscription'],
      [catalog.oneOff._id, 'PAYMENT'],
      [catalog.oneOff._id, 'x'.repeat(300)],
      [catalog.monthly._id, 'payment'],
    ]) {
      expectError(await createSession(stack.api, store, { offer, mode }), 400, 'mode_mismatch', 'mode', 'mode must be');
    }
  });

  test("the offer's own mode, no mode, or a null mode creates the session with the derived mode", async () => {
    const cases: [string, unknown, string][] = [
      [catalog.oneOff._id, 'payment', 'payment'],
      [catalog.monthly._id, 'subscription', 'subscription'],
      [catalog.oneOff._id, undefined, 'payment'],
      [catalog.monthly._id, null, 'subscription'],
    ];
    for (const [offer, mode, derived] of cases) {
      const res = await createSession(stack.api, store, { offer, mode });
      expect([res.status, res.body.mode]).toEqual([201, derived]);
    }
    const form = await call(stack.api, store.key, 'POST', '/v1/checkout/sessions', { form: `offer=${catalog.oneOff._id}&mode=` });
    expect([form.status, form.body.mode]).toEqual([201, 'payment']);
  });
});

describe('checkout session expires_at', () => {
  /** Sends with the server's clock on the same second as ours (retried when a second boundary falls between). */
  async function atServerSecond(offset: number | null) {
    return waitFor(
      async () => {
        const before = nowSeconds();
        const res = await createSession(stack.api, store, { offer: catalog.oneOff._id, expires_at: offset === null ? null : before + offset });
        return nowSeconds() === before ? { res, now: before } : null;
      },
      { description: 'a request within one second', intervalMs: 10 },
    );
  }

  test('exactly 30 minutes and exactly 24 hours from now are accepted as sent; null is the 24-hour default', async () => {
    for (const offset of [30 * 60, 24 * 60 * 60]) {
      const { res, now } = await atServerSecond(offset);
      expect([res.status, res.body.expires_at]).toEqual([201, now + offset]);
    }
    const { res, now } = await atServerSecond(null);
    expect([res.status, res.body.expires_at]).toEqual([201, now + 24 * 60 * 60]);
  });

  test('one second before 30 minutes or after 24 hours, or a fraction, is 400 parameter_invalid with param expires_at', async () => {
    for (const offset of [30 * 60 - 1, 24 * 60 * 60 + 1]) {
      const { res } = await atServerSecond(offset);
      expectError(res, 400, 'parameter_invalid', 'expires_at', 'between 30 minutes and 24 hours');
    }
    expectError(
      await createSession(stack.api, store, { offer: catalog.oneOff._id, expires_at: nowSeconds() + 3600.5 }),
      400,
      'parameter_invalid',
      'expires_at',
      'integer',
    );
  });
});

describe('checkout session customer_email and customer_name', () => {
  test('stay as passed (the email lowercased) after payment, whatever the buyer typed; the buyer becomes the customer', async () => {
    const created = await createSession(stack.api, store, {
      offer: catalog.oneOff._id,
      customer_email: 'Given.Person@Example.COM',
      customer_name: 'Jo',
    });
    expect([created.status, created.body.customer_email, created.body.customer_name, created.body.customer]).toEqual([
      201,
      'given.person@example.com',
      'Jo',
      null,
    ]);
    const paid = await payOnPage(created.body.id, {
      ...buyerForm({ email: uniqueEmail('typed'), name: 'Maria da Silva' }),
      method: 'card',
      card_number: '4242424242424242',
    });
    expect(paid.status).toBe(303);
    await completed(created.body.id);
    const read = (await get(`/v1/checkout/sessions/${created.body.id}`)).body;
    expect({ status: read.status, customer_email: read.customer_email, customer_name: read.customer_name }).toEqual({
      status: 'complete',
      customer_email: 'given.person@example.com',
      customer_name: 'Jo',
    });
    const buyer = (await get(`/v1/customers/${read.customer}`)).body;
    expect({ email: buyer.email, name: buyer.name }).toEqual({ email: 'given.person@example.com', name: 'Maria da Silva' });
  });

  test("with customer: the customer's email and name, before and after payment", async () => {
    const customer = (await post('/v1/customers', { ...customerBody(uniqueEmail('cust')), name: 'Clara Nunes' })).body;
    const created = await createSession(stack.api, store, { offer: catalog.oneOff._id, customer: customer.id });
    const expected = { customer: customer.id, customer_email: customer.email, customer_name: 'Clara Nunes' };
    expect({ customer: created.body.customer, customer_email: created.body.customer_email, customer_name: created.body.customer_name }).toEqual(
      expected,
    );
    expect((await payOnPage(created.body.id, { ...buyerForm(), method: 'card', card_number: '4242424242424242' })).status).toBe(303);
    await completed(created.body.id);
    const read = (await get(`/v1/checkout/sessions/${created.body.id}`)).body;
    expect({ customer: read.customer, customer_email: read.customer_email, customer_name: read.customer_name }).toEqual(expected);
  });
});

describe('PIX on the server', () => {
  const pixRequest = (currency: string, trial: boolean): PayInput => ({
    method: 'pix',
    cardToken: null,
    amounts: { currency, quantity: 1, unit_amount: 3900, amount_subtotal: 3900, amount_discount: 0, amount_total: 3900 },
    installments: null,
    description: 'hand-made',
    customerId: 'cust_handmade',
    customerEmail: 'handmade@example.com',
    providerCustomerId: null,
    newBuyer: null,
    trial,
    saveCard: trial,
  });

  test("the session's workflow refuses a PIX attempt outside BRL or with a trial (method_unavailable), and the session stays open", async () => {
    const usd = (await createSession(stack.api, store, { offer: catalog.oneOff._id, currency: 'usd' })).body;
    const trial = (await createSession(stack.api, store, { offer: catalog.trial._id })).body;
    const sessions = checkoutSessionClient(stack.temporal.client, stack.taskQueue);
    for (const [id, request] of [
      [usd.id, pixRequest('usd', false)],
      [trial.id, pixRequest('brl', true)],
    ] as const) {
      const reply = await sessions.pay(id, request, 10_000);
      expect(reply).toEqual({
        kind: 'refused',
        type: 'method_unavailable',
        message: 'PIX is only available for payments in BRL without a free trial.',
      });
      const doc = await findCheckoutSession(stack.mongo.db, store.store._id, id);
      expect({ status: doc?.status, order: doc?.order, payment: doc?.payment }).toEqual({ status: 'open', order: null, payment: null });
    }
    // The page still pays the same sessions by card.
    expect((await payOnPage(usd.id, { ...buyerForm(), method: 'card', card_number: '4242424242424242' })).status).toBe(303);
  });
});

describe('a free-trial sign-up from checkout', () => {
  test('completes paid with an order of amount 0, which a 2026-09-01 endpoint hears as order.paid beside subscription.created', async () => {
    const trialStore = await createTestStore(stack.mongo.db);
    const trialCatalog = await seedCheckoutCatalog(stack.mongo.db, trialStore.store._id);
    const endpoint = await call(stack.api, trialStore.key, 'POST', '/v1/webhook_endpoints', {
      json: { url: 'https://hooks.example.com/legacy', api_version: '2026-09-01' },
    });
    expect(endpoint.status).toBe(201);
    const session = (await createSession(stack.api, trialStore, { offer: trialCatalog.trial._id })).body;
    const res = await fetch(`${stack.api.url}/c/${session.id}/pay`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...buyerForm(), method: 'card', card_number: '4242424242424242' }).toString(),
    });
    expect(res.status).toBe(303);
    const legacy = await waitFor(
      async () => {
        const events = await stack.mongo.db.collection('events').find({ store_id: trialStore.store._id, api_version: '2026-09-01' }).toArray();
        return events.some((e) => e.type === 'subscription.created') ? events : null;
      },
      { description: 'the 2026-09-01 subscription.created' },
    );
    const created = legacy.find((e) => e.type === 'subscription.created')!;
    expect(created.targets).toEqual([endpoint.body.id]);
    expect(JSON.parse(created.data_json).object).toMatchObject({ status: 'trialing' });
    // The session as the spec's table says of complete/paid: its order filled, here the sign-up's, of amount 0.
    const done = (await call(stack.api, trialStore.key, 'GET', `/v1/checkout/sessions/${session.id}`)).body;
    expect(done).toMatchObject({
      status: 'complete',
      payment_status: 'paid',
      order: expect.stringMatching(/^ord_/),
      subscription: expect.any(String),
    });
    const order = await waitFor(
      async () => {
        const found = (await call(stack.api, trialStore.key, 'GET', `/v1/orders/${done.order}`)).body;
        return found.subscription ? found : null;
      },
      { description: 'the sign-up order linked to its subscription' },
    );
    expect(order).toMatchObject({
      status: 'paid',
      paid: true,
      amount_subtotal: 0,
      amount_total: 0,
      billing_reason: 'purchase',
      order_type: 'checkout',
      checkout_session: session.id,
      subscription: done.subscription,
      items: [{ kind: 'product', description: trialCatalog.trial.name, quantity: 1, unit_amount: 0, amount: 0 }],
    });
    const orderPaid = await waitFor(
      async () =>
        (await stack.mongo.db.collection('events').findOne({ store_id: trialStore.store._id, api_version: '2026-09-01', type: 'order.paid' })) ??
        null,
      { description: 'the 2026-09-01 order.paid' },
    );
    expect(orderPaid.targets).toEqual([endpoint.body.id]);
    expect(JSON.parse(orderPaid.data_json).object).toMatchObject({ id: done.order, amount_total: 0, status: 'paid' });
  });

  test('reaches a 2026-09-01 endpoint as one subscription.created (trialing) and a 2026-11-01 endpoint as its own events', async () => {
    const trialStore = await createTestStore(stack.mongo.db);
    const trialCatalog = await seedCheckoutCatalog(stack.mongo.db, trialStore.store._id);
    const endpoint = (api_version: string) =>
      call(stack.api, trialStore.key, 'POST', '/v1/webhook_endpoints', { json: { url: `https://hooks.example.com/${api_version}`, api_version } });
    const [legacy, current] = [(await endpoint('2026-09-01')).body, (await endpoint('2026-11-01')).body];
    const session = (await createSession(stack.api, trialStore, { offer: trialCatalog.trial._id })).body;
    expect((await payOnPage(session.id, { ...buyerForm(), method: 'card', card_number: '4242424242424242' })).status).toBe(303);
    const sub = await waitFor(async () => (await findCheckoutSession(stack.mongo.db, trialStore.store._id, session.id))?.subscription ?? null, {
      description: 'the trial subscription',
    });
    const events = await waitFor(
      async () => {
        const all = await stack.mongo.db.collection('events').find({ store_id: trialStore.store._id }).toArray();
        const types = all.map((e) => `${e.api_version} ${e.type}`);
        return types.includes('2026-09-01 subscription.created') && types.includes('2026-11-01 checkout.session.completed') ? all : null;
      },
      { description: 'the sign-up events' },
    );
    const legacyEvents = events.filter((e) => e.api_version === '2026-09-01');
    expect(legacyEvents.map((e) => e.type).sort()).toEqual(expect.arrayContaining(['customer.created', 'subscription.created']));
    expect(legacyEvents.filter((e) => e.type === 'subscription.created')).toHaveLength(1);
    const created = legacyEvents.find((e) => e.type === 'subscription.created')!;
    expect({
      targets: created.targets,
      object: JSON.parse(created.data_json).object.id,
      status: JSON.parse(created.data_json).object.status,
    }).toEqual({ targets: [legacy.id], object: sub, status: 'trialing' });
    const currentTypes = events.filter((e) => e.api_version === '2026-11-01').map((e) => e.type);
    expect(currentTypes).toEqual(expect.arrayContaining(['customer.created', 'customer.subscription.created', 'checkout.session.completed']));
    expect(events.find((e) => e.type === 'customer.subscription.created')!.targets).toEqual([current.id]);
  });
});
