// What this tests: every method of the Stripe connection against stripe-mock, Stripe's official mock, which
// answers 400 to any request its copy of Stripe's OpenAPI refuses (an unknown or misspelled parameter, a
// wrong type): each exchange must be accepted. A recording proxy in front of it (test/support) checks what
// stripe-mock does not echo: the store-scoped Idempotency-Key on every POST, Stripe-Account for a store with a
// connected account, metadata.charge_key; it also gives stateless answers the state a path needs (an intent
// found by its key, a 3-D Secure status, a PIX code). Shape only: stateful flows are localstripe's.
import Stripe from 'stripe';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PaymentProvider } from '../../../adapters/provider/types';
import { createStripeConnection } from '../../../adapters/provider/stripe/connection';
import { LOOKUP_LIST_PAGES } from '../../../adapters/provider/stripe/lookup';
import { createStripeClient } from '../../../adapters/provider/stripe/client';
import { REFUND_LOOKUP_PAGES } from '../../../adapters/provider/stripe/refunds';
import { chargeRefundsReader, renewalPaymentReader } from '../../../adapters/provider/stripe/web';
import { InjectedAnswer, startHttpRecorder, type HttpRecorder, type RecordedExchange } from '../../support/http-recorder';
import { FAKE_STRIPE_SECRET_KEY, startStripeMock, type RunningStripeFake } from '../../support/stripe-fakes';
import { waitFor } from '../../support/env';

const CONNECTED_STORE = 'st_connected';
const PLATFORM_STORE = 'st_platform';
const ACCOUNT = 'acct_1ContractTest00';

let mock: RunningStripeFake;
let recorder: HttpRecorder;
let stripe: PaymentProvider;
let seq = 0;
const newKey = () => `checkout/cs_contract${Date.now().toString(36)}${++seq}/1`;

beforeAll(async () => {
  mock = await startStripeMock();
  recorder = await startHttpRecorder(mock.url);
  stripe = createStripeConnection({
    config: { secretKey: FAKE_STRIPE_SECRET_KEY, apiUrl: recorder.url, livemode: false },
    accountOf: async (storeId) => (storeId === CONNECTED_STORE ? ACCOUNT : null),
  });
});
afterAll(async () => {
  await recorder?.close();
  await mock?.stop();
});
afterEach(() => {
  recorder.setRewrite(null);
  recorder.clear();
});

/** Every exchange so far was accepted by stripe-mock's OpenAPI validation; returns them. */
function accepted(): RecordedExchange[] {
  for (const exchange of recorder.exchanges) {
    expect(exchange.status, `${exchange.method} ${exchange.path} ${exchange.form.toString()}: ${exchange.response}`).toBeLessThan(400);
  }
  expect(recorder.exchanges.length).toBeGreaterThan(0);
  return recorder.exchanges;
}

const only = (method: string, path: string | RegExp) =>
  recorder.exchanges.filter((e) => e.method === method && (typeof path === 'string' ? e.path === path : path.test(e.path)));

/** Each POST keyed (store-scoped) and each request on the connected account when the store has one. */
function expectKeyedOnAccount(storeId: string, account: string | undefined): void {
  for (const exchange of accepted()) {
    expect(exchange.headers['stripe-account'], `${exchange.method} ${exchange.path}`).toBe(account);
    if (exchange.method === 'POST') expect(exchange.headers['idempotency-key'], exchange.path).toMatch(new RegExp(`^${storeId}/`));
  }
}

/** Our metadata on an intent found by search, so a lookup finds it (stripe-mock answers a fixed fixture). */
function intentsFoundAs(storeId: string, key: string, fields: Record<string, unknown>): void {
  recorder.setRewrite((sent, json) => {
    // A cancel Stripe makes answers the intent canceled (stripe-mock's fixture keeps another status).
    if (sent.method === 'POST' && /^\/v1\/(payment|setup)_intents\/[^/]+\/cancel$/.test(sent.path))
      return { ...(json as object), status: 'canceled' };
    const answer = json as { data?: Record<string, unknown>[] };
    if (sent.path !== '/v1/payment_intents/search' || !answer.data) return json;
    return {
      ...answer,
      data: answer.data.slice(0, 1).map((intent) => ({ ...intent, metadata: { charge_key: key, store_id: storeId, kind: 'card' }, ...fields })),
    };
  });
}

describe('customers', () => {
  it('registerCustomer sends name, e-mail, phone, CPF as br_cpf and our ids, keyed and on the connected account', async () => {
    const registered = await stripe.registerCustomer({
      storeId: CONNECTED_STORE,
      customerId: 'cust_contract1',
      email: 'buyer@example.com',
      name: 'Ana Souza',
      phone: '+5511987654321',
      document: { type: 'cpf', number: '52998224725' },
    });
    expect(registered).toMatchObject({ ok: true, providerCustomerId: expect.stringMatching(/^cus_/) });
    const [create] = only('POST', '/v1/customers');
    expect(Object.fromEntries(create.form)).toMatchObject({
      email: 'buyer@example.com',
      name: 'Ana Souza',
      phone: '+5511987654321',
      'tax_id_data[0][type]': 'br_cpf',
      'tax_id_data[0][value]': '529.982.247-25',
      'metadata[store_id]': CONNECTED_STORE,
      'metadata[customer_id]': 'cust_contract1',
    });
    expect(create.headers['idempotency-key']).toBe(`${CONNECTED_STORE}/customer/cust_contract1`);
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
  });

  it('a store without a connected account calls on the platform account (no Stripe-Account header)', async () => {
    await stripe.registerCustomer({ storeId: PLATFORM_STORE, customerId: 'cust_contract2', email: 'b@example.com', name: null });
    expectKeyedOnAccount(PLATFORM_STORE, undefined);
  });
});

