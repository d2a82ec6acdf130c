// The payment connections the processes use, chosen by configuration: PAYMENT_PROVIDER (`test`, the
// built-in test connection, or `stripe` with STRIPE_* keys) is the stores'; test objects (a test clock's
// customers and what they buy) only ever use a test connection: the built-in one wherever it may run (a
// production process only when ALLOW_TEST_PAYMENTS=1 says so on purpose), else a Stripe test-mode key's.
import type { ChargeAccountPins, StripeAccountResolver } from './stripe/accounts';
import { readStripeConfig } from './stripe/config';
import { createStripeConnection } from './stripe/connection';
import { createTestConnection, type LedgerDatabase } from './test-connection';
import type { PaymentProvider } from './types';

export const PAYMENT_PROVIDERS = ['test', 'stripe'] as const;

export interface ConnectionOptions {
  /** A store's connected Stripe account (stores set --stripe-account), read per call by the Stripe connection. */
  stripeAccountOf?: StripeAccountResolver;
  /** Where each charge key's provider account is pinned (store/charge-accounts.ts): lookups and events follow the pin. */
  chargeAccounts?: ChargeAccountPins;
}

/** Production unless NODE_ENV says development or test: a forgotten variable fails safe. */
export function isProduction(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.NODE_ENV !== 'development' && env.NODE_ENV !== 'test';
}

export function createPaymentProvider(db: LedgerDatabase, env: NodeJS.ProcessEnv = process.env, options: ConnectionOptions = {}): PaymentProvider {
  const name = env.PAYMENT_PROVIDER ?? 'test';
  if (name === 'stripe')
    return createStripeConnection({
      config: readStripeConfig(env),
      accountOf: options.stripeAccountOf,
      chargeAccounts: options.chargeAccounts,
    });
  if (name !== 'test') throw new Error(`PAYMENT_PROVIDER=${name}: no such payment connection (available: ${PAYMENT_PROVIDERS.join(', ')})`);
  if (isProduction(env) && env.ALLOW_TEST_PAYMENTS !== '1') {
    throw new Error(
      'The test payment connection refuses to run in production (NODE_ENV is not development or test): configure a real PAYMENT_PROVIDER, or set ALLOW_TEST_PAYMENTS=1 to run it on purpose.',
    );
  }
  return createTestConnection({ db, installmentCurrencies: installmentCurrenciesOf(env) });
}

/** TEST_INSTALLMENT_CURRENCIES (comma-separated, e.g. `brl,mxn`): where the test connection pays cards in installments; BRL when unset. */
function installmentCurrenciesOf(env: NodeJS.ProcessEnv): string[] | undefined {
  const listed = (env.TEST_INSTALLMENT_CURRENCIES ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter(Boolean);
  return listed.length > 0 ? listed : undefined;
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

/** The store's connection plus, beside another provider's, the built-in test connection test objects use (where allowed). */
export function createPaymentConnections(
  db: LedgerDatabase,
  env: NodeJS.ProcessEnv = process.env,
  options: ConnectionOptions = {},
): PaymentConnections {
  const provider = createPaymentProvider(db, env, options);
  const builtIn = (env.PAYMENT_PROVIDER ?? 'test') === 'test';
  const testProvider =
    !builtIn && testPaymentsAllowed(env) ? createTestConnection({ db, installmentCurrencies: installmentCurrenciesOf(env) }) : null;
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
  if (!testObject) return connections.provider;
  // The built-in one first: test clocks rely on its test inputs and settle buttons, which a provider's test mode lacks.
  if (connections.testProvider && !connections.testProvider.livemode) return connections.testProvider;
  if (!connections.provider.livemode) return connections.provider;
  // Retried (not failed) by an activity: it proceeds once a test connection is configured, never on a real one.
  throw new Error('A test object needs a test payment connection and this process has none (ALLOW_TEST_PAYMENTS or a test-mode key).');
}
