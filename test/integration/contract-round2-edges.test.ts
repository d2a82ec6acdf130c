// What this tests: the edges of issue 13 items 3, 5, 12, 13 and 14 over real HTTP with FerretDB, Temporal
// and a billing worker (contract-round2.test.ts holds the main cases): any mode but the offer's is
// mode_mismatch; expires_at is exactly 30 minutes to 24 hours from the server's now; customer_email and
// customer_name stay as passed (or the customer's) after payment; the session workflow itself refuses
// PIX outside BRL or with a trial; a known email answers 200 even without its claim, the email itself
// still checked; a typo beside * is refused in either catalog and in a form; a null is never coerced
// (required: parameter_missing; optional: not sent); a trial sign-up reaches 2026-09-01 once.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { findCheckoutSession } from '../../store/checkout-sessions';
import { checkoutSessionClient } from '../../services/checkout-session-client';
import type { PayInput } from '../../workflows/checkout-session-messages';
import { buyerForm, call, createSession, createTestStore, seedCheckoutCatalog, startCheckoutStack, type CheckoutCatalog, type CheckoutStack } from '../support/checkout-fixtures';
import type { TestStore } from '../support/api';
import { waitFor } from '../support/env';
import { seedUsageOffer, seedUsageSubscription } from '../support/usage';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;

beforeAll(async () => {
  stack = await startCheckoutStack('contract-round2-edges');
  store = await createTestStore(stack.mongo.db);
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
});

afterAll(async () => {
  await stack?.close();
});

type Res = { status: number; body: any };

/** The spec's typed error: status, type, code and param, and a message naming what `mentions` says. */
function expectError(res: Res, status: number, code: string, param: string | null, mentions: string, type = 'invalid_request_error') {
  expect({ status: res.status, type: res.body?.error?.type, code: res.body?.error?.code, param: res.body?.error?.param }).toEqual({ status, type, code, param });
  expect(res.body.error.message).toContain(mentions);
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
  await waitFor(async () => (await findCheckoutSession(stack.mongo.db, storeId, id))?.status === 'complete' || null, { description: `${id} complete` });
}

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
    expectError(await createSession(stack.api, store, { offer: catalog.oneOff._id, expires_at: nowSeconds() + 3600.5 }), 400, 'parameter_invalid', 'expires_at', 'integer');
  });
});

describe('checkout session customer_email and customer_name', () => {
  test('stay as passed (the email lowercased) after payment, whatever the buyer typed; the buyer becomes the customer', async () => {
    const created = await createSession(stack.api, store, { offer: catalog.oneOff._id, customer_email: 'Given.Person@Example.COM', customer_name: 'Jo' });
    expect([created.status, created.body.customer_email, created.body.customer_name, created.body.customer]).toEqual([201, 'given.person@example.com', 'Jo', null]);
    const paid = await payOnPage(created.body.id, { ...buyerForm({ email: uniqueEmail('typed'), name: 'Maria da Silva' }), method: 'card', card_number: '4242424242424242' });
    expect(paid.status).toBe(303);
    await completed(created.body.id);
    const read = (await get(`/v1/checkout/sessions/${created.body.id}`)).body;
    expect({ status: read.status, customer_email: read.customer_email, customer_name: read.customer_name }).toEqual({ status: 'complete', customer_email: 'given.person@example.com', customer_name: 'Jo' });
    const buyer = (await get(`/v1/customers/${read.customer}`)).body;
    expect({ email: buyer.email, name: buyer.name }).toEqual({ email: 'given.person@example.com', name: 'Maria da Silva' });
  });

  test("with customer: the customer's email and name, before and after payment", async () => {
    const customer = (await post('/v1/customers', { ...customerBody(uniqueEmail('cust')), name: 'Clara Nunes' })).body;
    const created = await createSession(stack.api, store, { offer: catalog.oneOff._id, customer: customer.id });
    const expected = { customer: customer.id, customer_email: customer.email, customer_name: 'Clara Nunes' };
    expect({ customer: created.body.customer, customer_email: created.body.customer_email, customer_name: created.body.customer_name }).toEqual(expected);
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
      expect(reply).toEqual({ kind: 'refused', type: 'method_unavailable', message: 'PIX is only available for payments in BRL without a free trial.' });
      const doc = await findCheckoutSession(stack.mongo.db, store.store._id, id);
      expect({ status: doc?.status, order: doc?.order, payment: doc?.payment }).toEqual({ status: 'open', order: null, payment: null });
    }
    // The page still pays the same sessions by card.
    expect((await payOnPage(usd.id, { ...buyerForm(), method: 'card', card_number: '4242424242424242' })).status).toBe(303);
  });
});

