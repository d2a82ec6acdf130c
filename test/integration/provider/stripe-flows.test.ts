// What this tests: purchases on the hosted page through the Stripe connection, end to end over real HTTP
// with FerretDB, Temporal and a worker, against localstripe behind test/support/stripe-gaps.ts (the gaps
// it fills: refused parameters, Idempotency-Key, Search API, PIX). The "browser" makes the payment method
// as Stripe.js does (POST /v1/payment_methods with the publishable key), so our server only ever sees pm_…:
// a card approved (the intent holds our amount, currency and metadata.charge_key), declined (0341,
// card_declined), 3-D Secure (3155: the page shows the next action, the bank's step succeeds, /confirm
// settles it paid), a raw card number refused, a PIX shown with its QR and paid by a signed event, a
// recurring purchase, a one-off charge on its saved card and a renewal on a test clock; a payment in review
// (3-D Secure pending) settled by a signed review.closed (approved: paid; refunded_as_fraud: refused); a full
// refund made at Stripe marking the order refunded (charge.refunded; a partial one leaves it paid); the
// portal's card change posting a pm_ (saved on the Stripe customer, charged after); and in Chromium (playwright-core, as test/e2e)
// a card typed in the fake Stripe.js's field, 3-D Secure completed in the page, and the portal's card change typed in its field.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import Stripe from 'stripe';
import type { Worker } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../../api/app';
import { loadApiConfig } from '../../../api/config';
import { createStripeConnection } from '../../../adapters/provider/stripe/connection';
import { createStripeClient } from '../../../adapters/provider/stripe/client';
import { intentReader, pagePaymentReader } from '../../../adapters/provider/stripe/web';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { ensureIndexes } from '../../../store/indexes';
import { ordersCollection } from '../../../store/orders';
import { subscriptionsCollection } from '../../../store/subscriptions';
import { findCustomer } from '../../../store/customers';
import { periodEnd } from '../../../domain/billing-periods';
import { subscriptionWorkflowId } from '../../../workflows/subscription/messages';
import { createBillingWorker } from '../../../worker/main';
import { freePort } from '../../../temporal-dev/servers';
import { call, createTestStore, type TestApi, type TestStore } from '../../support/api';
import { buyerForm, createSession, seedCheckoutCatalog, type CheckoutCatalog } from '../../support/checkout-fixtures';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { FAKE_STRIPE_PUBLISHABLE_KEY, FAKE_STRIPE_SECRET_KEY, startLocalstripe, type RunningLocalstripe } from '../../support/stripe-fakes';
import { startStripeGaps, type StripeGaps } from '../../support/stripe-gaps';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, screenshot } from '../../support/browser';

const WEBHOOK_SECRET = 'whsec_flowsflowsflowsflows';
let localstripe: RunningLocalstripe;
let gaps: StripeGaps;
let mongo: TestMongo;
let temporal: TestTemporal;
let worker: Worker;
let running: Promise<void>;
let app: FastifyInstance;
let api: TestApi;
let store: TestStore;
let catalog: CheckoutCatalog;

beforeAll(async () => {
  localstripe = await startLocalstripe();
  gaps = await startStripeGaps(localstripe.url);
  mongo = await testMongo();
  temporal = await testTemporal();
  await ensureIndexes(mongo.db);
  const config = { secretKey: FAKE_STRIPE_SECRET_KEY, apiUrl: gaps.url, livemode: false };
  const provider = createStripeConnection({ config });
  const taskQueue = uniqueTaskQueue('stripe-flows');
  worker = await createBillingWorker({
    connection: temporal.nativeConnection,
    namespace: temporal.namespace,
    taskQueue,
    db: mongo.db,
    temporal: temporal.client,
    activityDeps: { provider, testProvider: null },
  });
  running = worker.run();
  const port = await freePort();
  const base = loadApiConfig({ ...process.env, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'silent' });
  const client = createStripeClient(config);
  app = await buildApp(
    {
      db: mongo.db,
      config: { ...base, taskQueue, ipRateLimit: 100_000, pagePostRateLimit: 100_000 },
      temporal: temporal.client,
      provider,
      testProvider: null,
      stripe: {
        webhookSecret: WEBHOOK_SECRET,
        publishableKey: FAKE_STRIPE_PUBLISHABLE_KEY,
        jsUrl: gaps.jsUrl,
        readIntent: intentReader(client),
        readPagePayment: pagePaymentReader(client),
      },
    },
    { logger: false },
  );
  await app.listen({ port, host: '127.0.0.1' });
  api = { app, url: `http://127.0.0.1:${port}`, config: base, close: () => app.close() };
  store = await createTestStore(mongo.db);
  catalog = await seedCheckoutCatalog(mongo.db, store.store._id);
}, 120_000);

