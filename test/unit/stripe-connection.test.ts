// What this tests: the Stripe connection's configuration (PAYMENT_PROVIDER=stripe refuses to start with a
// missing or malformed key, naming the variable; a test-mode key is a test connection beside which test
// objects still use the built-in one), its bounded connected-account cache, and its pure request pieces
// (store-scoped Idempotency-Keys, CPF/CNPJ tax ids, the search query's quoting, intents read as outcomes).
import type { Db } from 'mongodb';
import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { connectionFor, createPaymentConnections, createPaymentProvider } from '../../adapters/provider';
import { ConnectedAccounts } from '../../adapters/provider/stripe/accounts';
import { readStripeConfig } from '../../adapters/provider/stripe/config';
import { taxIdOf } from '../../adapters/provider/stripe/connection';
import { stripeIdempotencyKey } from '../../adapters/provider/stripe/context';
import { cardOutcomeOf, lookupOf, stateOf } from '../../adapters/provider/stripe/intents';
import { chargeKeyQuery } from '../../adapters/provider/stripe/lookup';

const db = {} as Db;
const key = (prefix: string) => `${prefix}${'a1B2c3D4e5'.repeat(4)}`;
const testEnv: NodeJS.ProcessEnv = {
  NODE_ENV: 'development',
  PAYMENT_PROVIDER: 'stripe',
  STRIPE_SECRET_KEY: key('sk_test_'),
  STRIPE_PUBLISHABLE_KEY: key('pk_test_'),
  STRIPE_WEBHOOK_SECRET: key('whsec_'),
};

describe('PAYMENT_PROVIDER=stripe configuration', () => {
  it('a test-mode key pair makes a test connection with the default Stripe addresses', () => {
    expect(readStripeConfig(testEnv)).toMatchObject({ livemode: false, apiUrl: 'https://api.stripe.com', jsUrl: 'https://js.stripe.com/v3/' });
    expect(createPaymentProvider(db, testEnv).livemode).toBe(false);
  });

  it('a live key pair (or a restricted live key) is live; STRIPE_API_URL and STRIPE_JS_URL are taken as given', () => {
    const live = { ...testEnv, STRIPE_SECRET_KEY: key('rk_live_'), STRIPE_PUBLISHABLE_KEY: key('pk_live_') };
    expect(readStripeConfig(live).livemode).toBe(true);
    const local = { ...testEnv, STRIPE_API_URL: 'http://127.0.0.1:12111', STRIPE_JS_URL: 'http://127.0.0.1:8420/js.stripe.com/v3/' };
    expect(readStripeConfig(local)).toMatchObject({ apiUrl: 'http://127.0.0.1:12111', jsUrl: 'http://127.0.0.1:8420/js.stripe.com/v3/' });
  });

  it.each([
    ['STRIPE_SECRET_KEY', undefined, /STRIPE_SECRET_KEY is required/],
    ['STRIPE_SECRET_KEY', key('pk_test_'), /STRIPE_SECRET_KEY is malformed/],
    ['STRIPE_SECRET_KEY', 'sk_test_short', /STRIPE_SECRET_KEY is malformed/],
    ['STRIPE_PUBLISHABLE_KEY', '', /STRIPE_PUBLISHABLE_KEY is required/],
    ['STRIPE_PUBLISHABLE_KEY', key('sk_test_'), /STRIPE_PUBLISHABLE_KEY is malformed/],
    ['STRIPE_PUBLISHABLE_KEY', key('pk_live_'), /STRIPE_PUBLISHABLE_KEY is a live-mode key but STRIPE_SECRET_KEY is test-mode/],
    ['STRIPE_WEBHOOK_SECRET', undefined, /STRIPE_WEBHOOK_SECRET is required/],
    ['STRIPE_WEBHOOK_SECRET', key('wh_'), /STRIPE_WEBHOOK_SECRET is malformed/],
    ['STRIPE_API_URL', 'api.stripe.com', /STRIPE_API_URL is not a URL/],
    ['STRIPE_JS_URL', 'ftp://js.stripe.com/v3/', /STRIPE_JS_URL must be an http\(s\) URL/],
  ])('refuses to start when %s is %s, naming it', (name, value, message) => {
    expect(() => createPaymentProvider(db, { ...testEnv, [name]: value })).toThrow(message);
  });

  it('test objects keep the built-in test connection beside Stripe where it may run, else the test-mode key', () => {
    const beside = createPaymentConnections(db, testEnv);
    expect(connectionFor(beside, true)).toBe(beside.testProvider);
    expect(connectionFor(beside, false)).toBe(beside.provider);
    const production = createPaymentConnections(db, { ...testEnv, NODE_ENV: 'production' });
    expect(production.testProvider).toBeNull();
    expect(connectionFor(production, true)).toBe(production.provider);
    const live = createPaymentConnections(db, {
      ...testEnv,
      NODE_ENV: 'production',
      STRIPE_SECRET_KEY: key('sk_live_'),
      STRIPE_PUBLISHABLE_KEY: key('pk_live_'),
    });
    expect(() => connectionFor(live, true)).toThrow(/test payment connection/);
  });
});

