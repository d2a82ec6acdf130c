// What this tests: a renewal on a saved card that the bank wants the buyer to confirm (issue 38, point 2's last
// bullet), through the Stripe connection against localstripe behind test/support/stripe-gaps.ts (the gap it fills
// here: an off-session confirm of a card that asks for authentication, 4000 0027 6000 3184, answers Stripe's 402
// `authentication_required`). The renewal is a failed one with its own reason (past_due_details.failure_code), the
// buyer's e-mail at Mailpit carries the portal link, and the payment confirmed there (the page's Stripe.js step,
// then its post) pays the open renewal once; a retry that comes first finds the confirmed payment and charges
// nothing; a retry that comes before any confirmation closes that payment and asks again; Stripe's event alone
// pays it too; a link's Stripe reads are bounded; and in Chromium the page's Stripe.js runs the bank's step.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Worker } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import Stripe from 'stripe';
import { buildApp } from '../../../api/app';
import { loadApiConfig } from '../../../api/config';
import { createStripeConnection } from '../../../adapters/provider/stripe/connection';
import { createStripeClient } from '../../../adapters/provider/stripe/client';
import { intentReader, pagePaymentReader, renewalPaymentReader } from '../../../adapters/provider/stripe/web';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { ensureIndexes } from '../../../store/indexes';
import { ordersCollection } from '../../../store/orders';
import { periodEnd } from '../../../domain/billing-periods';
import { createBillingWorker } from '../../../worker/main';
import { freePort } from '../../../temporal-dev/servers';
import { call, createTestStore, type TestApi, type TestStore } from '../../support/api';
import { createSession, seedCheckoutCatalog, type CheckoutCatalog } from '../../support/checkout-fixtures';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { FAKE_STRIPE_PUBLISHABLE_KEY, FAKE_STRIPE_SECRET_KEY, startLocalstripe, type RunningLocalstripe } from '../../support/stripe-fakes';
import { startStripeGaps, type StripeGaps } from '../../support/stripe-gaps';
import { mailpitMessage, messagesTo } from '../../support/mailpit';
import { launchBrowser, screenshot } from '../../support/browser';
import { RENEWAL_CONFIRMATION_READS_MAX } from '../../../store/renewal-confirmations';

const WEBHOOK_SECRET = 'whsec_renewalauthrenewalauth';
const AUTHENTICATION_CARD = '4000002760003184';
const DAY = 24 * 60 * 60;
const CONFIRM_SUBJECT = 'Confirme seu pagamento: Photography Course';
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
  const taskQueue = uniqueTaskQueue('stripe-renewal-auth');
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
        readRenewalPayment: renewalPaymentReader(client),
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

const v1 = (method: string, path: string, json?: unknown) => call(api, store.key, method, path, json === undefined ? {} : { json });
const stripeAuth = { authorization: `Bearer ${FAKE_STRIPE_SECRET_KEY}` };

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
  return ((await response.json()) as { id: string }).id;
}

async function postForm(path: string, form: Record<string, string>, headers: Record<string, string> = {}) {
  return fetch(`${api.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: api.url, ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

/** The customer replaces the subscription's card in the portal (Stripe.js's pm_, attached to the Stripe customer). */
async function replaceCardInPortal(customer: string, subscription: string, pm: string): Promise<void> {
  const link = await v1('POST', '/v1/billing_portal/sessions', { customer, return_url: 'https://shop.example.com' });
  const linkPath = new URL(link.body.url as string).pathname;
  const signedIn = await fetch(`${api.url}${linkPath}`, { method: 'POST', redirect: 'manual', headers: { origin: api.url } });
  const cookie = signedIn.headers.get('set-cookie')!.split(';')[0];
  const account = new URL(signedIn.headers.get('location')!, api.url).pathname;
  const csrf = /name="csrf" value="([^"]+)"/.exec(await (await fetch(`${api.url}${account}`, { headers: { cookie } })).text())![1];
  const replaced = await postForm(`${account}/subscriptions/${subscription}/card`, { csrf, payment_method: pm }, { cookie });
  expect(replaced.headers.get('location')).toBe(`${account}?done=card`);
}

interface PastDue {
  subscription: string;
  clock: string;
  end: number;
  email: string;
  intent: string;
  orderId: string;
  /** The path of the e-mailed confirmation link. */
  linkPath: string;
}

/** Intents made for the subscription's renewals (charge keys renewal/<sub>/…), as Stripe holds them. */
async function renewalIntents(subscription: string): Promise<Array<Record<string, any>>> {
  const listed = (await (await fetch(`${gaps.url}/v1/payment_intents?limit=100`, { headers: stripeAuth })).json()) as {
    data: Array<Record<string, any>>;
  };
  return listed.data.filter((intent) => String(intent.metadata?.charge_key ?? '').startsWith(`renewal/${subscription}/`));
}

const clockReady = (clock: string) =>
  waitFor(async () => (await v1('GET', `/v1/test_helpers/test_clocks/${clock}`)).body.status === 'ready', { description: 'the clock ready' });

/** Moves the test clock on once its last advance has finished (an advance under way is refused), and waits for this one. */
async function advance(clock: string, to: number): Promise<void> {
  await clockReady(clock);
  const moved = await v1('POST', `/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: to });
  expect(moved.body).toMatchObject({ id: clock });
  await clockReady(clock);
}