afterAll(async () => {
  await app?.close();
  worker?.shutdown();
  await running;
  await temporal?.close();
  await mongo?.close();
  await gaps?.close();
  await localstripe?.stop();
});

/** What Stripe.js does in the browser: the card goes to Stripe with the publishable key; the page gets pm_…. */
async function browserPaymentMethod(number: string): Promise<string> {
  const body = new URLSearchParams({
    type: 'card',
    'card[number]': number,
    'card[exp_month]': '12',
    'card[exp_year]': '2034',
    'card[cvc]': '123',
    key: FAKE_STRIPE_PUBLISHABLE_KEY,
  });
  const response = await fetch(`${gaps.url}/v1/payment_methods`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });
  const json = (await response.json()) as { id: string };
  expect(json.id).toMatch(/^pm_/);
  return json.id;
}

async function page(path: string) {
  const res = await fetch(`${api.url}${path}`, { redirect: 'manual' });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function post(path: string, form: Record<string, string>) {
  const res = await fetch(`${api.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, location: res.headers.get('location'), text: await res.text() };
}

async function newSession(offer = catalog.oneOff._id) {
  const res = await createSession(api, store, { offer, currency: 'brl' });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

const session = (id: string) => findCheckoutSession(mongo.db, store.store._id, id);
const paymentStatus = (id: string, wanted: string) =>
  waitFor(
    async () => {
      const s = await session(id);
      return s?.payment_status === wanted ? s : null;
    },
    { timeoutMs: 30_000, description: `session ${id} ${wanted}` },
  );

const cardForm = (pm: string) => {
  const form = buyerForm({ method: 'card', payment_method: pm });
  delete form.card_number;
  delete form.card_expiry;
  delete form.card_cvc;
  return form;
};

describe('cards through Stripe.js', () => {
  test('the form has Stripe’s card field and no card number input; the CSP admits the Stripe.js origin', async () => {
    const id = await newSession();
    const form = await page(`/c/${id}`);
    expect(form.text).toContain('data-stripe-card');
    expect(form.text).toContain(`src="${gaps.jsUrl}"`);
    expect(form.text).not.toContain('name="card_number"');
    expect(form.headers.get('content-security-policy')).toContain(`script-src 'self' ${new URL(gaps.jsUrl).origin}`);
  });

  test('an approved card pays the session; the intent at Stripe holds our amount, currency and metadata.charge_key', async () => {
    const id = await newSession();
    const res = await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4242424242424242')));
    expect(res.location).toBe(`/c/${id}?done=1`);
    const paid = await paymentStatus(id, 'paid');
    const intent = await gaps.intent(paid.payment!.transaction_id!);
    expect(intent).toMatchObject({
      status: 'succeeded',
      amount: 19700,
      currency: 'brl',
      metadata: { charge_key: `checkout/${id}/1`, store_id: store.store._id },
    });
  });

  test('a BRL card paid in 3 installments: the order carries the plan Stripe confirmed; a USD purchase posting installments=3 is refused on the page, nothing sent to Stripe', async () => {
    const id = await newSession();
    const res = await post(`/c/${id}/pay`, { ...cardForm(await browserPaymentMethod('4242424242424242')), installments: '3' });
    expect(res.location).toBe(`/c/${id}?done=1`);
    const paid = await paymentStatus(id, 'paid');
    expect(await gaps.intent(paid.payment!.transaction_id!)).toMatchObject({ currency: 'brl' });
    expect(await ordersCollection(mongo.db).findOne({ _id: paid.order! })).toMatchObject({ installments: 3, currency: 'brl' });

    const usd = (await createSession(api, store, { offer: catalog.oneOff._id, currency: 'usd' })).body.id as string;
    const refused = await post(`/c/${usd}/pay`, { ...cardForm(await browserPaymentMethod('4242424242424242')), installments: '3' });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Installments are not available in this currency');
    expect(await session(usd)).toMatchObject({ status: 'open', order: null, payment: null });
  });

  test('a card declined at charge (4000000000000341) shows the decline and leaves the session open', async () => {
    const id = await newSession();
    const res = await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4000000000000341')));
    expect(res.status).toBe(402);
    expect(res.text).toContain('data-testid="error"');
    expect((await session(id))!.status).toBe('open');
  });

  test('a card number posted to a Stripe connection is refused before anything is charged', async () => {
    const id = await newSession();
    const res = await post(`/c/${id}/pay`, buyerForm({ method: 'card', card_number: '4242 4242 4242 4242' }));
    expect(res.status).toBe(400);
    expect(res.text).toContain('Enter your card in the card field.');
    const after = (await session(id))!;
    expect(after.status).toBe('open');
    expect(after.last_error).toBeNull();
  });

  test('3-D Secure (4000002500003155): the page runs the next action with the client secret; after the bank step /confirm settles it paid', async () => {
    const id = await newSession();
    const res = await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4000002500003155')));
    expect(res.location).toBe(`/c/${id}?done=1`);
    const pending = await paymentStatus(id, 'pending');
    const pendingPage = await page(`/c/${id}`);
    const secret = /data-client-secret="([^"]+)"/.exec(pendingPage.text)?.[1];
    expect(secret).toMatch(new RegExp(`^${pending.payment!.transaction_id}_secret_`));
    expect(pendingPage.text).toContain('data-testid="next-action"');
    // The bank's step as the fake Stripe.js runs it (confirmCardPayment → _authenticate).
    const authenticated = await fetch(`${gaps.url}/v1/payment_intents/${pending.payment!.transaction_id}/_authenticate?success=true`, {
      method: 'POST',
      body: JSON.stringify({ key: FAKE_STRIPE_PUBLISHABLE_KEY, client_secret: secret }),
    });
    expect(authenticated.status).toBe(200);
    expect((await post(`/c/${id}/confirm`, {})).location).toBe(`/c/${id}`);
    await paymentStatus(id, 'paid');
  });
});

describe('PIX through Stripe', () => {
  test('the page shows the QR image and the copy-paste code; a signed payment_intent.succeeded pays it', async () => {
    const id = await newSession();
    const res = await post(`/c/${id}/pay`, buyerForm({ method: 'pix' }));
    expect(res.location).toBe(`/c/${id}?done=1`);
    const pending = await paymentStatus(id, 'pending');
    const intentId = pending.payment!.transaction_id!;
    const pixPage = await page(`/c/${id}`);
    expect(pixPage.text).toContain(`src="${gaps.url}/_gaps/pix/${intentId}.png"`);
    expect(pixPage.text).toContain(pending.payment!.pix_code!);
    const paid = gaps.settlePix(intentId, 'paid');
    const payload = JSON.stringify({
      id: `evt_pix_${intentId}`,
      object: 'event',
      type: 'payment_intent.succeeded',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      data: { object: paid },
    });
    const sent = await fetch(`${api.url}/providers/stripe/events`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
      },
      body: payload,
    });
    expect(sent.status).toBe(200);
    await paymentStatus(id, 'paid');
  });
});

describe('a PIX paid in the last second, fenced at its expiry (test clock)', () => {
  /** A PIX on a test clock's session; the clock is advanced past the code's 30 minutes by `expire()`. */
  async function pixOnClock() {
    const t0 = Math.floor(Date.now() / 1000);
    const clock = (await call(api, store.key, 'POST', '/v1/test_helpers/test_clocks', { json: { frozen_time: t0 } })).body.id as string;
    const customer = await call(api, store.key, 'POST', '/v1/customers', {
      json: {
        email: `pix-fence-${Date.now()}@example.com`,
        name: 'Ana Pix',
        phone: '+5511999990000',
        document: { type: 'cpf', number: '529.982.247-25' },
        test_clock: clock,
      },
    });
    const created = await createSession(api, store, { offer: catalog.oneOff._id, customer: customer.body.id, currency: 'brl' });
    const id = created.body.id as string;
    expect((await post(`/c/${id}/pay`, buyerForm({ method: 'pix' }))).location).toBe(`/c/${id}?done=1`);
    const intentId = (await paymentStatus(id, 'pending')).payment!.transaction_id!;
    const expire = async () => {
      const advanced = await call(api, store.key, 'POST', `/v1/test_helpers/test_clocks/${clock}/advance`, { json: { frozen_time: t0 + 3600 } });
      expect(advanced.status).toBe(200);
    };
    return { id, intentId, expire };
  }

  const orderOf = async (id: string) => (await ordersCollection(mongo.db).findOne({ _id: (await session(id))!.order! }))!;

  test('paid a moment before the cancel (its event lost): the cancel is refused as succeeded and the order is paid, nothing given back', async () => {
    const { id, intentId, expire } = await pixOnClock();
    gaps.settlePix(intentId, 'paid');
    await expire();
    const ended = await waitFor(async () => ((await session(id))?.payment_status !== 'pending' ? session(id) : null), {
      timeoutMs: 60_000,
      description: 'the fence to settle the PIX',
    });
    expect(ended!.payment_status).toBe('paid');
    expect(await orderOf(id)).toMatchObject({ status: 'paid' });
    expect(await gaps.intent(intentId)).toMatchObject({ status: 'succeeded' });
  });

  test('paid a moment after the cancel: Stripe takes no payment (the intent is canceled), the order is canceled; never a capture without its order', async () => {
    const { id, intentId, expire } = await pixOnClock();
    await expire();
    const ended = await waitFor(async () => ((await session(id))?.payment_status !== 'pending' ? session(id) : null), {
      timeoutMs: 60_000,
      description: 'the fence to settle the PIX',
    });
    expect(ended!.payment_status).toBe('unpaid');
    expect(await gaps.intent(intentId)).toMatchObject({ status: 'canceled' });
    expect(gaps.settlePix(intentId, 'paid')).toMatchObject({ status: 'canceled' });
    expect(await orderOf(id)).toMatchObject({ status: 'canceled' });
  });
});

describe('a subscription through Stripe', () => {
  test('a recurring purchase keeps the card at Stripe; a one-off charge on the subscription charges that card off session', async () => {
    const id = await newSession(catalog.monthly._id);
    const res = await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4242424242424242')));
    expect(res.location).toBe(`/c/${id}?done=1`);
    await paymentStatus(id, 'paid');
    const withSubscription = await waitFor(async () => (await session(id))?.subscription ?? null, {
      timeoutMs: 30_000,
      description: 'the subscription of the purchase',
    });
    const saved = (await session(id))!.payment!.saved_card;
    expect(saved?.id).toMatch(/^pm_/);
    const charged = await call(api, store.key, 'POST', `/v1/subscriptions/${withSubscription}/charges`, {
      json: { amount: 1500, description: 'Extra lesson' },
      headers: { 'idempotency-key': `extra-${id}` },
    });
    expect(charged.status).toBe(201);
    expect(charged.body).toMatchObject({ status: 'succeeded', transaction: expect.stringMatching(/^pi_/) });
    const intent = await gaps.intent(charged.body.transaction);
    expect(intent).toMatchObject({ status: 'succeeded', amount: 1500, currency: 'brl', payment_method: saved!.id });
    expect(intent.metadata.charge_key).toBeTruthy();
  });
});

describe('in a browser (Chromium) through the fake Stripe.js', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function openAndFill(page: Page, card: string) {
    const id = await newSession();
    await page.goto(`${api.url}/c/${id}`);
    await page.getByLabel('E-mail').fill(`browser-${Date.now()}@example.com`);
    await page.getByLabel('Full name').fill('Beatriz Lima');
    await page.getByLabel('Phone').fill('+55 21 99876-5432');
    await page.getByLabel('Document', { exact: true }).fill('529.982.247-25');
    // The fake Stripe.js's card field: its own inputs inside the mounted element.
    const field = page.getByTestId('card-element');
    await field.getByPlaceholder('number').fill(card);
    await field.getByPlaceholder('exp_month').fill('12');
    await field.getByPlaceholder('exp_year').fill('34');
    await field.getByPlaceholder('cvc').fill('123');
    await page.getByTestId('pay-card').click();
    return id;
  }

  test('a card typed in Stripe.js’s field pays the session; the page never posts a card number', async () => {
    const page = await browser.newPage();
    const posted: string[] = [];
    page.on('request', (request) => {
      if (request.url().startsWith(api.url) && request.method() === 'POST') posted.push(request.postData() ?? '');
    });
    const id = await openAndFill(page, '4242424242424242');
    await page.getByTestId('thank-you').waitFor({ timeout: 30_000 });
    await screenshot(page, 'stripe-01-thank-you');
    expect(posted.join('\n')).toContain('payment_method=pm_');
    expect(posted.join('\n')).not.toContain('4242424242424242');
    expect((await session(id))!.payment_status).toBe('paid');
    await page.close();
  });

  test('the portal draws Stripe.js’s field: a card typed there replaces the subscription’s card; only its pm_ is posted', async () => {
    const id = await newSession(catalog.monthly._id);
    expect((await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('5555555555554444')))).location).toBe(`/c/${id}?done=1`);
    const subscription = await waitFor(async () => (await session(id))?.subscription ?? null, { timeoutMs: 30_000, description: 'the subscription' });
    const link = await call(api, store.key, 'POST', '/v1/billing_portal/sessions', {
      json: { customer: (await session(id))!.customer!, return_url: 'https://shop.example.com' },
    });
    const page = await browser.newPage();
    const posted: string[] = [];
    page.on('request', (request) => {
      if (request.url().startsWith(api.url) && request.method() === 'POST') posted.push(request.postData() ?? '');
    });
    await page.goto(`${api.url}${new URL(link.body.url as string).pathname}`);
    await page.getByTestId('signin-continue').click();
    const item = page.locator(`[data-subscription="${subscription}"]`);
    const field = item.getByTestId('card-element');
    // Digits only: the fake's field (localstripe) does not strip spaces as Stripe's own does.
    await field.getByPlaceholder('number').fill('4242424242424242');
    await field.getByPlaceholder('exp_month').fill('12');
    await field.getByPlaceholder('exp_year').fill('34');
    await field.getByPlaceholder('cvc').fill('123');
    await item.getByTestId('replace-card').click();
    await page.getByTestId('done').waitFor({ timeout: 30_000 });
    expect(posted.join('\n')).toContain('payment_method=pm_');
    expect(posted.join('\n')).not.toMatch(/4242|card_number/);
    const saved = (await subscriptionsCollection(mongo.db).findOne({ _id: subscription }))!.default_payment_method;
    expect(saved).toMatchObject({ last4: '4242' });
    expect(saved!.id).toMatch(/^pm_/);
    await page.close();
  });

  test('3-D Secure: the bank’s step opens in the page; completing it pays the session', async () => {
    const page = await browser.newPage();
    const id = await openAndFill(page, '4000002500003155');
    await page.getByRole('button', { name: 'Complete authentication' }).click({ timeout: 30_000 });
    await page.getByTestId('thank-you').waitFor({ timeout: 30_000 });
    await screenshot(page, 'stripe-02-3ds-paid');
    expect((await session(id))!.payment_status).toBe('paid');
    await page.close();
  });
});

/** Refunds at Stripe as its dashboard does (POST /v1/refunds), then reads the charge Stripe's event would carry. */
async function refundAtStripe(intentId: string, amount?: number) {
  const auth = { authorization: `Bearer ${FAKE_STRIPE_SECRET_KEY}`, 'content-type': 'application/x-www-form-urlencoded' };
  const body = new URLSearchParams({ payment_intent: intentId, ...(amount === undefined ? {} : { amount: String(amount) }) });
  const refunded = await fetch(`${gaps.url}/v1/refunds`, { method: 'POST', headers: auth, body });
  expect(refunded.status).toBe(200);
  const chargeId = ((await refunded.json()) as { charge: string }).charge;
  return (await (await fetch(`${gaps.url}/v1/charges/${chargeId}`, { headers: auth })).json()) as Record<string, any>;
}

async function chargeRefunded(charge: Record<string, any>) {
  const payload = JSON.stringify({
    id: `evt_refund_${charge.id}_${charge.amount_refunded}`,
    object: 'event',
    type: 'charge.refunded',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    data: { object: charge },
  });
  const res = await fetch(`${api.url}/providers/stripe/events`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
    },
    body: payload,
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** How many provider notices the subscription's workflow (its current run) was signalled. */
async function settledSignals(subscription: string): Promise<number> {
  const history = await temporal.client.workflow.getHandle(subscriptionWorkflowId(subscription)).fetchHistory();
  return (history.events ?? []).filter((event) => event.workflowExecutionSignaledEventAttributes?.signalName === 'providerSettled').length;
}

describe('a renewal through Stripe', () => {
  const api_ = (method: string, path: string, json?: unknown) => call(api, store.key, method, path, json === undefined ? {} : { json });

  test('a subscription bought on a test clock renews at its period end on the card kept at Stripe, off session', async () => {
    const t0 = Math.floor(Date.now() / 1000);
    const clock = (await api_('POST', '/v1/test_helpers/test_clocks', { frozen_time: t0 })).body.id as string;
    const customer = await api_('POST', '/v1/customers', {
      email: `renewal-${Date.now()}@example.com`,
      name: 'Ana Renewal',
      phone: '+5511999990000',
      document: { type: 'cpf', number: '529.982.247-25' },
      test_clock: clock,
    });
    expect(customer.status).toBe(201);
    const created = await createSession(api, store, { offer: catalog.monthly._id, customer: customer.body.id });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const form = cardForm(await browserPaymentMethod('4242424242424242'));
    const res = await post(`/c/${id}/pay`, { payment_method: form.payment_method, method: 'card', currency: 'brl' });
    expect(res.location).toBe(`/c/${id}?done=1`);
    await paymentStatus(id, 'paid');
    const subscription = await waitFor(async () => (await session(id))?.subscription ?? null, { timeoutMs: 30_000, description: 'the subscription' });
    const end = periodEnd(t0, 'monthly', null);
    // Advanced at once: the clock waits for the subscription's workflow to attach (JOIN_WAIT_MS).
    expect((await api_('POST', `/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: end + 3600 })).status).toBe(200);
    const renewal = await waitFor(
      async () => (await ordersCollection(mongo.db).findOne({ subscription, billing_reason: 'renewal', status: 'paid' })) ?? null,
      { timeoutMs: 60_000, description: 'the renewal order paid' },
    );
    const intent = await gaps.intent(renewal.provider_transaction_id!);
    expect(intent).toMatchObject({
      status: 'succeeded',
      amount: 4990,
      currency: 'brl',
      payment_method: (await session(id))!.payment!.saved_card!.id,
    });
    expect(intent.metadata).toMatchObject({ kind: 'saved_card', store_id: store.store._id });

    // Refunded later at Stripe: the order says so, and the subscription's workflow is not told its payment was refused.
    const signalsBefore = await settledSignals(subscription);
    expect(await chargeRefunded(await refundAtStripe(intent.id))).toMatchObject({ status: 200 });
    expect(await ordersCollection(mongo.db).findOne({ _id: renewal._id })).toMatchObject({ status: 'refunded' });
    expect(await settledSignals(subscription)).toBe(signalsBefore);
    expect((await api_('GET', `/v1/subscriptions/${subscription}`)).body.status).toBe('active');
  });
});