describe('POST /v1/customers with a known email', () => {
  test('a customer whose email claim is gone is still found by its email: 200 with it unchanged, whatever else is sent', async () => {
    const email = uniqueEmail('claimless');
    const first = await post('/v1/customers', customerBody(email));
    expect(first.status).toBe(201);
    await stack.mongo.db.collection('customer_emails').deleteOne({ _id: `${store.store._id}|${email}` } as never);
    for (const body of [
      { email: ` ${email.toUpperCase()} `, name: 'X' },
      // Schema-valid, refused only by the rules (phone and CPF check digits).
      { email, name: 'Other Name', phone: '12', document: { type: 'cpf', number: '11111111112' } },
      { ...customerBody(email), name: 'Other Name' },
    ]) {
      const again = await post('/v1/customers', body);
      expect([again.status, again.body]).toEqual([200, first.body]);
    }
    expect((await get(`/v1/customers/${first.body.id}`)).body).toEqual(first.body);
    const events = await stack.mongo.db.collection('events').find({ store_id: store.store._id, type: { $in: ['customer.created', 'customer.updated'] } }).toArray();
    expect(events.filter((e) => JSON.parse(e.data_json).object.id === first.body.id).map((e) => e.type)).toEqual(['customer.created']);
  });

  test('the email itself is still checked, and a read-only key is refused before any lookup', async () => {
    const email = uniqueEmail('known');
    expect((await post('/v1/customers', customerBody(email))).status).toBe(201);
    expectError(await post('/v1/customers', customerBody('not-an-email')), 400, 'parameter_invalid', 'email', 'email');
    expectError(await post('/v1/customers', { ...customerBody(email), email: null }), 400, 'parameter_missing', 'email', 'email');
    const reader = await store.makeKey(['read']);
    const refused = await call(stack.api, reader.key, 'POST', '/v1/customers', { json: { email } });
    expect({ status: refused.status, type: refused.body.error.type, code: refused.body.error.code }).toEqual({ status: 403, type: 'permission_error', code: 'insufficient_scope' });
  });
});

describe('enabled_events with *', () => {
  test('a name of the other catalog or a typo beside * is invalid_event_type in either catalog and in a form body', async () => {
    const legacy = await post('/v1/webhook_endpoints', { url: 'https://hooks.example.com/legacy', api_version: '2026-09-01', enabled_events: ['*', 'customer.subscription.created'] });
    expectError(legacy, 400, 'invalid_event_type', 'enabled_events[1]', "'customer.subscription.created' is not an event type of catalog 2026-09-01");
    expectError(await post('/v1/webhook_endpoints', { url: 'https://hooks.example.com/p', enabled_events: ['*', 'custmer.*'] }), 400, 'invalid_event_type', 'enabled_events[1]', 'custmer.*');
    const form = await call(stack.api, store.key, 'POST', '/v1/webhook_endpoints', { form: 'url=https%3A%2F%2Fhooks.example.com%2Fform&enabled_events[0]=*&enabled_events[1]=custmer.created' });
    expectError(form, 400, 'invalid_event_type', 'enabled_events[1]', 'custmer.created');
  });

  test('a refused update changes nothing', async () => {
    const endpoint = (await post('/v1/webhook_endpoints', { url: 'https://hooks.example.com/keep', enabled_events: ['customer.created'] })).body;
    expectError(await post(`/v1/webhook_endpoints/${endpoint.id}`, { enabled_events: ['*', 'custmer.created'], description: 'changed' }), 400, 'invalid_event_type', 'enabled_events[1]', 'custmer.created');
    const read = (await get(`/v1/webhook_endpoints/${endpoint.id}`)).body;
    expect({ enabled_events: read.enabled_events, description: read.description }).toEqual({ enabled_events: ['customer.created'], description: null });
    await call(stack.api, store.key, 'DELETE', `/v1/webhook_endpoints/${endpoint.id}`);
  });
});