describe('saved cards and unattended charges', () => {
  it("saveCard attaches Stripe.js's pm_ to the customer and makes it the default; a card number is refused before any request", async () => {
    const saved = await stripe.saveCard({
      storeId: CONNECTED_STORE,
      customerId: 'cust_1',
      providerCustomerId: 'cus_contract',
      cardToken: 'pm_contract',
    });
    expect(saved).toMatchObject({ ok: true, card: { paymentMethodId: expect.stringMatching(/^pm_/), type: 'card', chargeable: true } });
    expect(Object.fromEntries(only('POST', '/v1/payment_methods/pm_contract/attach')[0].form)).toEqual({ customer: 'cus_contract' });
    expect(Object.fromEntries(only('POST', '/v1/customers/cus_contract')[0].form)).toMatchObject({
      'invoice_settings[default_payment_method]': expect.stringMatching(/^pm_/),
    });
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
    recorder.clear();
    const raw = await stripe.saveCard({ storeId: CONNECTED_STORE, customerId: 'cust_1', card: { number: '4242424242424242' } });
    expect(raw).toMatchObject({ ok: false, code: 'card_fields_required' });
    expect(recorder.exchanges).toHaveLength(0);
  });

  it('a card Stripe declines while saving is refused with its decline code; a refused request with its error code, never as a decline', async () => {
    const attach = '/v1/payment_methods/pm_contract/attach';
    const save = () =>
      stripe.saveCard({ storeId: PLATFORM_STORE, customerId: 'cust_1', providerCustomerId: 'cus_contract', cardToken: 'pm_contract' });
    recorder.setRewrite((sent, json) =>
      sent.path === attach
        ? new InjectedAnswer(402, { error: { type: 'card_error', code: 'card_declined', decline_code: 'do_not_honor', message: 'Declined.' } })
        : json,
    );
    expect(await save()).toEqual({ ok: false, code: 'do_not_honor', message: 'Declined.' });
    recorder.setRewrite((sent, json) =>
      sent.path === attach
        ? new InjectedAnswer(400, { error: { type: 'invalid_request_error', code: 'resource_missing', message: 'No such PaymentMethod' } })
        : json,
    );
    expect(await save()).toEqual({ ok: false, code: 'resource_missing', message: 'No such PaymentMethod' });
    recorder.setRewrite((sent, json) =>
      sent.path === attach ? new InjectedAnswer(400, { error: { type: 'invalid_request_error', message: 'Bad request' } }) : json,
    );
    expect(await save()).toEqual({ ok: false, code: 'provider_error', message: 'Bad request' });
    accepted();
  });

  it("chargeSavedCard confirms off_session on the card's customer under the charge key, with metadata.charge_key", async () => {
    recorder.setRewrite((sent, json) => (sent.path.startsWith('/v1/payment_methods/') ? { ...(json as object), customer: 'cus_contract' } : json));
    const key = newKey();
    const outcome = await stripe.chargeSavedCard({
      storeId: CONNECTED_STORE,
      idempotencyKey: key,
      paymentMethodId: 'pm_saved',
      amount: 4990,
      currency: 'brl',
      description: 'Renewal',
      notifyRef: 'subscription/sub_1',
    });
    expect(outcome.transactionId).toMatch(/^pi_/);
    const [create] = only('POST', '/v1/payment_intents');
    expect(Object.fromEntries(create.form)).toMatchObject({
      amount: '4990',
      currency: 'brl',
      customer: 'cus_contract',
      payment_method: expect.stringMatching(/^pm_/),
      'allowed_payment_method_types[0]': 'card',
      off_session: 'true',
      confirm: 'true',
      description: 'Renewal',
      'metadata[charge_key]': key,
      'metadata[store_id]': CONNECTED_STORE,
      'metadata[kind]': 'saved_card',
      'metadata[notify_ref]': 'subscription/sub_1',
    });
    expect(create.headers['idempotency-key']).toBe(`${CONNECTED_STORE}/${key}`);
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
  });
});