describe('money given back through Stripe', () => {
  test('a 3-D Secure payment the buyer never completes is voided at Stripe when its review window ends (test clock): the session ends unpaid', async () => {
    const t0 = Math.floor(Date.now() / 1000);
    const clock = (await call(api, store.key, 'POST', '/v1/test_helpers/test_clocks', { json: { frozen_time: t0 } })).body.id as string;
    const customer = await call(api, store.key, 'POST', '/v1/customers', {
      json: {
        email: `void-${Date.now()}@example.com`,
        name: 'Ana Void',
        phone: '+5511999990000',
        document: { type: 'cpf', number: '529.982.247-25' },
        test_clock: clock,
      },
    });
    const created = await createSession(api, store, { offer: catalog.oneOff._id, customer: customer.body.id, currency: 'brl' });
    const id = created.body.id as string;
    const pm = await browserPaymentMethod('4000002500003155');
    expect((await post(`/c/${id}/pay`, { payment_method: pm, method: 'card', currency: 'brl' })).location).toBe(`/c/${id}?done=1`);
    const pending = await paymentStatus(id, 'pending');
    const advanced = await call(api, store.key, 'POST', `/v1/test_helpers/test_clocks/${clock}/advance`, { json: { frozen_time: t0 + 8 * 86_400 } });
    expect(advanced.status).toBe(200);
    const ended = await waitFor(
      async () => {
        const s = await session(id);
        return s?.payment_status === 'unpaid' ? s : null;
      },
      { timeoutMs: 60_000, description: 'the review window to end the payment' },
    );
    expect(ended.status).toBe('complete');
    expect(await gaps.intent(pending.payment!.transaction_id!)).toMatchObject({ status: 'canceled' });
  });
});

