// Finding the PaymentIntent made under a charge key, so an outcome is never assumed (R3 1/7), under the
// account the key is pinned to (context.ts): Stripe's Search API by metadata.charge_key and metadata.store_id
// first; then the newest intents are listed, at most LOOKUP_LIST_PAGES pages of LOOKUP_PAGE_SIZE, and matched
// by the same metadata (search unavailable, or its index not caught up yet: it lags writes); for a pinned key
// only those created since its pin (less CLOCK_SKEW_ALLOWANCE_S), since none under the key can be older. "Not found" is
// answered only when it is known: a listing that reached the account's oldest intent, or a search that
// answered for a key pinned longer ago than its lag. Anything else cannot be complete and throws
// LookupIncompleteError: unknown, asked again by the activity's retry (with backoff), never "nothing charged".
import Stripe from 'stripe';
import { currentPin, requestOptions, type StripeContext } from './context';

export const LOOKUP_PAGE_SIZE = 100;
/** The listing's bound: past the newest 300 intents of the account, only search can say "not found". */
export const LOOKUP_LIST_PAGES = 3;
/**
 * How long a new key may be missing from search's index (Stripe: "typically within a minute"; more during
 * an incident): within it an empty search and an incomplete listing are unknown, not "not found".
 */
export const SEARCH_LAG_ALLOWANCE_MS = 10 * 60 * 1000;

/** Our clock against Stripe's `created`: a listing starts this long before the key's pin. */
export const CLOCK_SKEW_ALLOWANCE_S = 10 * 60;

const EXPAND = ['data.latest_charge', 'data.payment_method'];

/** The lookup could not be complete (search unavailable, or not caught up, and the listing bounded): unknown. */
export class LookupIncompleteError extends Error {
  override readonly name = 'LookupIncompleteError';
}

/** A quoted value of Stripe's search query language (backslash escapes quotes and itself). */
export const searchString = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

export const chargeKeyQuery = (storeId: string, key: string) =>
  `metadata['charge_key']:${searchString(key)} AND metadata['store_id']:${searchString(storeId)}`;

const belongs = (intent: Stripe.PaymentIntent, storeId: string, key: string) =>
  intent.metadata?.charge_key === key && intent.metadata?.store_id === storeId;

/** The first intent made under the key (one per key while Stripe keeps the key; the oldest otherwise). */
const firstOf = (intents: Stripe.PaymentIntent[]) => intents.sort((a, b) => a.created - b.created)[0] ?? null;

/** The key's intent, or null when it is known that none was made; throws (unknown) otherwise. */
export async function findIntentByKey(ctx: StripeContext, storeId: string, key: string): Promise<Stripe.PaymentIntent | null> {
  const options = await requestOptions(ctx, storeId);
  const searched = await searchByKey(ctx, storeId, key, options);
  if (searched.intent) return searched.intent;
  const listed = await listByKey(ctx, storeId, key, options);
  if (listed.intent || listed.complete) return listed.intent;
  if (!searched.available)
    throw new LookupIncompleteError(
      `Stripe's search is unavailable and the newest ${LOOKUP_LIST_PAGES * LOOKUP_PAGE_SIZE} intents do not hold ${key}: unknown`,
    );
  const pin = currentPin(storeId);
  if (pin && Date.now() - pin.pinnedAt.getTime() < SEARCH_LAG_ALLOWANCE_MS) {
    throw new LookupIncompleteError(`Stripe's search may not have indexed ${key} yet (pinned ${pin.pinnedAt.toISOString()}): unknown`);
  }
  return null;
}

/** Unavailable: search refused here (an account or key without it, a fake); connection errors and 5xx throw (unknown). */
async function searchByKey(
  ctx: StripeContext,
  storeId: string,
  key: string,
  options: Stripe.RequestOptions,
): Promise<{ available: boolean; intent: Stripe.PaymentIntent | null }> {
  try {
    const found = await ctx.stripe.paymentIntents.search({ query: chargeKeyQuery(storeId, key), limit: 10, expand: EXPAND }, options);
    return { available: true, intent: firstOf(found.data.filter((intent) => belongs(intent, storeId, key))) };
  } catch (error) {
    if (error instanceof Stripe.errors.StripeInvalidRequestError || error instanceof Stripe.errors.StripePermissionError) {
      return { available: false, intent: null };
    }
    throw error;
  }
}

/** Complete: the listing reached the account's oldest intent (a pinned key's: the oldest since its pin) within its bound. */
async function listByKey(
  ctx: StripeContext,
  storeId: string,
  key: string,
  options: Stripe.RequestOptions,
): Promise<{ intent: Stripe.PaymentIntent | null; complete: boolean }> {
  const matches: Stripe.PaymentIntent[] = [];
  const pin = currentPin(storeId);
  const since = pin ? { created: { gte: Math.floor(pin.pinnedAt.getTime() / 1000) - CLOCK_SKEW_ALLOWANCE_S } } : {};
  let after: string | undefined;
  for (let page = 0; page < LOOKUP_LIST_PAGES; page++) {
    const params: Stripe.PaymentIntentListParams = { limit: LOOKUP_PAGE_SIZE, expand: EXPAND, ...since, ...(after ? { starting_after: after } : {}) };
    const listed = await ctx.stripe.paymentIntents.list(params, options);
    matches.push(...listed.data.filter((intent) => belongs(intent, storeId, key)));
    if (!listed.has_more || listed.data.length === 0) return { intent: firstOf(matches), complete: true };
    after = listed.data[listed.data.length - 1].id;
  }
  return { intent: firstOf(matches), complete: false };
}