describe('the buyer present', () => {
  const charge = (key: string) =>
    stripe.chargeCard({
      storeId: CONNECTED_STORE,
      idempotencyKey: key,
      cardToken: 'pm_from_stripe_js',
      amount: 30000,
      currency: 'brl',
      description: 'Course',
      installments: 3,
      saveCard: true,
      customerId: 'cust_1',
      providerCustomerId: 'cus_contract',
      notifyRef: 'checkout-session/cs_1',
    });

  it('chargeCard confirms the pm_ with BRL installments and off_session saving; 3-D Secure answers action_required with the client secret', async () => {
    recorder.setRewrite((sent, json) =>
      sent.path === '/v1/payment_intents' ? { ...(json as object), status: 'requires_action', client_secret: 'pi_3ds_secret_x' } : json,
    );
    const key = newKey();
    const outcome = await charge(key);
    expect(outcome).toMatchObject({
      status: 'action_required',
      transactionId: expect.stringMatching(/^pi_/),
      clientSecret: 'pi_3ds_secret_x',
      card: null,
    });
    expect(Object.fromEntries(only('POST', '/v1/payment_intents')[0].form)).toMatchObject({
      payment_method: 'pm_from_stripe_js',
      customer: 'cus_contract',
      confirm: 'true',
      use_stripe_sdk: 'true',
      setup_future_usage: 'off_session',
      'payment_method_options[card][installments][enabled]': 'true',
      'payment_method_options[card][installments][plan][count]': '3',
      'payment_method_options[card][installments][plan][interval]': 'month',
      'payment_method_options[card][installments][plan][type]': 'fixed_count',
      'metadata[charge_key]': key,
      'metadata[kind]': 'card',
      'expand[0]': 'payment_method',
    });
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
  });

  it("an approved charge that keeps the card makes it the customer's default, keyed by the charge", async () => {
    recorder.setRewrite((sent, json) =>
      sent.path === '/v1/payment_intents'
        ? {
            ...(json as object),
            status: 'succeeded',
            setup_future_usage: 'off_session',
            payment_method: { id: 'pm_from_stripe_js', object: 'payment_method', card: { brand: 'visa', last4: '4242' } },
          }
        : json,
    );
    const key = newKey();
    expect(await charge(key)).toMatchObject({
      status: 'approved',
      card: { paymentMethodId: 'pm_from_stripe_js', brand: 'visa', last4: '4242', chargeable: true },
    });
    const [setDefault] = only('POST', '/v1/customers/cus_contract');
    expect(setDefault.headers['idempotency-key']).toBe(`${CONNECTED_STORE}/${key}#default-card`);
    expect(setDefault.form.get('invoice_settings[default_payment_method]')).toBe('pm_from_stripe_js');
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
  });

  it('the installment plan an approved BRL charge carries is the one Stripe confirmed: read from its answer, absent when Stripe confirmed none', async () => {
    const plan = { count: 3, interval: 'month', type: 'fixed_count' };
    recorder.setRewrite((sent, json) =>
      sent.path === '/v1/payment_intents'
        ? { ...(json as object), status: 'succeeded', payment_method_options: { card: { installments: { enabled: true, plan } } } }
        : json,
    );
    const confirmed = await charge(newKey());
    expect(confirmed).toMatchObject({ status: 'approved', installments: 3 });
    expect(only('POST', '/v1/payment_intents')[0].form.get('payment_method_options[card][installments][plan][count]')).toBe('3');
    // Asked for 3, but Stripe's answer holds no plan (the card or account cannot): charged in full, and the outcome says so.
    recorder.setRewrite((sent, json) =>
      sent.path === '/v1/payment_intents'
        ? { ...(json as object), status: 'succeeded', payment_method_options: { card: { installments: null } } }
        : json,
    );
    const inFull = await charge(newKey());
    expect(inFull.status).toBe('approved');
    expect(inFull).not.toHaveProperty('installments');
  });

  it('a USD charge never asks Stripe for an installment plan, and its connection offers none', async () => {
    const key = newKey();
    await stripe.chargeCard({
      storeId: CONNECTED_STORE,
      idempotencyKey: key,
      cardToken: 'pm_from_stripe_js',
      amount: 3900,
      currency: 'usd',
      description: null,
      installments: 3,
    });
    const [create] = only('POST', '/v1/payment_intents');
    expect([...create.form.keys()].some((name) => name.includes('installments'))).toBe(false);
    expect(stripe.installmentsAvailable('usd')).toBe(false);
    expect(stripe.installmentsAvailable('BRL')).toBe(true);
  });

  it('createPix asks for a PIX intent and shows its QR code, copy-paste code and expiry; an answer without a code is never read as refused', async () => {
    recorder.setRewrite((sent, json) =>
      sent.path === '/v1/payment_intents'
        ? {
            ...(json as object),
            status: 'requires_action',
            next_action: {
              type: 'pix_display_qr_code',
              pix_display_qr_code: { data: '00020126pix', expires_at: 1_900_000_000, image_url_png: 'https://qr.example/x.png' },
            },
          }
        : json,
    );
    const key = newKey();
    const pix = await stripe.createPix({
      storeId: CONNECTED_STORE,
      idempotencyKey: key,
      amount: 1500,
      currency: 'brl',
      description: null,
      notifyRef: 'checkout-session/cs_2',
    });
    expect(pix).toEqual({
      status: 'pending',
      transactionId: expect.stringMatching(/^pi_/),
      copyPaste: '00020126pix',
      expiresAt: 1_900_000_000,
      qrImageUrl: 'https://qr.example/x.png',
    });
    expect(Object.fromEntries(only('POST', '/v1/payment_intents')[0].form)).toMatchObject({
      'allowed_payment_method_types[0]': 'pix',
      'payment_method_data[type]': 'pix',
      'payment_method_options[pix][expires_after_seconds]': '1800',
      confirm: 'true',
      'metadata[kind]': 'pix',
      'metadata[charge_key]': key,
    });
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
    recorder.setRewrite(null);
    await expect(
      stripe.createPix({ storeId: CONNECTED_STORE, idempotencyKey: newKey(), amount: 1500, currency: 'brl', description: null }),
    ).rejects.toThrow(/without its QR code/);
  });

  it('a charge whose activity gave up stops its request: the call fails as unknown and the provider never gets it', async () => {
    const release = recorder.hold();
    const controller = new AbortController();
    const pending = stripe.chargeCard({
      storeId: PLATFORM_STORE,
      idempotencyKey: newKey(),
      cardToken: 'pm_x',
      amount: 100,
      currency: 'brl',
      description: null,
      signal: controller.signal,
    });
    await waitFor(() => recorder.inFlight() === 1, { timeoutMs: 10_000, description: 'the charge to reach the recorder' });
    controller.abort();
    // Stripe's client reports a stopped request as a connection error: unknown, retried under the same key.
    await expect(pending).rejects.toBeInstanceOf(Stripe.errors.StripeConnectionError);
    await waitFor(() => recorder.inFlight() === 0, { timeoutMs: 10_000, description: 'the given-up request to close' });
    release();
    expect(recorder.exchanges).toHaveLength(0);
    await expect(
      stripe.chargeCard({
        storeId: PLATFORM_STORE,
        idempotencyKey: newKey(),
        cardToken: 'pm_x',
        amount: 100,
        currency: 'brl',
        description: null,
        signal: controller.signal,
      }),
    ).rejects.toThrow();
    expect(recorder.exchanges).toHaveLength(0);
  });
});

