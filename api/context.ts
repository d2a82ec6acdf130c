// What every route can reach on the Fastify instance and on each request.
import type { Database } from '../store/database';
import type { Client } from '@temporalio/client';
import type { ApiKeyDoc, StoreDoc } from '../store/collections';
import type { ApiConfig } from './config';
import type { PaymentProvider } from '../adapters/provider/types';
import type { StripeWebSettings } from '../adapters/provider/stripe/web';
import type { EventRequest } from '../store/events';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { CheckoutDeps } from '../services/checkout/sessions';
import type { Histogram } from 'prom-client';

export interface AppDeps {
  db: Database;
  config: ApiConfig;
  /** Temporal client: routes start and message workflows through services' typed clients. */
  temporal: Client;
  provider: PaymentProvider;
  /** The test connection beside a real `provider` (adapters/provider: connectionFor); absent when `provider` is the test one. */
  testProvider?: PaymentProvider | null;
  /** PAYMENT_PROVIDER=stripe: its events endpoint's secret and the hosted page's Stripe.js; null or absent otherwise. */
  stripe?: StripeWebSettings | null;
  /** The request histogram every response is timed in (api/metrics.ts); the API process passes it, tests may not. */
  httpDuration?: Histogram<string>;
  /** Tracing is on (adapters/tracing.ts): each request gets its span, and runs inside it. */
  traced?: boolean;
}

export interface AuthContext {
  store: StoreDoc;
  apiKey: ApiKeyDoc;
  apiVersion: string;
}

export interface IdempotencyState {
  id: string;
  /** The request id of the run holding the key; only that run may complete or release it. */
  run: string;
  key: string;
  /** When the key's record began (ms): ids derived from the key are unique to it. 0 on a replay. */
  created: number;
  replayed: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    deps: AppDeps;
  }
  interface FastifyRequest {
    auth: AuthContext | null;
    idempotency: IdempotencyState | null;
  }
  interface FastifyContextConfig {
    /** Pages and documents served without an API key. */
    public?: boolean;
    /**
     * Keys that never expire (subscription charges): a stored success is answered by the route from
     * its own permanent record (the charge as it is now); refusals replay like everywhere else.
     */
    permanentIdempotency?: boolean;
    /**
     * A submit that reaches a card, counted by the page payment limit: always (checkout payment) or when its
     * decoded path parameters say so (the portal's card change among its actions).
     */
    paymentSubmit?: true | ((params: Record<string, string>) => boolean);
    /** The response carries a secret (a signing secret, a sign-in URL): kept for replay sealed, never in plain text. */
    secretResponse?: boolean;
  }
}

/** The authenticated context; routes behind auth can rely on it. */
export function authOf(request: { auth: AuthContext | null }): AuthContext {
  if (!request.auth) throw new Error('route reached without authentication');
  return request.auth;
}

/** The request an event records as its cause: its id and Idempotency-Key. */
export function eventRequestOf(request: { id: string; headers: Record<string, string | string[] | undefined> }): EventRequest {
  const key = request.headers['idempotency-key'];
  return { id: request.id, idempotency_key: (Array.isArray(key) ? key[0] : key) ?? null };
}

/** The instance a route plugin registers its routes on, typed by the TypeBox provider. */
export type RouteApp = Parameters<FastifyPluginAsyncTypebox>[0];

/** What the checkout services need from the API's settings: the same for the session routes and the hosted page. */
export function checkoutDepsOf(deps: AppDeps): CheckoutDeps {
  const { db, config, temporal, provider, testProvider } = deps;
  return {
    db,
    provider,
    testProvider,
    temporal,
    taskQueue: config.taskQueue,
    checkoutUrl: config.checkoutUrl,
    development: config.development,
    payWaitMs: config.checkoutPayWaitMs,
    attemptHoldMs: config.checkoutAttemptHoldMs,
    maxCardDeclines: config.checkoutMaxCardDeclines,
  };
}