describe('a review settled by review.closed', () => {
  /** Radar's review.closed for an intent, signed as Stripe signs it (localstripe has no reviews: the test is Radar). */
  async function reviewClosed(intentId: string, reason: string) {
    const payload = JSON.stringify({
      id: `evt_review_${intentId}_${reason}`,
      object: 'event',
      type: 'review.closed',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      data: { object: { id: `prv_${intentId}`, object: 'review', open: false, reason, payment_intent: intentId } },
    });
    const res = await fetch(`${api.url}/providers/stripe/events`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
      },
      body: payload,
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }

  /** A card payment the checkout holds in review (3-D Secure pending at Stripe): the session waits, pending. */
  async function paymentInReview() {
    const id = await newSession();
    expect((await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4000002500003155')))).location).toBe(`/c/${id}?done=1`);
    const pending = await paymentStatus(id, 'pending');
    return { id, intentId: pending.payment!.transaction_id! };
  }

  test('approved: the session in review is paid', async () => {
    const { id, intentId } = await paymentInReview();
    expect(await reviewClosed(intentId, 'approved')).toMatchObject({ status: 200, body: { status: 'delivered' } });
    const paid = await paymentStatus(id, 'paid');
    expect(paid.status).toBe('complete');
    expect(await ordersCollection(mongo.db).findOne({ _id: paid.order! })).toMatchObject({ status: 'paid', external_order_id: intentId });
  });

  test('refunded_as_fraud: the session in review ends as a refused payment', async () => {
    const { id, intentId } = await paymentInReview();
    expect(await reviewClosed(intentId, 'refunded_as_fraud')).toMatchObject({ status: 200, body: { status: 'delivered' } });
    const ended = await paymentStatus(id, 'unpaid');
    expect(ended.status).toBe('complete');
    const order = await ordersCollection(mongo.db).findOne({ _id: ended.order! });
    expect(order).toMatchObject({ status: 'failed', external_order_id: intentId });
  });
});

describe('a refund made at Stripe (charge.refunded)', () => {
  /** A card purchase paid through localstripe: the session, its order and the intent. */
  async function paidPurchase() {
    const id = await newSession();
    expect((await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4242424242424242')))).location).toBe(`/c/${id}?done=1`);
    const paid = await paymentStatus(id, 'paid');
    return { orderId: paid.order!, intentId: paid.payment!.transaction_id! };
  }

  const refundEvents = async (orderId: string) => {
    const listed = await call(api, store.key, 'GET', '/v1/events?type=order.refunded&limit=100');
    return (listed.body.data as Array<{ data: { object: { id: string } } }>).filter((event) => event.data.object.id === orderId);
  };

  test('a full refund marks the paid order refunded and emits order.refunded once, also when the event comes again', async () => {
    const { orderId, intentId } = await paidPurchase();
    const charge = await refundAtStripe(intentId);
    expect(charge).toMatchObject({ payment_intent: intentId, amount: 19700, amount_refunded: 19700 });
    expect(await chargeRefunded(charge)).toMatchObject({ status: 200 });
    expect(await ordersCollection(mongo.db).findOne({ _id: orderId })).toMatchObject({ status: 'refunded' });
    expect(await chargeRefunded(charge)).toMatchObject({ status: 200, body: { status: 'repeat' } });
    const events = await waitFor(async () => ((await refundEvents(orderId)).length > 0 ? refundEvents(orderId) : null), {
      timeoutMs: 20_000,
      description: 'order.refunded for the order',
    });
    expect(events).toHaveLength(1);
  });

  test('a partial refund leaves the order paid (decided: only a full refund marks it refunded)', async () => {
    const { orderId, intentId } = await paidPurchase();
    const charge = await refundAtStripe(intentId, 5000);
    expect(charge).toMatchObject({ amount: 19700, amount_refunded: 5000 });
    expect(await chargeRefunded(charge)).toMatchObject({ status: 200 });
    expect(await ordersCollection(mongo.db).findOne({ _id: orderId })).toMatchObject({ status: 'paid' });
    expect(await refundEvents(orderId)).toHaveLength(0);
  });
});

describe('the customer portal with Stripe', () => {
  test('replacing the card posts Stripe.js’s pm_ (no number): it is attached to the Stripe customer as its default and the subscription charges it', async () => {
    const id = await newSession(catalog.monthly._id);
    expect((await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4242424242424242')))).location).toBe(`/c/${id}?done=1`);
    const subscription = await waitFor(async () => (await session(id))?.subscription ?? null, { timeoutMs: 30_000, description: 'the subscription' });
    const customerId = (await session(id))!.customer!;
    const link = await call(api, store.key, 'POST', '/v1/billing_portal/sessions', {
      json: { customer: customerId, return_url: 'https://shop.example.com' },
    });
    expect(link.status).toBe(200);
    const linkPath = new URL(link.body.url as string).pathname;
    await fetch(`${api.url}${linkPath}`);
    const signedIn = await fetch(`${api.url}${linkPath}`, { method: 'POST', redirect: 'manual', headers: { origin: api.url } });
    expect(signedIn.status).toBe(303);
    const cookie = signedIn.headers.get('set-cookie')!.split(';')[0];
    const account = new URL(signedIn.headers.get('location')!, api.url).pathname;
    const accountPage = await (await fetch(`${api.url}${account}`, { headers: { cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(accountPage)![1];
    const pm = await browserPaymentMethod('5555555555554444');
    const replaced = await fetch(`${api.url}${account}/subscriptions/${subscription}/card`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams({ csrf, payment_method: pm }).toString(),
    });
    expect(replaced.headers.get('location')).toBe(`${account}?done=card`);
    const sub = await call(api, store.key, 'GET', `/v1/subscriptions/${subscription}`);
    expect(sub.body.default_payment_method).toMatchObject({ id: pm });
    expect((await subscriptionsCollection(mongo.db).findOne({ _id: subscription }))!.default_payment_method).toMatchObject({ id: pm, last4: '4444' });
    const providerCustomer = (await findCustomer(mongo.db, store.store._id, customerId))!.provider_customer_id!;
    const atStripe = (await (
      await fetch(`${gaps.url}/v1/customers/${providerCustomer}`, { headers: { authorization: `Bearer ${FAKE_STRIPE_SECRET_KEY}` } })
    ).json()) as Record<string, any>;
    expect(atStripe.invoice_settings?.default_payment_method).toBe(pm);
    const charged = await call(api, store.key, 'POST', `/v1/subscriptions/${subscription}/charges`, {
      json: { amount: 1200, description: 'After the card change' },
      headers: { 'idempotency-key': `after-card-${id}` },
    });
    expect(charged.body).toMatchObject({ status: 'succeeded' });
    expect(await gaps.intent(charged.body.transaction)).toMatchObject({ payment_method: pm, amount: 1200 });
  });
});