describe('a free trial’s card (SetupIntent)', () => {
  const setup = (key: string) =>
    stripe.setupCard({
      storeId: CONNECTED_STORE,
      idempotencyKey: key,
      cardToken: 'pm_from_stripe_js',
      customerId: 'cust_1',
      providerCustomerId: 'cus_contract',
      notifyRef: 'checkout-session/cs_1',
    });

  it('setupCard confirms a SetupIntent for off-session use, keyed; succeeded makes the card the customer’s default', async () => {
    recorder.setRewrite((sent, json) =>
      sent.path === '/v1/setup_intents'
        ? {
            ...(json as object),
            status: 'succeeded',
            payment_method: { id: 'pm_from_stripe_js', object: 'payment_method', card: { brand: 'visa', last4: '3155' } },
          }
        : json,
    );
    const key = newKey();
    expect(await setup(key)).toMatchObject({ status: 'saved', card: { paymentMethodId: 'pm_from_stripe_js', last4: '3155', chargeable: true } });
    const [created] = only('POST', '/v1/setup_intents');
    expect(Object.fromEntries(created.form)).toMatchObject({
      customer: 'cus_contract',
      payment_method: 'pm_from_stripe_js',
      'allowed_payment_method_types[0]': 'card',
      usage: 'off_session',
      confirm: 'true',
      use_stripe_sdk: 'true',
      'metadata[charge_key]': key,
      'metadata[store_id]': CONNECTED_STORE,
      'metadata[kind]': 'setup',
      'expand[0]': 'payment_method',
    });
    expect(created.headers['idempotency-key']).toBe(`${CONNECTED_STORE}/${key}`);
    const [defaulted] = only('POST', '/v1/customers/cus_contract');
    expect(defaulted.headers['idempotency-key']).toBe(`${CONNECTED_STORE}/${key}#default-card`);
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
  });

  it('a bank that asks answers action_required with the SetupIntent’s client secret; readSetup and the fence read it by id', async () => {
    recorder.setRewrite((sent, json) =>
      sent.path.startsWith('/v1/setup_intents')
        ? {
            ...(json as object),
            status: 'requires_action',
            client_secret: 'seti_x_secret_y',
            metadata: { store_id: CONNECTED_STORE, charge_key: 'k' },
          }
        : json,
    );
    const key = newKey();
    const outcome = await setup(key);
    expect(outcome).toMatchObject({ status: 'action_required', setupId: expect.stringMatching(/^seti_/), clientSecret: 'seti_x_secret_y' });
    const setupId = (outcome as { setupId: string }).setupId;
    expect(await stripe.readSetup({ storeId: CONNECTED_STORE, setupId })).toMatchObject({ status: 'action_required' });
    expect(await stripe.getTransaction({ storeId: CONNECTED_STORE, transactionId: setupId })).toMatchObject({ state: 'action_required' });
    expect(await stripe.cancelPending({ storeId: CONNECTED_STORE, chargeKey: key, transactionId: setupId })).toMatchObject({ status: 'canceled' });
    const [cancel] = only('POST', /^\/v1\/setup_intents\/seti_[^/]+\/cancel$/);
    expect(cancel.headers['idempotency-key']).toBe(`${CONNECTED_STORE}/${key}#cancel`);
    expect(cancel.form.get('cancellation_reason')).toBe('abandoned');
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
  });

  it('a card the bank declines at setup is a decline with its code', async () => {
    recorder.setRewrite((sent, json) =>
      sent.path === '/v1/setup_intents'
        ? new InjectedAnswer(402, {
            error: { type: 'card_error', code: 'card_declined', decline_code: 'insufficient_funds', message: 'Your card has insufficient funds.' },
          })
        : json,
    );
    expect(await setup(newKey())).toMatchObject({ status: 'declined', code: 'insufficient_funds' });
  });
});

