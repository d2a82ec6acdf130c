// What the API process needs of a Stripe connection beside the adapter: the webhook secret that verifies
// its events, the publishable key and Stripe.js address of the hosted page's card field, and a reader of a
// PaymentIntent's routing (events about charges and reviews carry no intent metadata). Read from STRIPE_*.
import Stripe from 'stripe';
import { routingOfIntent, type IntentReader } from './events';

export const DEFAULT_STRIPE_API_URL = 'https://api.stripe.com';
export const DEFAULT_STRIPE_JS_URL = 'https://js.stripe.com/v3/';

export interface StripeWebSettings {
  /** STRIPE_WEBHOOK_SECRET (whsec_…): null answers the events endpoint 404 (not configured). */
  webhookSecret: string | null;
  /** STRIPE_PUBLISHABLE_KEY (pk_…): the page's Stripe.js is created with it. */
  publishableKey: string;
  /** STRIPE_JS_URL: where the page loads Stripe.js from (its origin joins the page's CSP). */
  jsUrl: string;
  readIntent: IntentReader;
}

/** The official client against STRIPE_API_URL (a local fake in tests), no retries of its own: callers decide. */
export function stripeClient(secretKey: string, apiUrl = DEFAULT_STRIPE_API_URL): Stripe {
  const url = new URL(apiUrl);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  const port = url.port || (protocol === 'http' ? '80' : '443');
  return new Stripe(secretKey, { host: url.hostname, port, protocol, maxNetworkRetries: 2, telemetry: false, timeout: 10_000 });
}

/** Reads an intent under the connected account the event came from. */
export function intentReader(client: Stripe): IntentReader {
  return async (intentId, account) => {
    const intent = await client.paymentIntents.retrieve(intentId, {}, account ? { stripeAccount: account } : {});
    return routingOfIntent(intent);
  };
}

/** The settings when PAYMENT_PROVIDER=stripe; null for any other connection (the pages keep their own card fields). */
export function stripeWebSettings(env: NodeJS.ProcessEnv = process.env): StripeWebSettings | null {
  if (env.PAYMENT_PROVIDER !== 'stripe') return null;
  const secretKey = env.STRIPE_SECRET_KEY;
  const publishableKey = env.STRIPE_PUBLISHABLE_KEY;
  if (!secretKey) throw new Error('STRIPE_SECRET_KEY is required with PAYMENT_PROVIDER=stripe');
  if (!publishableKey || !/^pk_(test|live)_/.test(publishableKey))
    throw new Error('STRIPE_PUBLISHABLE_KEY (pk_test_… or pk_live_…) is required with PAYMENT_PROVIDER=stripe');
  const webhookSecret = env.STRIPE_WEBHOOK_SECRET || null;
  if (webhookSecret && !webhookSecret.startsWith('whsec_')) throw new Error('STRIPE_WEBHOOK_SECRET must start with whsec_');
  return {
    webhookSecret,
    publishableKey,
    jsUrl: env.STRIPE_JS_URL || DEFAULT_STRIPE_JS_URL,
    readIntent: intentReader(stripeClient(secretKey, env.STRIPE_API_URL || DEFAULT_STRIPE_API_URL)),
  };
}
