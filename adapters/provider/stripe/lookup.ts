// Finding the PaymentIntent made under a charge key, so an outcome is never assumed (R3 1/7): Stripe's
// Search API by metadata.charge_key and metadata.store_id first; when search is unavailable (an account or
// key without it, a fake) or finds nothing yet (its index lags writes by up to a minute), the newest
// intents are listed, at most LOOKUP_LIST_PAGES pages of LOOKUP_PAGE_SIZE, and matched by the same metadata.
import Stripe from 'stripe';
import { requestOptions, type StripeContext } from './context';

export const LOOKUP_PAGE_SIZE = 100;
/** The listing's bound: a key older than the newest 300 intents of the account is found by search only. */
export const LOOKUP_LIST_PAGES = 3;

const EXPAND = ['data.latest_charge', 'data.payment_method'];

/** A quoted value of Stripe's search query language (backslash escapes quotes and itself). */
export const searchString = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

export const chargeKeyQuery = (storeId: string, key: string) =>
  `metadata['charge_key']:${searchString(key)} AND metadata['store_id']:${searchString(storeId)}`;

const belongs = (intent: Stripe.PaymentIntent, storeId: string, key: string) =>
  intent.metadata?.charge_key === key && intent.metadata?.store_id === storeId;

/** The first intent made under the key (one per key while Stripe keeps the key; the oldest otherwise). */
const firstOf = (intents: Stripe.PaymentIntent[]) => intents.sort((a, b) => a.created - b.created)[0] ?? null;

export async function findIntentByKey(ctx: StripeContext, storeId: string, key: string): Promise<Stripe.PaymentIntent | null> {
  const options = await requestOptions(ctx, storeId);
  const searched = await searchByKey(ctx, storeId, key, options);
  if (searched) return searched;
  return listByKey(ctx, storeId, key, options);
}

/** Null when search found nothing or is unavailable here; connection errors and 5xx throw (unknown). */
async function searchByKey(ctx: StripeContext, storeId: string, key: string, options: Stripe.RequestOptions): Promise<Stripe.PaymentIntent | null> {
  try {
    const found = await ctx.stripe.paymentIntents.search({ query: chargeKeyQuery(storeId, key), limit: 10, expand: EXPAND }, options);
    return firstOf(found.data.filter((intent) => belongs(intent, storeId, key)));
  } catch (error) {
    if (error instanceof Stripe.errors.StripeInvalidRequestError || error instanceof Stripe.errors.StripePermissionError) return null;
    throw error;
  }
}

async function listByKey(ctx: StripeContext, storeId: string, key: string, options: Stripe.RequestOptions): Promise<Stripe.PaymentIntent | null> {
  const matches: Stripe.PaymentIntent[] = [];
  let after: string | undefined;
  for (let page = 0; page < LOOKUP_LIST_PAGES; page++) {
    const params: Stripe.PaymentIntentListParams = { limit: LOOKUP_PAGE_SIZE, expand: EXPAND, ...(after ? { starting_after: after } : {}) };
    const listed = await ctx.stripe.paymentIntents.list(params, options);
    matches.push(...listed.data.filter((intent) => belongs(intent, storeId, key)));
    if (!listed.has_more || listed.data.length === 0) break;
    after = listed.data[listed.data.length - 1].id;
  }
  return firstOf(matches);
}