const subscriptionNow = async (id: string) => (await v1('GET', `/v1/subscriptions/${id}`)).body;

/** A subscription bought on a test clock with 4242, its card replaced by the authentication card, renewed at period end: past_due. */
async function renewalAskingAuthentication(label: string): Promise<PastDue> {
  const t0 = Math.floor(Date.now() / 1000);
  const clock = (await v1('POST', '/v1/test_helpers/test_clocks', { frozen_time: t0 })).body.id as string;
  const email = `${label}-${Date.now()}@example.com`;
  const customer = await v1('POST', '/v1/customers', {
    email,
    name: 'Ana Confirma',
    phone: '+5511999990000',
    document: { type: 'cpf', number: '529.982.247-25' },
    test_clock: clock,
  });
  expect(customer.body).toMatchObject({ id: expect.stringMatching(/^cust_/) });
  const created = await createSession(api, store, { offer: catalog.monthly._id, customer: customer.body.id });
  expect(created.status).toBe(201);
  const session = created.body.id as string;
  const paid = await postForm(`/c/${session}/pay`, {
    payment_method: await browserPaymentMethod('4242424242424242'),
    method: 'card',
    currency: 'brl',
  });
  expect(paid.headers.get('location')).toBe(`/c/${session}?done=1`);
  const subscription = await waitFor(async () => (await findCheckoutSession(mongo.db, store.store._id, session))?.subscription ?? null, {
    description: 'the subscription',
  });
  await replaceCardInPortal(customer.body.id, subscription, await browserPaymentMethod(AUTHENTICATION_CARD));
  const end = periodEnd(t0, 'monthly', null);
  await advance(clock, end + 3600);
  const pastDue = await waitFor(
    async () => {
      const sub = await subscriptionNow(subscription);
      return sub.status === 'past_due' ? sub : null;
    },
    { timeoutMs: 60_000, description: 'the renewal declined: past_due' },
  );
  const order = (await ordersCollection(mongo.db).findOne({ subscription, billing_reason: 'renewal' }))!;
  // The store is Brazilian: the buyer's e-mail is in Portuguese.
  const mail = await waitFor(async () => (await messagesTo(email)).find((m) => m.Subject.startsWith(CONFIRM_SUBJECT)) ?? null, {
    description: 'the confirmation e-mail at Mailpit',
  });
  const text = (await mailpitMessage(mail.ID)).Text;
  const link = /https?:\/\/\S+\/payments\/[A-Za-z0-9_-]+/.exec(text)![0];
  expect(pastDue.past_due_details).toMatchObject({ attempts: 1, failure_code: 'authentication_required' });
  // The attempt to confirm (its pi_ and key) stays inside: the API shows the reason only.
  expect(pastDue.past_due_details).not.toHaveProperty('authentication');
  return { subscription, clock, end, email, intent: order.provider_transaction_id!, orderId: order._id, linkPath: new URL(link).pathname };
}

/** The bank's 3-D Secure step as the fake Stripe.js runs it for confirmCardPayment (→ _authenticate). */
async function bankStep(intent: string, clientSecret: string): Promise<number> {
  const response = await fetch(`${gaps.url}/v1/payment_intents/${intent}/_authenticate?success=true`, {
    method: 'POST',
    body: JSON.stringify({ key: FAKE_STRIPE_PUBLISHABLE_KEY, client_secret: clientSecret }),
  });
  return response.status;
}

