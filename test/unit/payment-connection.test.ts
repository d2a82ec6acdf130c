// The payment connection is chosen by configuration, and production is the default: the test
// connection (which charges nothing real) refuses to run in production unless allowed on purpose.
import { describe, expect, it } from 'vitest';
import type { Db } from 'mongodb';
import { createPaymentProvider, isProduction } from '../../adapters/provider';
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
