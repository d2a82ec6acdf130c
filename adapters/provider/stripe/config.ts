// The Stripe connection's settings, read from STRIPE_* when PAYMENT_PROVIDER=stripe. A missing or
// malformed key stops the process at start with the variable's name; a test-mode secret key makes a test
// connection (livemode false), and the publishable key must be of the same mode as the secret key.

export const DEFAULT_STRIPE_API_URL = 'https://api.stripe.com';
export const DEFAULT_STRIPE_JS_URL = 'https://js.stripe.com/v3/';

export interface StripeConfig {
  /** STRIPE_SECRET_KEY: sk_test_/sk_live_, or a restricted rk_test_/rk_live_ key. */
  secretKey: string;
  /** STRIPE_PUBLISHABLE_KEY: pk_test_/pk_live_, of the secret key's mode (the page's Stripe.js). */
  publishableKey: string;
  /** STRIPE_WEBHOOK_SECRET: whsec_…, verifies the events Stripe sends us. */
  webhookSecret: string;
  /** STRIPE_API_URL: Stripe's API (a local fake in tests). */
  apiUrl: string;
  /** STRIPE_JS_URL: where the hosted page loads Stripe.js from. */
  jsUrl: string;
  /** False with a test-mode key: what it charges is never real money. */
  livemode: boolean;
}

// Stripe's keys are a prefix then at least a few dozen base62 characters; anything else is a paste error.
const SECRET_KEY = /^(sk|rk)_(test|live)_[0-9A-Za-z]{10,247}$/;
const PUBLISHABLE_KEY = /^pk_(test|live)_[0-9A-Za-z]{10,247}$/;
const WEBHOOK_SECRET = /^whsec_[0-9A-Za-z+/=]{10,247}$/;

function required(env: NodeJS.ProcessEnv, name: string, pattern: RegExp, shape: string): RegExpExecArray {
  const value = env[name]?.trim();
  if (!value) throw new Error(`${name} is required with PAYMENT_PROVIDER=stripe (${shape})`);
  const match = pattern.exec(value);
  if (!match) throw new Error(`${name} is malformed: expected ${shape}`);
  return match;
}

function httpUrl(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const value = env[name]?.trim() || fallback;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${name} is not a URL: ${value}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`${name} must be an http(s) URL: ${value}`);
  return value;
}

/** The settings from the environment; throws naming the variable that is missing or malformed. */
export function readStripeConfig(env: NodeJS.ProcessEnv = process.env): StripeConfig {
  const secret = required(env, 'STRIPE_SECRET_KEY', SECRET_KEY, 'sk_test_…, sk_live_…, rk_test_… or rk_live_…');
  const publishable = required(env, 'STRIPE_PUBLISHABLE_KEY', PUBLISHABLE_KEY, 'pk_test_… or pk_live_…');
  if (publishable[1] !== secret[2]) {
    throw new Error(`STRIPE_PUBLISHABLE_KEY is a ${publishable[1]}-mode key but STRIPE_SECRET_KEY is ${secret[2]}-mode: use a pair of the same mode`);
  }
  const webhook = required(env, 'STRIPE_WEBHOOK_SECRET', WEBHOOK_SECRET, 'whsec_…');
  return {
    secretKey: secret[0],
    publishableKey: publishable[0],
    webhookSecret: webhook[0],
    apiUrl: httpUrl(env, 'STRIPE_API_URL', DEFAULT_STRIPE_API_URL),
    jsUrl: httpUrl(env, 'STRIPE_JS_URL', DEFAULT_STRIPE_JS_URL),
    livemode: secret[2] === 'live',
  };
}