/** Stripe's signed payment_intent.succeeded for the intent as Stripe holds it now. */
async function intentSucceededEvent(intent: string): Promise<number> {
  const payload = JSON.stringify({
    id: `evt_renewal_${intent}`,
    object: 'event',
    type: 'payment_intent.succeeded',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    data: { object: await gaps.intent(intent) },
  });
  const event = await fetch(`${api.url}/providers/stripe/events`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
    },
    body: payload,
  });
  return event.status;
}

async function confirmationPage(linkPath: string) {
  const response = await fetch(`${api.url}${linkPath}`);
  const text = await response.text();
  return {
    status: response.status,
    state: /data-testid="renewal-confirmation" data-state="(\w+)"/.exec(text)?.[1] ?? null,
    clientSecret: /data-client-secret="([^"]+)"/.exec(text)?.[1] ?? null,
    paymentMethod: /data-payment-method="([^"]+)"/.exec(text)?.[1] ?? null,
    text,
  };
}

/** The store's events telling the order was paid (invoice.paid), as GET /v1/events lists them. */
async function paidEvents(orderId: string): Promise<number> {
  const listed = await v1('GET', '/v1/events?limit=100');
  const events = listed.body.data as Array<{ type: string; data: { object: { id: string; status: string } } }>;
  return events.filter((event) => event.data.object.id === orderId && event.data.object.status === 'paid').length;
}

