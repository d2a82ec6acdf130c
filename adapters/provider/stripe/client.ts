// The official Stripe client as the connection uses it: against STRIPE_API_URL, no telemetry, a per-request
// timeout, no retries of its own (the activity retries under the same Idempotency-Key), and the caller's
// AbortSignal honoured. stripe-node's request options take no signal, so its fetch-based HTTP client is given
// a fetch that also listens to the signal of the call in progress (carried by AsyncLocalStorage): a given-up
// activity's request stops, and one not yet sent is never sent. An aborted request surfaces as
// StripeConnectionError: unknown, never "nothing charged".
import { AsyncLocalStorage } from 'node:async_hooks';
import Stripe from 'stripe';
import type { StripeConfig } from './config';

/** Per request; the charge activities' own deadline (30 s) outlasts a couple of these. */
export const STRIPE_REQUEST_TIMEOUT_MS = 10_000;

const callSignal = new AsyncLocalStorage<AbortSignal | undefined>();

/** Runs `call` with its Stripe requests bound to `signal` (none: they run to their timeout). */
export async function withSignal<T>(signal: AbortSignal | undefined, call: () => Promise<T>): Promise<T> {
  signal?.throwIfAborted();
  return callSignal.run(signal, call);
}

const fetchWithCallSignal: typeof fetch = (input, init) => {
  const signal = callSignal.getStore();
  if (!signal) return fetch(input, init);
  return fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal });
};

export function createStripeClient(config: Pick<StripeConfig, 'secretKey' | 'apiUrl'>): Stripe {
  const url = new URL(config.apiUrl);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return new Stripe(config.secretKey, {
    host: url.hostname,
    port: url.port || (protocol === 'http' ? 80 : 443),
    protocol,
    httpClient: Stripe.createFetchHttpClient(fetchWithCallSignal),
    maxNetworkRetries: 0,
    timeout: STRIPE_REQUEST_TIMEOUT_MS,
    telemetry: false,
    appInfo: { name: 'billing-checkout-api' },
  });
}