describe('connected accounts', () => {
  it('are read once per store within the cache age, again after it, and the map stays within its bound', async () => {
    let reads = 0;
    let now = 0;
    const accounts = new ConnectedAccounts(
      async (storeId) => (reads++, storeId === 'st_a' ? 'acct_1' : null),
      1_000,
      3,
      () => now,
    );
    expect(await Promise.all([accounts.of('st_a'), accounts.of('st_a'), accounts.of('st_b')])).toEqual(['acct_1', 'acct_1', null]);
    expect(reads).toBe(2);
    now = 1_000;
    await accounts.of('st_a');
    expect(reads).toBe(3);
    for (const store of ['st_c', 'st_d', 'st_e', 'st_f']) await accounts.of(store);
    expect(accounts.size).toBe(3);
  });
});

describe('request pieces', () => {
  it("the Idempotency-Key is the store's charge key, within Stripe's 255 characters and distinct per store and step", () => {
    expect(stripeIdempotencyKey('st_1', 'checkout/cs_1/1')).toBe('st_1/checkout/cs_1/1');
    expect(stripeIdempotencyKey('st_2', 'checkout/cs_1/1')).not.toBe(stripeIdempotencyKey('st_1', 'checkout/cs_1/1'));
    expect(stripeIdempotencyKey('st_1', 'k', 'refund')).toBe('st_1/k#refund');
    const long = stripeIdempotencyKey('st_1', `api/${'x'.repeat(250)}`, 'refund');
    expect(long.length).toBeLessThanOrEqual(255);
    expect(long).not.toBe(stripeIdempotencyKey('st_1', `api/${'x'.repeat(250)}`, 'cancel'));
  });

  it('CPF and CNPJ become br_cpf and br_cnpj in Stripe punctuation; other documents are not sent', () => {
    expect(taxIdOf({ type: 'cpf', number: '52998224725' })).toEqual([{ type: 'br_cpf', value: '529.982.247-25' }]);
    expect(taxIdOf({ type: 'cnpj', number: '11222333000181' })).toEqual([{ type: 'br_cnpj', value: '11.222.333/0001-81' }]);
    expect(taxIdOf({ type: 'passport', number: 'X1234567' })).toBeUndefined();
    expect(taxIdOf(null)).toBeUndefined();
  });

  it("the search query quotes the key, so a merchant's quote cannot widen it", () => {
    expect(chargeKeyQuery('st_1', "api/a' OR metadata['store_id']:'st_2")).toBe(
      "metadata['charge_key']:'api/a\\' OR metadata[\\'store_id\\']:\\'st_2' AND metadata['store_id']:'st_1'",
    );
  });

  it('intents read as outcomes: succeeded approved, pending a review, a failed confirm a decline with its code; PIX states', () => {
    const intent = (fields: Partial<Stripe.PaymentIntent>) =>
      ({ id: 'pi_1', amount: 100, currency: 'brl', created: 10, metadata: {}, latest_charge: null, ...fields }) as Stripe.PaymentIntent;
    expect(cardOutcomeOf(intent({ status: 'succeeded' }))).toEqual({ status: 'approved', transactionId: 'pi_1' });
    expect(cardOutcomeOf(intent({ status: 'processing' }))).toEqual({ status: 'review', transactionId: 'pi_1' });
    const failure = { decline_code: 'insufficient_funds', code: 'card_declined', message: 'no' } as Stripe.PaymentIntent.LastPaymentError;
    expect(cardOutcomeOf(intent({ status: 'requires_payment_method', last_payment_error: failure }))).toMatchObject({
      status: 'declined',
      code: 'insufficient_funds',
    });
    const pix = (fields: Partial<Stripe.PaymentIntent>) => intent({ metadata: { kind: 'pix' }, ...fields });
    expect([pix({ status: 'requires_action' }), pix({ status: 'succeeded' }), pix({ status: 'requires_payment_method' })].map(stateOf)).toEqual([
      'pix_pending',
      'paid',
      'expired',
    ]);
    const refunded = intent({ status: 'succeeded', latest_charge: { refunded: true, created: 20 } as Stripe.Charge });
    expect(lookupOf(refunded, 'k')).toMatchObject({ outcome: { status: 'approved' }, state: 'refunded', settledAt: 20, currency: 'brl' });
  });
});
