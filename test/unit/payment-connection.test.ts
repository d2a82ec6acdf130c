// The payment connection is chosen by configuration, and production is the default: the test
// connection (which charges nothing real) refuses to run in production unless allowed on purpose.
import { describe, expect, it } from 'vitest';
import type { Db } from 'mongodb';
import { connectionFor, createPaymentConnections, createPaymentProvider, isProduction, testPaymentsAvailable } from '../../adapters/provider';
import type { PaymentProvider } from '../../adapters/provider/types';
import { loadApiConfig } from '../../api/config';
import { newSecretsKey } from '../../api/sealing';

const db = {} as Db;

describe('production by default', () => {
  it('only NODE_ENV development or test is not production; unset, production or a typo is', () => {
    expect([undefined, 'production', 'prod', 'staging'].map((NODE_ENV) => isProduction({ NODE_ENV }))).toEqual([true, true, true, true]);
    expect(['development', 'test'].map((NODE_ENV) => isProduction({ NODE_ENV }))).toEqual([false, false]);
  });

  it('the API accepts http://localhost success URLs only outside production', () => {
    expect(loadApiConfig({ SECRETS_KEY: newSecretsKey() }).development).toBe(false);
    expect(loadApiConfig({ NODE_ENV: 'development' }).development).toBe(true);
  });

  it('production needs SECRETS_KEY (it seals stored responses that carry secrets); development makes one up', () => {
    expect(() => loadApiConfig({})).toThrow(/SECRETS_KEY/);
    expect(Buffer.from(loadApiConfig({ NODE_ENV: 'development' }).secretsKey, 'base64')).toHaveLength(32);
  });
});

describe('the payment connection', () => {
  it('the test connection refuses to start in production, and runs when allowed on purpose or in development', () => {
    expect(() => createPaymentProvider(db, {})).toThrow(/refuses to run in production/);
    expect(() => createPaymentProvider(db, { NODE_ENV: 'production' })).toThrow(/ALLOW_TEST_PAYMENTS=1/);
    expect(createPaymentProvider(db, { NODE_ENV: 'production', ALLOW_TEST_PAYMENTS: '1' }).livemode).toBe(false);
    expect(createPaymentProvider(db, { NODE_ENV: 'development' }).livemode).toBe(false);
  });

  it('an unknown PAYMENT_PROVIDER is refused by name', () => {
    expect(() => createPaymentProvider(db, { NODE_ENV: 'development', PAYMENT_PROVIDER: 'acme' })).toThrow(/PAYMENT_PROVIDER=acme/);
  });
});

describe('which connection an object uses', () => {
  const real = { livemode: true } as PaymentProvider;
  const test = { livemode: false } as PaymentProvider;

  it('a test object (on a test clock) gets the test connection even when the store default is a real one', () => {
    expect(connectionFor({ provider: real, testProvider: test }, true)).toBe(test);
    expect(connectionFor({ provider: real, testProvider: test }, false)).toBe(real);
    expect(connectionFor({ provider: test }, true)).toBe(test);
  });

  it('without a test connection a test object is refused, never sent to the real one', () => {
    expect(() => connectionFor({ provider: real, testProvider: null }, true)).toThrow(/test payment connection/);
    expect(() => connectionFor({ provider: real, testProvider: real }, true)).toThrow(/test payment connection/);
    expect(testPaymentsAvailable({ provider: real, testProvider: null })).toBe(false);
    expect(testPaymentsAvailable({ provider: real, testProvider: test })).toBe(true);
    expect(testPaymentsAvailable({ provider: test })).toBe(true);
  });

  it('with the test connection as the store default, no second one is made', () => {
    expect(createPaymentConnections(db, { NODE_ENV: 'development' })).toMatchObject({ provider: { livemode: false }, testProvider: null });
  });
});
