// What this tests: purchases on the hosted page through the Stripe connection, end to end over real HTTP
// with FerretDB, Temporal and a worker, against localstripe behind test/support/stripe-gaps.ts (the gaps
// it fills: refused parameters, Idempotency-Key, Search API, PIX). The "browser" makes the payment method
// as Stripe.js does (POST /v1/payment_methods with the publishable key), so our server only ever sees pm_…:
// a card approved (the intent holds our amount, currency and metadata.charge_key), declined (0341,
// card_declined), 3-D Secure (3155: the session stays open and unpaid, the page shows the next action, the
// bank's step succeeds, /confirm pays it; a failed step is a decline and a second card pays; paying again
// cancels the waiting intent; 500 page views ask Stripe nothing; the expiry fence; a recurring purchase's
// 3-D Secure card kept and charged off session; a free trial's SetupIntent), a raw card number refused, a PIX shown with its QR and paid by a signed event, a
// recurring purchase, a one-off charge on its saved card and a renewal on a test clock; a payment in review
// (3-D Secure pending) settled by a signed review.closed (approved: paid; refunded_as_fraud: a decline); refunds
// started from our side (the refund service: partial, then the rest) and at Stripe's dashboard (charge.refunded,
// partial and whole), each counted once on the order whichever side made it; a dispute opened then closed; the
// portal's card change posting a pm_ (saved on the Stripe customer, charged after); and in Chromium (playwright-core, as test/e2e)
// a card typed in the fake Stripe.js's field, 3-D Secure completed in the page (one-off and recurring), a failed
// authentication then a second card, and the portal's card change typed in its field.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import Stripe from 'stripe';
import type { Worker } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../../api/app';
import { loadApiConfig } from '../../../api/config';
import { createStripeConnection } from '../../../adapters/provider/stripe/connection';
import { createStripeClient } from '../../../adapters/provider/stripe/client';
import { chargeRefundsReader, intentReader, pagePaymentReader } from '../../../adapters/provider/stripe/web';
import { refundOrder } from '../../../services/refunds/refunds';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { ensureIndexes } from '../../../store/indexes';
import { ordersCollection } from '../../../store/orders';
import { subscriptionsCollection } from '../../../store/subscriptions';
import { findCustomer } from '../../../store/customers';
import { periodEnd } from '../../../domain/billing-periods';
import { subscriptionWorkflowId } from '../../../workflows/subscription/messages';
import { checkoutSessionWorkflowId, stateQuery } from '../../../workflows/checkout-session/messages';
import { PAGE_PROVIDER_READS_PER_SESSION } from '../../../api/pages/provider-reads';
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
let taskQueue: string;

