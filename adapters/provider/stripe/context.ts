// What every Stripe request of the connection shares: the client, the store's connected account
// (Stripe-Account), the store-scoped Idempotency-Key of a POST, and which failures are Stripe's refusals.
import Stripe from 'stripe';
import { boundedKey, ID_LENGTH_MAX } from '../../../domain/bounded-keys';
import type { ConnectedAccounts } from './accounts';

export interface StripeContext {
  stripe: Stripe;
  accounts: ConnectedAccounts;
}

/** Stripe's Idempotency-Key for a request about `key`: the store's, so two stores on one account never share one. */
export const stripeIdempotencyKey = (storeId: string, key: string, step?: string): string =>
  boundedKey(storeId, step ? `${key}#${step}` : key, ID_LENGTH_MAX);

/** Request options: the store's connected account, and the Idempotency-Key of a POST. */
export async function requestOptions(ctx: StripeContext, storeId: string, idempotencyKey?: string): Promise<Stripe.RequestOptions> {
  const account = await ctx.accounts.of(storeId);
  return { ...(idempotencyKey ? { idempotencyKey } : {}), ...(account ? { stripeAccount: account } : {}) };
}

/** Stripe refused the request itself (bad parameters, unknown object): no money moved. Anything else is unknown. */
export const isRefusal = (error: unknown): error is Stripe.errors.StripeError =>
  error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode !== undefined && error.statusCode < 500;