describe("Stripe's answers read as outcomes", () => {
  /** Stripe's answer `status` with `error` to the first POST of `path`, after stripe-mock accepted the request. */
  const failWith = (path: string, status: number, error: Record<string, unknown>) =>
    recorder.setRewrite((sent, json) => (sent.method === 'POST' && sent.path === path ? new InjectedAnswer(status, { error }) : json));
  const failedIntent = (id: string) => ({
    id,
    object: 'payment_intent',
    status: 'requires_payment_method',
    amount: 100,
    currency: 'brl',
    metadata: {},
  });
  const card = (key: string) => ({
    storeId: PLATFORM_STORE,
    idempotencyKey: key,
    cardToken: 'pm_x',
    amount: 100,
    currency: 'brl',
    description: null,
  });

  it("a card error is a decline on the intent with Stripe's decline_code", async () => {
    failWith('/v1/payment_intents', 402, {
      type: 'card_error',
      code: 'card_declined',
      decline_code: 'insufficient_funds',
      message: 'Your card has insufficient funds.',
      payment_intent: failedIntent('pi_declined'),
    });
    expect(await stripe.chargeCard(card(newKey()))).toEqual({
      status: 'declined',
      transactionId: 'pi_declined',
      code: 'insufficient_funds',
      message: 'Your card has insufficient funds.',
      card: null,
    });
    accepted();
  });

  it('an unattended charge the card wants authenticated (authentication_required) is a decline', async () => {
    recorder.setRewrite((sent, json) => {
      if (sent.path.startsWith('/v1/payment_methods/')) return { ...(json as object), customer: 'cus_contract' };
      if (sent.path !== '/v1/payment_intents') return json;
      const error = {
        type: 'card_error',
        code: 'authentication_required',
        message: 'This payment requires authentication.',
        payment_intent: failedIntent('pi_auth'),
      };
      return new InjectedAnswer(402, { error });
    });
    const outcome = await stripe.chargeSavedCard({
      storeId: PLATFORM_STORE,
      idempotencyKey: newKey(),
      paymentMethodId: 'pm_saved',
      amount: 100,
      currency: 'brl',
      description: null,
    });
    expect(outcome).toMatchObject({ status: 'declined', transactionId: 'pi_auth', code: 'authentication_required' });
    accepted();
  });

  it('a request Stripe refuses before any card is refused with no transaction; a 5xx throws (unknown, never nothing charged)', async () => {
    failWith('/v1/payment_intents', 400, {
      type: 'invalid_request_error',
      code: 'resource_missing',
      message: 'No such PaymentMethod',
      param: 'payment_method',
    });
    expect(await stripe.chargeCard(card(newKey()))).toMatchObject({ status: 'refused', transactionId: null, code: 'provider_error' });
    failWith('/v1/payment_intents', 500, { type: 'api_error', message: 'An unknown error occurred' });
    await expect(stripe.chargeCard(card(newKey()))).rejects.toBeInstanceOf(Stripe.errors.StripeAPIError);
    await expect(
      stripe.createPix({ storeId: PLATFORM_STORE, idempotencyKey: newKey(), amount: 100, currency: 'brl', description: null }),
    ).rejects.toBeInstanceOf(Stripe.errors.StripeAPIError);
    accepted();
  });

  it("a customer Stripe refuses is registerCustomer's {ok:false} with Stripe's reason", async () => {
    failWith('/v1/customers', 400, {
      type: 'invalid_request_error',
      code: 'tax_id_invalid',
      message: 'Invalid value for br_cpf.',
      param: 'tax_id_data[0][value]',
    });
    const refused = await stripe.registerCustomer({
      storeId: PLATFORM_STORE,
      customerId: 'cust_x',
      email: 'x@example.com',
      name: null,
      document: { type: 'cpf', number: '52998224725' },
    });
    expect(refused).toEqual({ ok: false, reason: 'Invalid value for br_cpf.' });
    accepted();
  });
});

