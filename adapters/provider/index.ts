// The payment connection the processes use, chosen by configuration: PAYMENT_PROVIDER (only `test`,
// the built-in test connection, exists today). A production process refuses the test connection
// unless ALLOW_TEST_PAYMENTS=1 says so on purpose: nothing real would ever be charged.
import type { Db } from 'mongodb';
import { createTestConnection } from './test-connection';
import type { PaymentProvider } from './types';

/** Production unless NODE_ENV says development or test: a forgotten variable fails safe. */
export function isProduction(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.NODE_ENV !== 'development' && env.NODE_ENV !== 'test';
}

export function createPaymentProvider(db: Db, env: NodeJS.ProcessEnv = process.env): PaymentProvider {
  const name = env.PAYMENT_PROVIDER ?? 'test';
  if (name !== 'test') throw new Error(`PAYMENT_PROVIDER=${name}: no such payment connection (available: test)`);
  if (isProduction(env) && env.ALLOW_TEST_PAYMENTS !== '1') {
    throw new Error(
      'The test payment connection refuses to run in production (NODE_ENV is not development or test): configure a real PAYMENT_PROVIDER, or set ALLOW_TEST_PAYMENTS=1 to run it on purpose.',
    );
  }
  return createTestConnection({ db });
}