beforeAll(async () => {
  localstripe = await startLocalstripe();
  gaps = await startStripeGaps(localstripe.url);
  mongo = await testMongo();
  temporal = await testTemporal();
  await ensureIndexes(mongo.db);
  const config = { secretKey: FAKE_STRIPE_SECRET_KEY, apiUrl: gaps.url, livemode: false };
  const provider = createStripeConnection({ config });
  taskQueue = uniqueTaskQueue('stripe-flows');
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
        readChargeRefunds: chargeRefundsReader(client),
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

/** The bank's step as the fake Stripe.js runs it: POST _authenticate with the client secret. */
const authenticate = (intentId: string, secret: string, success: boolean) =>
  fetch(`${gaps.url}/v1/payment_intents/${intentId}/_authenticate?success=${success}`, {
    method: 'POST',
    body: JSON.stringify({ key: FAKE_STRIPE_PUBLISHABLE_KEY, client_secret: secret }),
  });

/** checkout.session.completed events of one session. */
const completedEvents = async (id: string) => {
  const listed = await call(api, store.key, 'GET', '/v1/events?type=checkout.session.completed&limit=100');
  return (listed.body.data as Array<{ data: { object: { id: string } } }>).filter((event) => event.data.object.id === id);
};

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

  test('3-D Secure (4000002500003155): the session stays open and unpaid while the buyer authenticates; no completion, no order; then /confirm pays it', async () => {
    const id = await newSession();
    const res = await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4000002500003155')));
    expect(res.location).toBe(`/c/${id}`);
    const waiting = (await session(id))!;
    expect(waiting).toMatchObject({ status: 'open', payment_status: 'unpaid', order: null });
    const intentId = waiting.pending_action!.transaction_id;
    // Kept sealed, never in clear: the page opens it.
    expect(waiting.pending_action!.client_secret).toMatch(/^sealed:v1:/);
    expect(await completedEvents(id)).toHaveLength(0);
    const actionPage = await page(`/c/${id}`);
    const secret = /data-client-secret="([^"]+)"/.exec(actionPage.text)?.[1];
    expect(secret).toMatch(new RegExp(`^${intentId}_secret_`));
    expect(actionPage.text).toContain('data-testid="next-action"');
    // The bank's step as the fake Stripe.js runs it (confirmCardPayment → _authenticate).
    expect((await authenticate(intentId, secret!, true)).status).toBe(200);
    expect((await post(`/c/${id}/confirm`, {})).location).toBe(`/c/${id}`);
    const paid = await paymentStatus(id, 'paid');
    expect(paid).toMatchObject({ status: 'complete', pending_action: null });
    expect(paid.payment!.transaction_id).toBe(intentId);
    expect(await ordersCollection(mongo.db).findOne({ _id: paid.order! })).toMatchObject({ status: 'paid' });
  });

  test('3-D Secure settled by Stripe’s event instead of the page: a signed payment_intent.succeeded pays the open session', async () => {
    const id = await newSession();
    expect((await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4000002500003155')))).location).toBe(`/c/${id}`);
    const intentId = (await session(id))!.pending_action!.transaction_id;
    const secret = /data-client-secret="([^"]+)"/.exec((await page(`/c/${id}`)).text)![1];
    expect((await authenticate(intentId, secret, true)).status).toBe(200);
    // The buyer closed the tab before /confirm: the event alone settles it.
    const payload = JSON.stringify({
      id: `evt_3ds_${intentId}`,
      object: 'event',
      type: 'payment_intent.succeeded',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      data: { object: await gaps.intent(intentId) },
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
    const paid = await paymentStatus(id, 'paid');
    expect(paid).toMatchObject({ status: 'complete', pending_action: null });
    expect(await completedEvents(id)).toHaveLength(1);
  });

  test('a failed authentication is a decline shown in the buyer’s language; a second card then pays the same session', async () => {
    const id = await newSession();
    expect((await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4000002500003155')))).location).toBe(`/c/${id}`);
    const first = (await session(id))!.pending_action!;
    const polled = async () => JSON.parse((await page(`/c/${id}/status`)).text) as { status: string };
    expect(await polled()).toMatchObject({ status: 'action_required' });
    const secret = /data-client-secret="([^"]+)"/.exec((await page(`/c/${id}`)).text)![1];
    expect((await authenticate(first.transaction_id, secret, false)).status).toBe(200);
    expect((await post(`/c/${id}/confirm`, {})).location).toBe(`/c/${id}`);
    const declined = await waitFor(
      async () => {
        const s = await session(id);
        return s?.last_error ? s : null;
      },
      { timeoutMs: 30_000, description: 'the failed authentication recorded as a decline' },
    );
    expect(declined).toMatchObject({ status: 'open', payment_status: 'unpaid', pending_action: null });
    expect(declined.last_error!.code).toBe('payment_intent_authentication_failure');
    // The waiting page's poll sees the change and reloads onto the form with the decline.
    expect(await polled()).toMatchObject({ status: 'open' });
    const shown = await fetch(`${api.url}/c/${id}`, { headers: { 'accept-language': 'pt-BR' } });
    expect(await shown.text()).toContain('Seu banco não confirmou o pagamento.');
    const second = await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4242424242424242')));
    expect(second.location).toBe(`/c/${id}?done=1`);
    const paid = await paymentStatus(id, 'paid');
    expect(paid.payment!.transaction_id).not.toBe(first.transaction_id);
    expect(await gaps.intent(first.transaction_id)).toMatchObject({ status: 'requires_payment_method' });
    expect(await completedEvents(id)).toHaveLength(1);
  });

  test('paying again while a 3-D Secure waits cancels the waiting intent at Stripe first (an abandoned authentication is a decline)', async () => {
    const id = await newSession();
    expect((await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4000002500003155')))).location).toBe(`/c/${id}`);
    const first = (await session(id))!.pending_action!;
    const second = await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4242424242424242')));
    expect(second.location).toBe(`/c/${id}?done=1`);
    await paymentStatus(id, 'paid');
    expect(await gaps.intent(first.transaction_id)).toMatchObject({ status: 'canceled' });
    const state = await temporal.client.workflow.getHandle(checkoutSessionWorkflowId(id)).query(stateQuery);
    expect(state.attempts.map((attempt) => [attempt.status, attempt.code])).toEqual([
      ['declined', 'authentication_abandoned'],
      ['approved', null],
    ]);
  });

  test('500 views of a page waiting for 3-D Secure, and of a pending PIX, make no request to Stripe', async () => {
    const id = await newSession();
    expect((await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4000002500003155')))).location).toBe(`/c/${id}`);
    const pix = await newSession();
    expect((await post(`/c/${pix}/pay`, buyerForm({ method: 'pix' }))).location).toBe(`/c/${pix}?done=1`);
    await paymentStatus(pix, 'pending');
    const before = gaps.requests();
    for (let i = 0; i < 250; i++) {
      const [action, pixPage] = await Promise.all([page(`/c/${id}`), page(`/c/${pix}`)]);
      expect(action.text).toContain('data-client-secret="pi_');
      expect(pixPage.text).toContain('data-testid="pix-qr"');
    }
    expect(gaps.requests()).toBe(before);
  });

  test('the confirm re-check is bounded per session: past its reads, confirms ask Stripe nothing more', async () => {
    const id = await newSession();
    expect((await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4000002500003155')))).location).toBe(`/c/${id}`);
    const before = gaps.requests();
    // The pay's own read of the client secret was the first of the session's reads.
    for (let i = 0; i < PAGE_PROVIDER_READS_PER_SESSION + 5; i++) expect((await post(`/c/${id}/confirm`, {})).status).toBe(303);
    // Each confirm the bound lets through reads the intent once; the rest read nothing.
    expect(gaps.requests() - before).toBe(PAGE_PROVIDER_READS_PER_SESSION - 1);
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

  async function openAndFill(page: Page, card: string, offer = catalog.oneOff._id) {
    const id = await newSession(offer);
    await page.goto(`${api.url}/c/${id}`);
    await fillBuyer(page);
    await typeCard(page, card);
    return id;
  }

  async function fillBuyer(page: Page) {
    await page.getByLabel('E-mail').fill(`browser-${Date.now()}@example.com`);
    await page.getByLabel('Full name').fill('Beatriz Lima');
    await page.getByLabel('Phone').fill('+55 21 99876-5432');
    await page.getByLabel('Document', { exact: true }).fill('529.982.247-25');
  }

  /** The fake Stripe.js's card field: its own inputs inside the mounted element; then the pay button. */
  async function typeCard(page: Page, card: string) {
    const field = page.getByTestId('card-element');
    await field.getByPlaceholder('number').fill(card);
    await field.getByPlaceholder('exp_month').fill('12');
    await field.getByPlaceholder('exp_year').fill('34');
    await field.getByPlaceholder('cvc').fill('123');
    await page.getByTestId('pay-card').click();
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

  test('a recurring purchase with the 3-D Secure card: authentication completed in the page, the subscription shows the card', async () => {
    const page = await browser.newPage();
    const id = await openAndFill(page, '4000002500003155', catalog.monthly._id);
    await page.getByTestId('action-required').waitFor({ timeout: 30_000 });
    // Open and unpaid while the bank's step is on screen.
    expect(await session(id)).toMatchObject({ status: 'open', payment_status: 'unpaid' });
    await page.getByRole('button', { name: 'Complete authentication' }).click({ timeout: 30_000 });
    await page.getByTestId('thank-you').waitFor({ timeout: 30_000 });
    await screenshot(page, 'stripe-03-3ds-recurring-paid');
    const subscription = await waitFor(async () => (await session(id))?.subscription ?? null, { timeoutMs: 30_000, description: 'the subscription' });
    const shown = await call(api, store.key, 'GET', `/v1/subscriptions/${subscription}`);
    expect(shown.body.default_payment_method).toMatchObject({ id: expect.stringMatching(/^pm_/), type: 'card' });
    expect((await subscriptionsCollection(mongo.db).findOne({ _id: subscription }))!.default_payment_method).toMatchObject({ last4: '3155' });
    await page.close();
  });

  test('a failed authentication in the page shows the decline; a second card then pays the same session', async () => {
    const page = await browser.newPage();
    const id = await openAndFill(page, '4000002500003155');
    await page.getByRole('button', { name: 'Fail authentication' }).click({ timeout: 30_000 });
    const error = page.getByTestId('error');
    await error.waitFor({ timeout: 30_000 });
    expect(await error.textContent()).toContain('Your bank did not confirm the payment.');
    await screenshot(page, 'stripe-04-3ds-failed');
    expect(await session(id)).toMatchObject({ status: 'open', payment_status: 'unpaid' });
    await fillBuyer(page);
    await typeCard(page, '4242424242424242');
    await page.getByTestId('thank-you').waitFor({ timeout: 30_000 });
    const paid = (await session(id))!;
    expect(paid.payment_status).toBe('paid');
    expect(await gaps.intent(paid.payment!.transaction_id!)).toMatchObject({ status: 'succeeded' });
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
    await orderBecomes(renewal._id, 'refunded');
    expect(await settledSignals(subscription)).toBe(signalsBefore);
    expect((await api_('GET', `/v1/subscriptions/${subscription}`)).body.status).toBe('active');
  });
});

describe('a 3-D Secure recurring purchase through Stripe', () => {
  const api_ = (method: string, path: string, json?: unknown, headers: Record<string, string> = {}) =>
    call(api, store.key, method, path, json === undefined ? { headers } : { json, headers });

  test('the card authenticated in the page is kept: the subscription shows it, a one-off charge and the renewal (test clock) charge it off session', async () => {
    const t0 = Math.floor(Date.now() / 1000);
    const clock = (await api_('POST', '/v1/test_helpers/test_clocks', { frozen_time: t0 })).body.id as string;
    const customer = await api_('POST', '/v1/customers', {
      email: `threeds-${Date.now()}@example.com`,
      name: 'Ana Autentica',
      phone: '+5511999990000',
      document: { type: 'cpf', number: '529.982.247-25' },
      test_clock: clock,
    });
    const id = (await createSession(api, store, { offer: catalog.monthly._id, customer: customer.body.id })).body.id as string;
    const pm = await browserPaymentMethod('4000002500003155');
    expect((await post(`/c/${id}/pay`, { payment_method: pm, method: 'card', currency: 'brl' })).location).toBe(`/c/${id}`);
    const intentId = (await session(id))!.pending_action!.transaction_id;
    expect(await gaps.intent(intentId)).toMatchObject({ status: 'requires_action', setup_future_usage: 'off_session' });
    const secret = /data-client-secret="([^"]+)"/.exec((await page(`/c/${id}`)).text)![1];
    expect((await authenticate(intentId, secret, true)).status).toBe(200);
    expect((await post(`/c/${id}/confirm`, {})).location).toBe(`/c/${id}`);
    await paymentStatus(id, 'paid');
    const subscription = await waitFor(async () => (await session(id))?.subscription ?? null, { timeoutMs: 30_000, description: 'the subscription' });
    const shown = await api_('GET', `/v1/subscriptions/${subscription}`);
    expect(shown.body.default_payment_method).toMatchObject({ id: pm, type: 'card' });
    expect((await subscriptionsCollection(mongo.db).findOne({ _id: subscription }))!.default_payment_method).toMatchObject({ id: pm, last4: '3155' });
    const providerCustomer = (await findCustomer(mongo.db, store.store._id, customer.body.id))!.provider_customer_id!;
    const method = (await (
      await fetch(`${gaps.url}/v1/payment_methods/${pm}`, { headers: { authorization: `Bearer ${FAKE_STRIPE_SECRET_KEY}` } })
    ).json()) as Record<string, any>;
    expect(method.customer).toBe(providerCustomer);

    const charged = await api_(
      'POST',
      `/v1/subscriptions/${subscription}/charges`,
      { amount: 1500, description: 'Extra lesson' },
      {
        'idempotency-key': `threeds-extra-${id}`,
      },
    );
    expect(charged.body).toMatchObject({ status: 'succeeded' });
    expect(await gaps.intent(charged.body.transaction)).toMatchObject({ status: 'succeeded', amount: 1500, payment_method: pm });

    const end = periodEnd(t0, 'monthly', null);
    expect((await api_('POST', `/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: end + 3600 })).status).toBe(200);
    const renewal = await waitFor(
      async () => (await ordersCollection(mongo.db).findOne({ subscription, billing_reason: 'renewal', status: 'paid' })) ?? null,
      { timeoutMs: 60_000, description: 'the renewal order paid' },
    );
    expect(await gaps.intent(renewal.provider_transaction_id!)).toMatchObject({ status: 'succeeded', amount: 4990, payment_method: pm });
  });
});

describe('a free trial through Stripe (SetupIntent)', () => {
  const api_ = (method: string, path: string, json?: unknown) => call(api, store.key, method, path, json === undefined ? {} : { json });

  test('the trial’s card is set up through a SetupIntent authenticated on the page; the first charge after the trial is off session', async () => {
    const t0 = Math.floor(Date.now() / 1000);
    const clock = (await api_('POST', '/v1/test_helpers/test_clocks', { frozen_time: t0 })).body.id as string;
    const customer = await api_('POST', '/v1/customers', {
      email: `trial-${Date.now()}@example.com`,
      name: 'Ana Trial',
      phone: '+5511999990000',
      document: { type: 'cpf', number: '529.982.247-25' },
      test_clock: clock,
    });
    const id = (await createSession(api, store, { offer: catalog.trial._id, customer: customer.body.id })).body.id as string;
    const pm = await browserPaymentMethod('4000002500003155');
    expect((await post(`/c/${id}/pay`, { payment_method: pm, method: 'card', currency: 'brl' })).location).toBe(`/c/${id}`);
    const setupId = (await session(id))!.pending_action!.transaction_id;
    expect(setupId).toMatch(/^seti_/);
    expect(await session(id)).toMatchObject({ status: 'open', order: null });
    const secret = /data-client-secret="([^"]+)"/.exec((await page(`/c/${id}`)).text)![1];
    expect(secret).toMatch(new RegExp(`^${setupId}_secret_`));
    // The bank's step as Stripe.js runs it for a SetupIntent.
    const confirmed = await fetch(`${gaps.url}/v1/setup_intents/${setupId}/confirm`, {
      method: 'POST',
      body: JSON.stringify({ key: FAKE_STRIPE_PUBLISHABLE_KEY, client_secret: secret, use_stripe_sdk: true }),
    });
    expect(confirmed.status).toBe(200);
    expect((await post(`/c/${id}/confirm`, {})).location).toBe(`/c/${id}`);
    const subscription = await waitFor(async () => (await session(id))?.subscription ?? null, { timeoutMs: 30_000, description: 'the subscription' });
    expect((await subscriptionsCollection(mongo.db).findOne({ _id: subscription }))!.default_payment_method).toMatchObject({ id: pm, last4: '3155' });
    const providerCustomer = (await findCustomer(mongo.db, store.store._id, customer.body.id))!.provider_customer_id!;
    const atStripe = (await (
      await fetch(`${gaps.url}/v1/customers/${providerCustomer}`, { headers: { authorization: `Bearer ${FAKE_STRIPE_SECRET_KEY}` } })
    ).json()) as Record<string, any>;
    expect(atStripe.invoice_settings?.default_payment_method).toBe(pm);

    expect((await api_('POST', `/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: t0 + 8 * 86_400 })).status).toBe(200);
    const first = await waitFor(
      async () => (await ordersCollection(mongo.db).findOne({ subscription, status: 'paid', provider_transaction_id: { $ne: null } })) ?? null,
      { timeoutMs: 60_000, description: 'the first charge after the trial paid' },
    );
    expect(await gaps.intent(first.provider_transaction_id!)).toMatchObject({ status: 'succeeded', amount: 4990, payment_method: pm });
  });
});

describe('money given back through Stripe', () => {
  test('a 3-D Secure still waiting when the session expires is cancelled at Stripe first (test clock): the session expires, nothing charged', async () => {
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
    expect((await post(`/c/${id}/pay`, { payment_method: pm, method: 'card', currency: 'brl' })).location).toBe(`/c/${id}`);
    const intentId = (await session(id))!.pending_action!.transaction_id;
    const advanced = await call(api, store.key, 'POST', `/v1/test_helpers/test_clocks/${clock}/advance`, { json: { frozen_time: t0 + 2 * 86_400 } });
    expect(advanced.status).toBe(200);
    const ended = await waitFor(
      async () => {
        const s = await session(id);
        return s?.status === 'expired' ? s : null;
      },
      { timeoutMs: 60_000, description: 'the session to expire' },
    );
    expect(ended).toMatchObject({ payment_status: 'unpaid', order: null, pending_action: null });
    expect(await gaps.intent(intentId)).toMatchObject({ status: 'canceled', cancellation_reason: 'abandoned' });
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

  /** A card payment Stripe has not decided yet (localstripe has no Radar: a 3-D Secure pending stands in); the session waits open. */
  async function paymentInReview() {
    const id = await newSession();
    expect((await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4000002500003155')))).location).toBe(`/c/${id}`);
    return { id, intentId: (await session(id))!.pending_action!.transaction_id };
  }

  test('approved: the session in review is paid', async () => {
    const { id, intentId } = await paymentInReview();
    expect(await reviewClosed(intentId, 'approved')).toMatchObject({ status: 200, body: { status: 'delivered' } });
    const paid = await paymentStatus(id, 'paid');
    expect(paid.status).toBe('complete');
    expect(await ordersCollection(mongo.db).findOne({ _id: paid.order! })).toMatchObject({ status: 'paid', external_order_id: intentId });
  });

  test('refunded_as_fraud: the payment is refused as a decline; the session stays open for another payment', async () => {
    const { id, intentId } = await paymentInReview();
    expect(await reviewClosed(intentId, 'refunded_as_fraud')).toMatchObject({ status: 200, body: { status: 'delivered' } });
    const declined = await waitFor(
      async () => {
        const s = await session(id);
        return s?.last_error ? s : null;
      },
      { timeoutMs: 30_000, description: 'the refusal recorded as a decline' },
    );
    expect(declined).toMatchObject({ status: 'open', payment_status: 'unpaid', order: null, pending_action: null });
  });
});

/** Waits for the order to reach `status` (refunds are counted by their workflow). */
const orderBecomes = (orderId: string, status: string) =>
  waitFor(
    async () => {
      const order = await ordersCollection(mongo.db).findOne({ _id: orderId });
      return order?.status === status ? order : null;
    },
    { timeoutMs: 30_000, description: `order ${orderId} ${status}` },
  );

/** Events of `type` about the order, once the count settles at `count` (read a few times to see no extra one arrive). */
async function orderEvents(orderId: string, type: string) {
  const listed = await call(api, store.key, 'GET', `/v1/events?type=${type}&limit=100`);
  return (listed.body.data as Array<{ data: { object: Record<string, any> } }>).filter((event) => event.data.object.id === orderId);
}
const eventsArrive = (orderId: string, type: string, count: number) =>
  waitFor(async () => ((await orderEvents(orderId, type)).length >= count ? orderEvents(orderId, type) : null), {
    timeoutMs: 20_000,
    description: `${count} ${type} for ${orderId}`,
  });

/** A card purchase paid through localstripe: the session, its order and the intent. */
async function paidPurchase() {
  const id = await newSession();
  expect((await post(`/c/${id}/pay`, cardForm(await browserPaymentMethod('4242424242424242')))).location).toBe(`/c/${id}?done=1`);
  const paid = await paymentStatus(id, 'paid');
  return { orderId: paid.order!, intentId: paid.payment!.transaction_id! };
}

/** The charge of an intent as Stripe's event would carry it. */
async function chargeOf(intentId: string) {
  const auth = { authorization: `Bearer ${FAKE_STRIPE_SECRET_KEY}` };
  const intent = await gaps.intent(intentId);
  const chargeId = typeof intent.latest_charge === 'string' ? intent.latest_charge : intent.latest_charge.id;
  return (await (await fetch(`${gaps.url}/v1/charges/${chargeId}`, { headers: auth })).json()) as Record<string, any>;
}

const refundFromOurSide = (orderId: string, amount?: number) =>
  refundOrder({ db: mongo.db, temporal: temporal.client, taskQueue }, { storeId: store.store._id, orderId, amount, reason: 'requested_by_customer' });

describe('a refund made at Stripe (charge.refunded)', () => {
  test('a whole refund marks the paid order refunded and emits order.refunded once, also when the event comes again', async () => {
    const { orderId, intentId } = await paidPurchase();
    const charge = await refundAtStripe(intentId);
    expect(charge).toMatchObject({ payment_intent: intentId, amount: 19700, amount_refunded: 19700 });
    expect(await chargeRefunded(charge)).toMatchObject({ status: 200 });
    expect(await orderBecomes(orderId, 'refunded')).toMatchObject({ amount_refunded: 19700 });
    expect(await chargeRefunded(charge)).toMatchObject({ status: 200, body: { status: 'repeat' } });
    expect(await eventsArrive(orderId, 'order.refunded', 1)).toHaveLength(1);
  });

  test('a partial refund makes the order partially refunded, then the rest refunded; each refund counted once even when events repeat', async () => {
    const { orderId, intentId } = await paidPurchase();
    const first = await refundAtStripe(intentId, 5000);
    expect(first).toMatchObject({ amount: 19700, amount_refunded: 5000 });
    expect(await chargeRefunded(first)).toMatchObject({ status: 200 });
    expect(await orderBecomes(orderId, 'partially_refunded')).toMatchObject({ amount_refunded: 5000 });
    // The rest, its event without the refunds list (newer API versions): they are read from Stripe.
    const second = await refundAtStripe(intentId, 14700);
    delete second.refunds;
    expect(await chargeRefunded(second)).toMatchObject({ status: 200 });
    expect(await chargeRefunded({ ...first, id: first.id })).toMatchObject({ status: 200, body: { status: 'repeat' } });
    expect(await orderBecomes(orderId, 'refunded')).toMatchObject({ amount_refunded: 19700 });
    expect(await eventsArrive(orderId, 'order.partially_refunded', 1)).toHaveLength(1);
    expect(await eventsArrive(orderId, 'order.refunded', 1)).toHaveLength(1);
    expect((await ordersCollection(mongo.db).findOne({ _id: orderId }))!.refund_entries).toHaveLength(2);
  });
});

describe('a refund started from our side through Stripe', () => {
  test('partial then the rest: POST /v1/refunds keyed, counted once even when Stripe’s charge.refunded for them arrives; a dashboard refund after is counted too', async () => {
    const { orderId, intentId } = await paidPurchase();
    const partial = await refundFromOurSide(orderId, 4000);
    expect(partial).toMatchObject({ status: 'succeeded', order_status: 'partially_refunded', order_amount_refunded: 4000 });
    expect(partial.provider_refund).toMatch(/^re_/);
    const atStripe = await chargeOf(intentId);
    expect(atStripe.amount_refunded).toBe(4000);
    const ours = (atStripe.refunds.data as Array<Record<string, any>>).find((refund) => refund.id === partial.provider_refund)!;
    expect(ours.metadata).toMatchObject({ refund_key: `refund/${partial.id}`, store_id: store.store._id });
    // Stripe tells us of our own refund: it is not counted a second time.
    expect(await chargeRefunded(atStripe)).toMatchObject({ status: 200 });
    // A partial refund at Stripe's dashboard after ours is counted once, by its own id.
    const dashboard = await refundAtStripe(intentId, 1000);
    expect(await chargeRefunded(dashboard)).toMatchObject({ status: 200 });
    await waitFor(async () => ((await ordersCollection(mongo.db).findOne({ _id: orderId }))?.amount_refunded === 5000 ? true : null), {
      description: 'the dashboard refund counted',
    });
    const rest = await refundFromOurSide(orderId);
    expect(rest).toMatchObject({ status: 'succeeded', amount: 14700, order_status: 'refunded', order_amount_refunded: 19700 });
    expect(await chargeRefunded(await chargeOf(intentId))).toMatchObject({ status: 200 });
    const order = (await ordersCollection(mongo.db).findOne({ _id: orderId }))!;
    expect(order).toMatchObject({ status: 'refunded', amount_refunded: 19700 });
    expect(order.refund_entries).toHaveLength(3);
    expect(await eventsArrive(orderId, 'order.partially_refunded', 2)).toHaveLength(2);
    expect(await eventsArrive(orderId, 'order.refunded', 1)).toHaveLength(1);
    expect((await chargeOf(intentId)).amount_refunded).toBe(19700);
  });

  test('a whole refund from our side: the intent refunded at Stripe, the order refunded', async () => {
    const { orderId, intentId } = await paidPurchase();
    expect(await refundFromOurSide(orderId)).toMatchObject({ status: 'succeeded', amount: 19700, order_status: 'refunded' });
    expect(await chargeOf(intentId)).toMatchObject({ amount_refunded: 19700, refunded: true });
    await expect(refundFromOurSide(orderId, 100)).rejects.toMatchObject({ code: 'order_not_refundable' });
  });
});

describe('a chargeback (charge.dispute.created, then .closed)', () => {
  async function disputeEvent(type: string, dispute: Record<string, unknown>, eventId: string) {
    const payload = JSON.stringify({
      id: eventId,
      object: 'event',
      type,
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      data: { object: dispute },
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

  test('opened: the order is charged_back and order.charged_back goes out once; closed lost: the order records the outcome', async () => {
    const { orderId, intentId } = await paidPurchase();
    const charge = await chargeOf(intentId);
    // localstripe has no disputes: the object is Stripe's, as its event carries it.
    const dispute = {
      id: `dp_${intentId.slice(3)}`,
      object: 'dispute',
      amount: 19700,
      currency: 'brl',
      charge: charge.id,
      payment_intent: intentId,
      reason: 'fraudulent',
      status: 'needs_response',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
    };
    expect(await disputeEvent('charge.dispute.created', dispute, `evt_dp_open_${intentId}`)).toMatchObject({
      status: 200,
      body: { status: 'delivered' },
    });
    expect(await ordersCollection(mongo.db).findOne({ _id: orderId })).toMatchObject({
      status: 'charged_back',
      dispute: { id: dispute.id, status: 'needs_response', reason: 'fraudulent', amount: 19700 },
    });
    // The same dispute again under another event id (Stripe's retries keep the id; this is a second event): no second charged_back.
    expect(await disputeEvent('charge.dispute.created', dispute, `evt_dp_open2_${intentId}`)).toMatchObject({ status: 200 });
    expect(await disputeEvent('charge.dispute.closed', { ...dispute, status: 'lost' }, `evt_dp_close_${intentId}`)).toMatchObject({ status: 200 });
    const order = await call(api, store.key, 'GET', `/v1/orders/${orderId}`);
    expect(order.body).toMatchObject({ status: 'charged_back', dispute: { id: dispute.id, status: 'lost', reason: 'fraudulent' } });
    expect(order.body.dispute.closed_at).toBeGreaterThan(0);
    expect(await eventsArrive(orderId, 'order.charged_back', 1)).toHaveLength(1);
    await expect(refundFromOurSide(orderId, 100)).rejects.toMatchObject({ code: 'order_not_refundable' });
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