describe('reading and giving back by key', () => {
  it('lookupCharge finds the intent by metadata.charge_key through search, scoped to the store', async () => {
    const key = `api/it's "quoted" ${newKey()}`;
    intentsFoundAs(CONNECTED_STORE, key, { status: 'succeeded', amount: 4990, currency: 'brl' });
    expect(await stripe.lookupCharge({ storeId: CONNECTED_STORE, idempotencyKey: key })).toMatchObject({
      idempotencyKey: key,
      outcome: { status: 'approved', transactionId: expect.stringMatching(/^pi_/) },
      state: 'approved',
      amount: 4990,
      currency: 'brl',
    });
    const [search] = only('GET', '/v1/payment_intents/search');
    expect(search.query.get('query')).toContain(`metadata['charge_key']:'api/it\\'s "quoted" `);
    expect(search.query.get('query')).toContain(`metadata['store_id']:'${CONNECTED_STORE}'`);
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
  });

  it(`a key search does not find is looked for in the newest intents, at most ${LOOKUP_LIST_PAGES} pages, and else is unknown to Stripe (null)`, async () => {
    recorder.setRewrite((sent, json) =>
      sent.path === '/v1/payment_intents' && sent.method === 'GET' ? { ...(json as object), has_more: true } : json,
    );
    expect(await stripe.lookupCharge({ storeId: CONNECTED_STORE, idempotencyKey: newKey() })).toBeNull();
    expect(only('GET', '/v1/payment_intents/search')).toHaveLength(1);
    const pages = only('GET', '/v1/payment_intents');
    expect(pages).toHaveLength(LOOKUP_LIST_PAGES);
    expect(pages[1].query.get('starting_after')).toMatch(/^pi_/);
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
  });

  it('where search is unavailable (a 404 or 400) the listing finds the key; a search that fails with a 5xx throws (unknown)', async () => {
    const key = newKey();
    recorder.setRewrite((sent, json) => {
      if (sent.path === '/v1/payment_intents/search')
        return new InjectedAnswer(404, { error: { type: 'invalid_request_error', message: 'Unrecognized request URL' } });
      const page = json as { data: Record<string, unknown>[] };
      if (sent.path !== '/v1/payment_intents' || sent.method !== 'GET') return json;
      return {
        ...page,
        data: page.data.map((intent) => ({
          ...intent,
          status: 'processing',
          metadata: { charge_key: key, store_id: CONNECTED_STORE, kind: 'card' },
        })),
      };
    });
    expect(await stripe.lookupCharge({ storeId: CONNECTED_STORE, idempotencyKey: key })).toMatchObject({
      outcome: { status: 'review' },
      state: 'review',
    });
    expect(only('GET', '/v1/payment_intents')).toHaveLength(1);
    recorder.setRewrite((sent, json) =>
      sent.path === '/v1/payment_intents/search' ? new InjectedAnswer(503, { error: { type: 'api_error', message: 'busy' } }) : json,
    );
    await expect(stripe.lookupCharge({ storeId: CONNECTED_STORE, idempotencyKey: key })).rejects.toBeInstanceOf(Stripe.errors.StripeAPIError);
    accepted();
  });

  it('refundCharge refunds a captured intent and cancels a pending one, each keyed by the charge', async () => {
    const key = newKey();
    intentsFoundAs(CONNECTED_STORE, key, { status: 'succeeded', latest_charge: null });
    expect(await stripe.refundCharge({ storeId: CONNECTED_STORE, chargeKey: key })).toMatchObject({ ok: true, status: 'refunded' });
    const [refund] = only('POST', '/v1/refunds');
    expect(refund.form.get('payment_intent')).toMatch(/^pi_/);
    expect(refund.headers['idempotency-key']).toBe(`${CONNECTED_STORE}/${key}#refund`);
    recorder.clear();
    intentsFoundAs(CONNECTED_STORE, key, { status: 'requires_capture' });
    expect(await stripe.refundCharge({ storeId: CONNECTED_STORE, chargeKey: key })).toMatchObject({ ok: true, status: 'voided' });
    const [cancel] = only('POST', /^\/v1\/payment_intents\/pi_[^/]+\/cancel$/);
    expect(cancel.headers['idempotency-key']).toBe(`${CONNECTED_STORE}/${key}#cancel`);
    expect(cancel.form.get('cancellation_reason')).toBe('abandoned');
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
  });

  it('cancelPending fences a 3-D Secure still waiting: cancelled keyed by the charge; one that succeeded first answers succeeded, no cancel sent', async () => {
    const key = newKey();
    intentsFoundAs(CONNECTED_STORE, key, { status: 'requires_action' });
    expect(await stripe.lookupCharge({ storeId: CONNECTED_STORE, idempotencyKey: key })).toMatchObject({ state: 'action_required' });
    expect(await stripe.cancelPending({ storeId: CONNECTED_STORE, chargeKey: key })).toMatchObject({ status: 'canceled' });
    const [cancel] = only('POST', /^\/v1\/payment_intents\/pi_[^/]+\/cancel$/);
    expect(cancel.headers['idempotency-key']).toBe(`${CONNECTED_STORE}/${key}#cancel`);
    expect(cancel.form.get('cancellation_reason')).toBe('abandoned');
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
    recorder.clear();
    intentsFoundAs(CONNECTED_STORE, key, { status: 'succeeded' });
    expect(await stripe.cancelPending({ storeId: CONNECTED_STORE, chargeKey: key })).toMatchObject({ status: 'succeeded' });
    expect(only('POST', /\/cancel$/)).toHaveLength(0);
    accepted();
  });

  it('cancelPending throws (unknown, asked again) when no intent is found under the key yet, or one is still processing', async () => {
    recorder.setRewrite((sent, json) => (sent.path === '/v1/payment_intents/search' ? { ...(json as object), data: [] } : json));
    await expect(stripe.cancelPending({ storeId: CONNECTED_STORE, chargeKey: newKey() })).rejects.toThrow(/no PaymentIntent found/);
    const key = newKey();
    intentsFoundAs(CONNECTED_STORE, key, { status: 'processing' });
    await expect(stripe.cancelPending({ storeId: CONNECTED_STORE, chargeKey: key })).rejects.toThrow(/processing/);
    expect(only('POST', /\/cancel$/)).toHaveLength(0);
  });

  it('cancelPending (the expiry fence) cancels the intent keyed <store>/<key>#cancel: canceled, or already succeeded read from the intent; anything else is unknown', async () => {
    const key = newKey();
    const cancelPath = /^\/v1\/payment_intents\/pi_fence\/cancel$/;
    recorder.setRewrite((sent, json) => (cancelPath.test(sent.path) ? { ...(json as object), id: 'pi_fence', status: 'canceled' } : json));
    expect(await stripe.cancelPending({ storeId: CONNECTED_STORE, chargeKey: key, transactionId: 'pi_fence' })).toEqual({
      status: 'canceled',
      transactionId: 'pi_fence',
    });
    const [cancel] = only('POST', cancelPath);
    expect(cancel.headers['idempotency-key']).toBe(`${CONNECTED_STORE}/${key}#cancel`);
    expect(cancel.form.get('cancellation_reason')).toBe('abandoned');
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);

    // The buyer paid first: Stripe refuses the cancel (payment_intent_unexpected_state) and the intent reads succeeded.
    recorder.clear();
    recorder.setRewrite((sent, json) => {
      if (sent.method === 'POST' && cancelPath.test(sent.path)) {
        return new InjectedAnswer(400, { error: { type: 'invalid_request_error', code: 'payment_intent_unexpected_state', message: 'succeeded' } });
      }
      if (sent.method === 'GET' && sent.path === '/v1/payment_intents/pi_fence') {
        return {
          ...(json as object),
          id: 'pi_fence',
          status: 'succeeded',
          amount: 19700,
          currency: 'brl',
          metadata: { store_id: CONNECTED_STORE, charge_key: key, kind: 'pix' },
        };
      }
      return json;
    });
    expect(await stripe.cancelPending({ storeId: CONNECTED_STORE, chargeKey: key, transactionId: 'pi_fence' })).toMatchObject({
      status: 'succeeded',
      transactionId: 'pi_fence',
      amount: 19700,
    });

    // Still processing after the refused cancel: neither answer, so it throws (asked again later).
    recorder.setRewrite((sent, json) => {
      if (sent.method === 'POST' && cancelPath.test(sent.path)) {
        return new InjectedAnswer(400, { error: { type: 'invalid_request_error', code: 'payment_intent_unexpected_state', message: 'processing' } });
      }
      return sent.method === 'GET' ? { ...(json as object), id: 'pi_fence', status: 'processing', metadata: { store_id: CONNECTED_STORE } } : json;
    });
    await expect(stripe.cancelPending({ storeId: CONNECTED_STORE, chargeKey: key, transactionId: 'pi_fence' })).rejects.toThrow(/processing/);
    // A 5xx is unknown too.
    recorder.setRewrite((sent, json) =>
      sent.method === 'POST' && cancelPath.test(sent.path) ? new InjectedAnswer(500, { error: { type: 'api_error', message: 'boom' } }) : json,
    );
    await expect(stripe.cancelPending({ storeId: CONNECTED_STORE, chargeKey: key, transactionId: 'pi_fence' })).rejects.toBeInstanceOf(
      Stripe.errors.StripeError,
    );
  });

  it("getTransaction reads the intent with its latest charge; another store's intent reads as none; settle is Stripe's own", async () => {
    recorder.setRewrite((sent, json) =>
      /^\/v1\/payment_intents\/pi_/.test(sent.path)
        ? { ...(json as object), status: 'succeeded', metadata: { store_id: CONNECTED_STORE, charge_key: 'k', kind: 'card' } }
        : json,
    );
    expect(await stripe.getTransaction({ storeId: CONNECTED_STORE, transactionId: 'pi_contract' })).toMatchObject({
      state: 'approved',
      idempotencyKey: 'k',
      kind: 'card',
    });
    expect(only('GET', '/v1/payment_intents/pi_contract')[0].query.get('expand[0]')).toBe('latest_charge');
    expect(await stripe.getTransaction({ storeId: PLATFORM_STORE, transactionId: 'pi_contract' })).toBeNull();
    accepted();
    expect(await stripe.settle({ storeId: CONNECTED_STORE, transactionId: 'pi_contract', outcome: 'paid' })).toMatchObject({ ok: false });
  });

  it('refund asks POST /v1/refunds for the amount of the intent, keyed by the refund key, with metadata.refund_key and Stripe’s reason', async () => {
    const refundKey = `refund/rf_contract${++seq}`;
    const answered = await stripe.refund({
      storeId: CONNECTED_STORE,
      transactionId: 'pi_contract',
      amount: 1500,
      refundKey,
      reason: 'requested_by_customer',
    });
    expect(answered).toMatchObject({ status: 'refunded', refundId: expect.stringMatching(/^re_/) });
    const [create] = only('POST', '/v1/refunds');
    expect(Object.fromEntries(create.form)).toMatchObject({
      payment_intent: 'pi_contract',
      amount: '1500',
      reason: 'requested_by_customer',
      'metadata[refund_key]': refundKey,
      'metadata[store_id]': CONNECTED_STORE,
      'metadata[reason]': 'requested_by_customer',
    });
    expect(create.headers['idempotency-key']).toBe(`${CONNECTED_STORE}/${refundKey}`);
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
    recorder.clear();
    // A reason of the merchant's own words travels in metadata only; Stripe's pending answer is pending, a refusal a failed refund.
    recorder.setRewrite((sent, json) => (sent.path === '/v1/refunds' ? { ...(json as object), status: 'pending' } : json));
    expect(await stripe.refund({ storeId: PLATFORM_STORE, transactionId: 'pi_contract', amount: 10, refundKey, reason: 'damaged' })).toMatchObject({
      status: 'pending',
    });
    expect(only('POST', '/v1/refunds')[0].form.get('reason')).toBeNull();
    expect(only('POST', '/v1/refunds')[0].form.get('metadata[reason]')).toBe('damaged');
    recorder.setRewrite((sent, json) =>
      sent.path === '/v1/refunds'
        ? new InjectedAnswer(400, {
            error: { type: 'invalid_request_error', code: 'amount_too_large', message: 'Refund amount is greater than unrefunded amount' },
          })
        : json,
    );
    expect(await stripe.refund({ storeId: PLATFORM_STORE, transactionId: 'pi_contract', amount: 10, refundKey, reason: null })).toMatchObject({
      status: 'failed',
      refundId: null,
      code: 'amount_too_large',
    });
    recorder.setRewrite((sent, json) =>
      sent.path === '/v1/refunds' ? new InjectedAnswer(503, { error: { type: 'api_error', message: 'busy' } }) : json,
    );
    await expect(
      stripe.refund({ storeId: PLATFORM_STORE, transactionId: 'pi_contract', amount: 10, refundKey, reason: null }),
    ).rejects.toBeInstanceOf(Stripe.errors.StripeAPIError);
  });

  it(`lookupRefund lists the intent's refunds and matches metadata.refund_key; past ${REFUND_LOOKUP_PAGES} pages it cannot tell (throws), never "none"`, async () => {
    const refundKey = `refund/rf_contract${++seq}`;
    recorder.setRewrite((sent, json) => {
      const page = json as { data: Record<string, unknown>[] };
      if (sent.path !== '/v1/refunds' || sent.method !== 'GET') return json;
      return {
        ...page,
        data: page.data.map((refund) => ({ ...refund, status: 'succeeded', metadata: { refund_key: refundKey, store_id: CONNECTED_STORE } })),
      };
    });
    expect(await stripe.lookupRefund({ storeId: CONNECTED_STORE, transactionId: 'pi_contract', refundKey })).toMatchObject({
      status: 'refunded',
      refundId: expect.stringMatching(/^re_/),
    });
    const [list] = only('GET', '/v1/refunds');
    expect(list.query.get('payment_intent')).toBe('pi_contract');
    expect(list.query.get('limit')).toBe('100');
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
    recorder.clear();
    recorder.setRewrite(null);
    expect(await stripe.lookupRefund({ storeId: CONNECTED_STORE, transactionId: 'pi_contract', refundKey })).toBeNull();
    recorder.clear();
    recorder.setRewrite((sent, json) => (sent.path === '/v1/refunds' && sent.method === 'GET' ? { ...(json as object), has_more: true } : json));
    await expect(stripe.lookupRefund({ storeId: CONNECTED_STORE, transactionId: 'pi_contract', refundKey })).rejects.toThrow(/cannot be told/);
    expect(only('GET', '/v1/refunds')).toHaveLength(REFUND_LOOKUP_PAGES);
    expect(only('GET', '/v1/refunds')[1].query.get('starting_after')).toMatch(/^re_/);
    accepted();
  });

  it(`the events endpoint reads a charge’s refunds by GET /v1/refunds?charge= under the event’s account, at most ${REFUND_LOOKUP_PAGES} pages`, async () => {
    const client = createStripeClient({ secretKey: FAKE_STRIPE_SECRET_KEY, apiUrl: recorder.url });
    const refunds = await chargeRefundsReader(client)('ch_contract', ACCOUNT);
    expect(refunds.length).toBeGreaterThan(0);
    expect(refunds[0]).toMatchObject({ id: expect.stringMatching(/^re_/), amount: expect.any(Number) });
    const [list] = only('GET', '/v1/refunds');
    expect(list.query.get('charge')).toBe('ch_contract');
    expect(list.headers['stripe-account']).toBe(ACCOUNT);
    accepted();
    recorder.clear();
    // Past its bound the list cannot be read whole: thrown (the event answers 503), never a short list.
    recorder.setRewrite((sent, json) => (sent.path === '/v1/refunds' && sent.method === 'GET' ? { ...(json as object), has_more: true } : json));
    await expect(chargeRefundsReader(client)('ch_contract', null)).rejects.toThrow(/cannot be read whole/);
    expect(only('GET', '/v1/refunds')).toHaveLength(REFUND_LOOKUP_PAGES);
  });
});

