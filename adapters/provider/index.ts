// The payment connections the processes use, chosen by configuration: PAYMENT_PROVIDER (only `test`,
// the built-in test connection, exists today) is the store's; test objects (a test clock's customers and
// what they buy) only ever use a test connection, which a production process runs only when
// ALLOW_TEST_PAYMENTS=1 says so on purpose (later also a provider's test-mode key).
import { createTestConnection, type LedgerDatabase } from './test-connection';
import type { PaymentProvider } from './types';

/** Production unless NODE_ENV says development or test: a forgotten variable fails safe. */
export function isProduction(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.NODE_ENV !== 'development' && env.NODE_ENV !== 'test';
}

export function createPaymentProvider(db: LedgerDatabase, env: NodeJS.ProcessEnv = process.env): PaymentProvider {
  const name = env.PAYMENT_PROVIDER ?? 'test';
  if (name !== 'test') throw new Error(`PAYMENT_PROVIDER=${name}: no such payment connection (available: test)`);
  if (isProduction(env) && env.ALLOW_TEST_PAYMENTS !== '1') {
    throw new Error(
      'The test payment connection refuses to run in production (NODE_ENV is not development or test): configure a real PAYMENT_PROVIDER, or set ALLOW_TEST_PAYMENTS=1 to run it on purpose.',
    );
  }
  return createTestConnection({ db });
}

/** What a process charges through: the store's connection, and the test one when that is a real one. */
export interface PaymentConnections {
  /** The store's connection (PAYMENT_PROVIDER). */
  provider: PaymentProvider;
  /** The test connection for test objects beside a real `provider`; null or absent where none may run. */
  testProvider?: PaymentProvider | null;
}

/** Whether this process may run a test connection at all. */
function testPaymentsAllowed(env: NodeJS.ProcessEnv): boolean {
  return !isProduction(env) || env.ALLOW_TEST_PAYMENTS === '1';
}

/** The store's connection plus, beside a real one, the test connection test objects need (where allowed). */
export function createPaymentConnections(db: LedgerDatabase, env: NodeJS.ProcessEnv = process.env): PaymentConnections {
  const provider = createPaymentProvider(db, env);
  const testProvider = provider.livemode && testPaymentsAllowed(env) ? createTestConnection({ db }) : null;
  return { provider, testProvider };
}

/** Whether test objects (test clocks) can be served here: some connection of this process is a test one. */
export function testPaymentsAvailable(connections: PaymentConnections): boolean {
  return !connections.provider.livemode || connections.testProvider?.livemode === false;
}

/**
 * The connection an object's money goes through: a test object only ever a test connection, whatever
 * the store's default (never real money for a test clock); everything else the store's connection.
 */
export function connectionFor(connections: PaymentConnections, testObject: boolean): PaymentProvider {
  if (!testObject || !connections.provider.livemode) return connections.provider;
  if (connections.testProvider && !connections.testProvider.livemode) return connections.testProvider;
  // Retried (not failed) by an activity: it proceeds once a test connection is configured, never on a real one.
  throw new Error('A test object needs a test payment connection and this process has none (ALLOW_TEST_PAYMENTS or a test-mode key).');
}