describe('a renewal the bank asks the buyer to confirm (authentication_required off session)', () => {
  test('past_due with its reason, an e-mail with the portal link; confirmed there, the same payment pays the renewal once', async () => {
    const due = await renewalAskingAuthentication('confirm');
    const order = await ordersCollection(mongo.db).findOne({ _id: due.orderId });
    expect(order).toMatchObject({ status: 'failed', provider_transaction_id: expect.stringMatching(/^pi_/) });
    expect(await gaps.intent(due.intent)).toMatchObject({
      status: 'requires_payment_method',
      last_payment_error: { code: 'authentication_required' },
    });

    const page = await confirmationPage(due.linkPath);
    expect(page).toMatchObject({ status: 200, state: 'open' });
    expect(page.clientSecret).toMatch(new RegExp(`^${due.intent}_secret_`));
    expect(page.paymentMethod).toMatch(/^pm_/);
    expect(page.text).toContain(`src="${gaps.jsUrl}"`);

    // The page's Stripe.js runs the bank's step on that same intent, then posts the form.
    expect(await bankStep(due.intent, page.clientSecret!)).toBe(200);
    const posted = await postForm(due.linkPath, {});
    expect(posted.status).toBe(303);
    const active = await waitFor(
      async () => {
        const sub = await subscriptionNow(due.subscription);
        return sub.status === 'active' ? sub : null;
      },
      { description: 'the subscription active again' },
    );
    expect(active).toMatchObject({ past_due_details: null, cycles_completed: 2 });
    expect(await ordersCollection(mongo.db).findOne({ _id: due.orderId })).toMatchObject({ status: 'paid' });
    expect((await confirmationPage(due.linkPath)).state).toBe('confirmed');

    // Stripe's own event for it comes later: nothing changes, the order's invoice.paid stays one.
    expect(await intentSucceededEvent(due.intent)).toBe(200);
    // The first retry's time passes: nothing is charged again.
    await advance(due.clock, due.end + 2 * DAY);
    expect(await subscriptionNow(due.subscription)).toMatchObject({ status: 'active', cycles_completed: 2 });
    expect(await renewalIntents(due.subscription)).toHaveLength(1);
    expect(await paidEvents(due.orderId)).toBe(1);
  });

  test('the buyer confirmed at the bank but no notice arrived: the next dunning retry finds that payment and charges nothing', async () => {
    const due = await renewalAskingAuthentication('lost-notice');
    const page = await confirmationPage(due.linkPath);
    expect(await bankStep(due.intent, page.clientSecret!)).toBe(200);
    // Neither the page's post nor Stripe's event reaches us; the retry (1 day after the failure) comes first.
    await advance(due.clock, due.end + 3600 + DAY + 60);
    await waitFor(async () => (await subscriptionNow(due.subscription)).status === 'active', {
      timeoutMs: 60_000,
      description: 'active after the retry',
    });
    expect(await ordersCollection(mongo.db).findOne({ _id: due.orderId })).toMatchObject({ status: 'paid' });
    const intents = await renewalIntents(due.subscription);
    expect(intents.map((intent) => intent.status)).toEqual(['succeeded']);
    expect(await paidEvents(due.orderId)).toBe(1);
  });

  test('a retry before any confirmation closes that payment at Stripe (the buyer can no longer confirm it) and asks again', async () => {
    const due = await renewalAskingAuthentication('retry-first');
    const page = await confirmationPage(due.linkPath);
    expect(page.state).toBe('open');
    await advance(due.clock, due.end + 3600 + DAY + 60);
    const retried = await waitFor(
      async () => {
        const sub = await subscriptionNow(due.subscription);
        return sub.past_due_details?.attempts === 2 ? sub : null;
      },
      { timeoutMs: 60_000, description: 'the retry declined too' },
    );
    expect(retried.past_due_details).toMatchObject({ failure_code: 'authentication_required' });
    expect(await gaps.intent(due.intent)).toMatchObject({ status: 'canceled' });
    // The buyer's late bank step on the closed payment fails at Stripe: nothing is charged by it.
    expect(await bankStep(due.intent, page.clientSecret!)).not.toBe(200);
    expect((await confirmationPage(due.linkPath)).state).toBe('closed');
    const intents = await renewalIntents(due.subscription);
    expect(intents.map((intent) => intent.status).sort()).toEqual(['canceled', 'requires_payment_method']);
    // The new attempt has its own e-mail and link.
    await waitFor(async () => (await messagesTo(due.email)).filter((m) => m.Subject.startsWith(CONFIRM_SUBJECT)).length === 2, {
      description: 'a second confirmation e-mail',
    });
  });

  test("Stripe's payment_intent.succeeded alone (the page never posted) pays the open renewal", async () => {
    const due = await renewalAskingAuthentication('event-only');
    const page = await confirmationPage(due.linkPath);
    expect(await bankStep(due.intent, page.clientSecret!)).toBe(200);
    expect(await intentSucceededEvent(due.intent)).toBe(200);
    await waitFor(async () => (await subscriptionNow(due.subscription)).status === 'active', { description: 'active by the event' });
    expect(await ordersCollection(mongo.db).findOne({ _id: due.orderId })).toMatchObject({ status: 'paid' });
    expect(await renewalIntents(due.subscription)).toHaveLength(1);
  });

  test(`a link reads Stripe at most ${RENEWAL_CONFIRMATION_READS_MAX} times; an unknown token or another address reads nothing`, async () => {
    const due = await renewalAskingAuthentication('bounded');
    for (let read = 0; read < RENEWAL_CONFIRMATION_READS_MAX; read++) expect((await confirmationPage(due.linkPath)).state).toBe('open');
    const spent = await fetch(`${api.url}${due.linkPath}`);
    expect(spent.status).toBe(429);
    expect(spent.headers.get('retry-after')).toBeTruthy();
    expect((await postForm(due.linkPath, {})).status).toBe(429);
    const unknown = due.linkPath.replace(/[^/]+$/, 'not-a-token');
    expect((await fetch(`${api.url}${unknown}`)).status).toBe(410);
    // Another store's address with this store's token: not this store's link.
    const other = await createTestStore(mongo.db);
    expect((await fetch(`${api.url}${due.linkPath.replace(/\/portal\/[^/]+\//, `/portal/${other.store.slug}/`)}`)).status).toBe(410);
    // A post from another site is refused before anything is read.
    expect((await postForm(due.linkPath, {}, { origin: 'https://evil.example' })).status).toBe(410);
  });

  test('in Chromium: the e-mailed link opens the page, its Stripe.js runs the bank’s step, and the renewal is paid', async () => {
    const due = await renewalAskingAuthentication('browser');
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      const posted: string[] = [];
      page.on('request', (request) => {
        if (request.url().startsWith(api.url) && request.method() === 'POST') posted.push(request.postData() ?? '');
      });
      await page.goto(`${api.url}${due.linkPath}`);
      await page.getByTestId('confirm-payment').click();
      await page.getByRole('button', { name: 'Complete authentication' }).click({ timeout: 30_000 });
      await page.getByTestId('confirmed').waitFor({ timeout: 30_000 });
      await screenshot(page, 'stripe-renewal-authentication-confirmed');
      expect(posted.join('\n')).not.toContain('secret');
    } finally {
      await browser.close();
    }
    await waitFor(async () => (await subscriptionNow(due.subscription)).status === 'active', { description: 'active after the page' });
    expect(await ordersCollection(mongo.db).findOne({ _id: due.orderId })).toMatchObject({ status: 'paid' });
    expect(await renewalIntents(due.subscription)).toHaveLength(1);
  });
});