describe('a renewal the bank asks the buyer to confirm (authentication_required off session)', () => {
  type Rewrite = Parameters<HttpRecorder['setRewrite']>[0] & {};
  /** The intent as Stripe answers GET /v1/payment_intents/{id}: `reads` in turn, the last repeated; `then` for the rest. */
  const intentReads = (reads: Array<Record<string, unknown>>, then: Rewrite = (_sent, json) => json) => {
    let read = 0;
    recorder.setRewrite((sent, json) => {
      if (sent.method !== 'GET' || !/^\/v1\/payment_intents\/pi_[^/]+$/.test(sent.path)) return then(sent, json);
      const fields = reads[Math.min(read++, reads.length - 1)];
      return { ...(json as object), metadata: { store_id: CONNECTED_STORE, charge_key: 'k', kind: 'saved_card' }, ...fields };
    });
  };
  const close = (key: string) => stripe.closeAuthentication!({ storeId: CONNECTED_STORE, chargeKey: key, transactionId: 'pi_renewal' });

  it('closeAuthentication cancels the intent still waiting for the buyer, keyed #close-authentication, on the connected account', async () => {
    intentReads([{ status: 'requires_payment_method' }], (sent, json) =>
      sent.method === 'POST' && sent.path.endsWith('/cancel') ? { ...(json as object), status: 'canceled' } : json,
    );
    const key = `renewal/sub_contract/2/${++seq}`;
    expect(await close(key)).toBe('closed');
    const [cancel] = only('POST', '/v1/payment_intents/pi_renewal/cancel');
    expect(cancel.headers['idempotency-key']).toBe(`${CONNECTED_STORE}/${key}#close-authentication`);
    expect(cancel.form.get('cancellation_reason')).toBe('abandoned');
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
  });

  it('an intent the buyer confirmed first is succeeded: nothing is cancelled; a cancel that loses the race reads it again', async () => {
    intentReads([{ status: 'succeeded' }]);
    expect(await close(`renewal/sub_contract/2/${++seq}`)).toBe('succeeded');
    expect(only('POST', /\/cancel$/)).toHaveLength(0);
    recorder.clear();
    intentReads([{ status: 'requires_action' }, { status: 'succeeded' }], (sent, json) =>
      sent.method === 'POST' && sent.path.endsWith('/cancel')
        ? new InjectedAnswer(400, { error: { type: 'invalid_request_error', code: 'payment_intent_unexpected_state', message: 'succeeded' } })
        : json,
    );
    expect(await close(`renewal/sub_contract/2/${++seq}`)).toBe('succeeded');
    expect(only('GET', '/v1/payment_intents/pi_renewal')).toHaveLength(2);
  });

  it("another store's intent is closed without a request to change it; one still processing throws (unknown)", async () => {
    recorder.setRewrite((sent, json) =>
      sent.method === 'GET' ? { ...(json as object), status: 'requires_payment_method', metadata: { store_id: 'st_other' } } : json,
    );
    expect(await close(`renewal/sub_contract/2/${++seq}`)).toBe('closed');
    expect(only('POST', /\/cancel$/)).toHaveLength(0);
    intentReads([{ status: 'processing' }]);
    await expect(close(`renewal/sub_contract/2/${++seq}`)).rejects.toThrow(/not known yet/);
    accepted();
  });

  it("the portal's reader gives the client secret and the saved card of an intent waiting for the buyer, under the store's account", async () => {
    const client = createStripeClient({ secretKey: FAKE_STRIPE_SECRET_KEY, apiUrl: recorder.url });
    intentReads([
      {
        status: 'requires_payment_method',
        client_secret: 'pi_renewal_secret_x',
        payment_method: null,
        last_payment_error: { type: 'card_error', code: 'authentication_required', payment_method: { id: 'pm_saved', object: 'payment_method' } },
      },
    ]);
    expect(await renewalPaymentReader(client)('pi_renewal', ACCOUNT)).toEqual({
      status: 'requires_payment_method',
      storeId: CONNECTED_STORE,
      clientSecret: 'pi_renewal_secret_x',
      paymentMethodId: 'pm_saved',
    });
    intentReads([{ status: 'succeeded', client_secret: 'pi_renewal_secret_x' }]);
    expect(await renewalPaymentReader(client)('pi_renewal', ACCOUNT)).toMatchObject({ status: 'succeeded', clientSecret: null });
    expectKeyedOnAccount(CONNECTED_STORE, ACCOUNT);
  });
});