describe('null is never coerced', () => {
  test('JSON null (or an empty form value) in a required param is parameter_missing naming it, across endpoints', async () => {
    const key = { 'Idempotency-Key': `nulls-${Date.now()}` };
    const cases: [string, unknown, string][] = [
      ['/v1/subscriptions/sub_unknown/charges', { amount: null }, 'amount'],
      ['/v1/subscriptions/sub_unknown/charges', { amount: 500, lines: [{ description: 'Seat', unit_amount: null }] }, 'lines[0].unit_amount'],
      ['/v1/billing_portal/sessions', { customer: null }, 'customer'],
      ['/v1/subscriptions/sub_unknown/change_offer', { offer: null }, 'offer'],
      ['/v1/billing/meter_events', { event_name: null, payload: { customer_id: 'cust_x', value: 1 } }, 'event_name'],
      ['/v1/subscriptions/sub_unknown/usage_items', { meter: null, unit_amount: 1 }, 'meter'],
    ];
    for (const [path, body, param] of cases) {
      expectError(await post(path, body, { ...key, 'Idempotency-Key': `${key['Idempotency-Key']}-${path}-${param}` }), 400, 'parameter_missing', param, param);
    }
    const form = await call(stack.api, store.key, 'POST', '/v1/subscriptions/sub_unknown/charges', { form: 'amount=', headers: { 'Idempotency-Key': `${key['Idempotency-Key']}-form` } });
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
    expect({ offer: session.body.offer.id, pack: session.body.pack, redirect_delay: session.body.redirect_delay, locale: session.body.locale, customer_email: session.body.customer_email }).toEqual({
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

describe('a free-trial sign-up from checkout', () => {
  test('reaches a 2026-09-01 endpoint as one subscription.created (trialing) and a 2026-11-01 endpoint as its own events', async () => {
    const trialStore = await createTestStore(stack.mongo.db);
    const trialCatalog = await seedCheckoutCatalog(stack.mongo.db, trialStore.store._id);
    const endpoint = (api_version: string) => call(stack.api, trialStore.key, 'POST', '/v1/webhook_endpoints', { json: { url: `https://hooks.example.com/${api_version}`, api_version } });
    const [legacy, current] = [(await endpoint('2026-09-01')).body, (await endpoint('2026-11-01')).body];
    const session = (await createSession(stack.api, trialStore, { offer: trialCatalog.trial._id })).body;
    expect((await payOnPage(session.id, { ...buyerForm(), method: 'card', card_number: '4242424242424242' })).status).toBe(303);
    const sub = await waitFor(async () => (await findCheckoutSession(stack.mongo.db, trialStore.store._id, session.id))?.subscription ?? null, { description: 'the trial subscription' });
    const events = await waitFor(
      async () => {
        const all = await stack.mongo.db.collection('events').find({ store_id: trialStore.store._id }).toArray();
        const types = all.map((e) => `${e.api_version} ${e.type}`);
        return types.includes('2026-09-01 subscription.created') && types.includes('2026-11-01 checkout.session.completed') ? all : null;
      },
      { description: 'the sign-up events' },
    );
    const legacyEvents = events.filter((e) => e.api_version === '2026-09-01');
    expect(legacyEvents.map((e) => e.type).sort()).toEqual(['customer.created', 'subscription.created']);
    const created = legacyEvents.find((e) => e.type === 'subscription.created')!;
    expect({ targets: created.targets, object: JSON.parse(created.data_json).object.id, status: JSON.parse(created.data_json).object.status }).toEqual({ targets: [legacy.id], object: sub, status: 'trialing' });
    const currentTypes = events.filter((e) => e.api_version === '2026-11-01').map((e) => e.type);
    expect(currentTypes).toEqual(expect.arrayContaining(['customer.created', 'customer.subscription.created', 'checkout.session.completed']));
    expect(currentTypes).not.toContain('invoice.paid');
    expect(events.find((e) => e.type === 'customer.subscription.created')!.targets).toEqual([current.id]);
  });
});
