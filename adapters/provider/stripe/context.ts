// What every Stripe request of the connection shares: the client, the store's connected account
// (Stripe-Account), the store-scoped Idempotency-Key of a POST, and which failures are Stripe's refusals.
// A call under a charge key runs with the account pinned for the key (underChargeAccount): the account the
// key's first request went to, never the store's setting of the moment.
import { AsyncLocalStorage } from 'node:async_hooks';
import Stripe from 'stripe';
import { boundedKey, ID_LENGTH_MAX } from '../../../domain/bounded-keys';
import type { ChargeAccountPins, ConnectedAccounts, PinnedAccount } from './accounts';

export interface StripeContext {
  stripe: Stripe;
  accounts: ConnectedAccounts;
  /** Without it (tests of the adapter alone) a charge key's requests follow the store's account of the moment. */
  pins?: ChargeAccountPins;
}

/** The charge key a call is about, and its pin (null: none yet, or no pins here). */
interface ChargeCall {
  storeId: string;
  chargeKey: string;
  pin: PinnedAccount | null;
}

const chargeCall = new AsyncLocalStorage<ChargeCall>();

/**
 * Runs `call` with every request of the store on the key's pinned account. `pinFirst` (a request that may
 * create the payment) pins the store's account now unless the key has a pin; otherwise (lookups, give-backs)
 * a key without a pin was never charged since pins exist, and is asked under the store's account now.
 */
export async function underChargeAccount<T>(
  ctx: StripeContext,
  input: { storeId: string; chargeKey: string; pinFirst: boolean },
  call: () => Promise<T>,
): Promise<T> {
  const pin = ctx.pins
    ? input.pinFirst
      ? await ctx.pins.pin(input.storeId, input.chargeKey, await ctx.accounts.of(input.storeId))
      : await ctx.pins.find(input.storeId, input.chargeKey)
    : null;
  return chargeCall.run({ storeId: input.storeId, chargeKey: input.chargeKey, pin }, call);
}

/** The pin of the charge key the current call is about (null: none), for the store's requests. */
export function currentPin(storeId: string): PinnedAccount | null {
  const call = chargeCall.getStore();
  return call && call.storeId === storeId ? call.pin : null;
}

/** Stripe's Idempotency-Key for a request about `key`: the store's, so two stores on one account never share one. */
export const stripeIdempotencyKey = (storeId: string, key: string, step?: string): string =>
  boundedKey(storeId, step ? `${key}#${step}` : key, ID_LENGTH_MAX);

/** Request options: the charge key's pinned account (else the store's connected account), and the Idempotency-Key of a POST. */
export async function requestOptions(ctx: StripeContext, storeId: string, idempotencyKey?: string): Promise<Stripe.RequestOptions> {
  const pin = currentPin(storeId);
  const account = pin ? pin.account : await ctx.accounts.of(storeId);
  return { ...(idempotencyKey ? { idempotencyKey } : {}), ...(account ? { stripeAccount: account } : {}) };
}

/** Stripe refused the request itself (bad parameters, unknown object): no money moved. Anything else is unknown. */
export const isRefusal = (error: unknown): error is Stripe.errors.StripeError =>
  error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode !== undefined && error.statusCode < 500;
