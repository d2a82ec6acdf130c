// API process configuration, read once from the environment (docs/configuration.md lists every variable).
import { parseAllowedHosts } from '../adapters/webhooks/config';
import { isProduction } from '../adapters/provider';
import { readFileSync } from 'node:fs';
import { newSecretsKey } from './sealing';
import type { HostResolver } from '../adapters/webhooks/host-policy';
import { parseTrustProxy, type TrustProxy } from './client-address';
import { listenLimitsFrom, type ListenLimits } from './listen-limits';
import { cardTestingLimitsFrom, type CardTestingLimits } from '../services/checkout/card-testing';

export interface ApiConfig {
  port: number;
  host: string;
  /** A second port serving the same paths ({alt_base_url}); null when not configured. */
  altPort: number | null;
  /** API_METRICS_PORT: GET /metrics (Prometheus text) on its own listener, never the public port (default 9464). */
  metricsPort: number;
  mongoUri: string;
  mongoDb: string;
  temporalAddress: string;
  temporalNamespace: string;
  /** Task queue the billing worker polls (`billing`). */
  taskQueue: string;
  publicUrl: string;
  checkoutUrl: string;
  portalUrl: string;
  docsUrl: string;
  /** TRUST_PROXY: the proxy hops (a count) or proxy addresses (CIDRs) whose X-Forwarded-For is believed; false: none. */
  trustProxy: TrustProxy;
  keyRateLimit: number;
  keyRateWindowMs: number;
  ipRateLimit: number;
  ipRateWindowMs: number;
  /** Accept http://localhost success/cancel URLs: NODE_ENV development or test (`npm start` sets development); production otherwise. */
  development: boolean;
  logLevel: string;
  /** WEBHOOK_ALLOWED_HOSTS: hosts a webhook URL may name although private (local receivers); none by default. */
  webhookAllowedHosts: string[];
  /** CHECKOUT_PAY_WAIT_MS: how long the hosted page waits for a payment's outcome before showing "processing". */
  checkoutPayWaitMs: number;
  /** CHARGE_WAIT_MS: how long a charge request waits for the provider's answer before answering the charge as it stands (pending). */
  chargeWaitMs: number;
  /** IDEMPOTENCY_LEASE_MS: how long a key stays held by a request no one renews (its process died); a live request renews it. */
  idempotencyLeaseMs: number;
  /** CHECKOUT_ATTEMPT_HOLD_MS: how long a session's expiry waits for a payment in flight before asking the provider. */
  checkoutAttemptHoldMs: number;
  /** CHECKOUT_MAX_CARD_DECLINES: declined cards after which a session takes PIX only (card testing). */
  checkoutMaxCardDeclines: number;
  /** PAGE_POST_RATE_LIMIT per PAGE_POST_RATE_WINDOW_MS: payment and card-change submits of the hosted pages per address. */
  pagePostRateLimit: number;
  pagePostRateWindowMs: number;
  /** OFFER_LINK_RATE_LIMIT per OFFER_LINK_RATE_WINDOW_MS: checkouts an address opens through offer links. */
  offerLinkRateLimit: number;
  offerLinkRateWindowMs: number;
  /** Bounds of the listen event stream (api/listen-limits.ts). */
  listen: ListenLimits;
  /** Card testing per offer and per store (CARD_DECLINES_PER_OFFER, CARD_DECLINES_PER_STORE, CARD_SLOWDOWN_EVERY_MS). */
  cardTesting: CardTestingLimits;
  /**
   * SECRETS_KEY (base64, 32 bytes) or the file SECRETS_KEY_FILE names: seals stored responses that carry
   * a secret. Required in production; elsewhere a key per process is made up (replays then work within it).
   */
  secretsKey: string;
  /** Name resolution for webhook URL checks; the system resolver unless a test injects one. */
  webhookResolver?: HostResolver;
}

function int(value: string | undefined, fallback: number): number {
  const n = value === undefined || value === '' ? NaN : Number(value);
  return Number.isFinite(n) ? n : fallback;
}

function secretsKeyOf(env: NodeJS.ProcessEnv): string {
  const configured = env.SECRETS_KEY ?? (env.SECRETS_KEY_FILE ? readFileSync(env.SECRETS_KEY_FILE, 'utf8').trim() : undefined);
  if (configured) return configured;
  if (isProduction(env)) throw new Error('SECRETS_KEY (or SECRETS_KEY_FILE) is required in production: it seals stored responses that carry secrets');
  return newSecretsKey();
}

export function loadApiConfig(env: NodeJS.ProcessEnv = process.env): ApiConfig {
  const port = int(env.PORT, 3000);
  const publicUrl = (env.PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/$/, '');
  return {
    port,
    host: env.HOST ?? '0.0.0.0',
    altPort: env.ALT_PORT ? int(env.ALT_PORT, 0) : null,
    metricsPort: int(env.API_METRICS_PORT, 9464),
    mongoUri: env.MONGODB_URI ?? 'mongodb://127.0.0.1:27017/',
    mongoDb: env.MONGODB_DB ?? 'billing',
    temporalAddress: env.TEMPORAL_ADDRESS ?? 'localhost:7233',
    temporalNamespace: env.TEMPORAL_NAMESPACE ?? 'default',
    taskQueue: env.TEMPORAL_TASK_QUEUE ?? 'billing',
    publicUrl,
    checkoutUrl: (env.CHECKOUT_URL ?? publicUrl).replace(/\/$/, ''),
    portalUrl: (env.PORTAL_URL ?? `${publicUrl}/portal`).replace(/\/$/, ''),
    docsUrl: (env.DOCS_URL ?? `${publicUrl}/docs`).replace(/\/$/, ''),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    keyRateLimit: int(env.RATE_LIMIT_PER_KEY, 100),
    keyRateWindowMs: int(env.RATE_LIMIT_KEY_WINDOW_MS, 2000),
    ipRateLimit: int(env.RATE_LIMIT_PER_IP, 10),
    ipRateWindowMs: int(env.RATE_LIMIT_IP_WINDOW_MS, 60_000),
    development: !isProduction(env),
    logLevel: env.LOG_LEVEL ?? 'info',
    webhookAllowedHosts: parseAllowedHosts(env.WEBHOOK_ALLOWED_HOSTS),
    checkoutPayWaitMs: int(env.CHECKOUT_PAY_WAIT_MS, 20_000),
    chargeWaitMs: int(env.CHARGE_WAIT_MS, 20_000),
    idempotencyLeaseMs: int(env.IDEMPOTENCY_LEASE_MS, 30_000),
    checkoutAttemptHoldMs: int(env.CHECKOUT_ATTEMPT_HOLD_MS, 120_000),
    checkoutMaxCardDeclines: int(env.CHECKOUT_MAX_CARD_DECLINES, 5),
    pagePostRateLimit: int(env.PAGE_POST_RATE_LIMIT, 20),
    pagePostRateWindowMs: int(env.PAGE_POST_RATE_WINDOW_MS, 10 * 60_000),
    // Above the page submits' bound: buyers behind one carrier NAT share an address.
    offerLinkRateLimit: int(env.OFFER_LINK_RATE_LIMIT, 60),
    offerLinkRateWindowMs: int(env.OFFER_LINK_RATE_WINDOW_MS, 10 * 60_000),
    listen: listenLimitsFrom(env),
    cardTesting: cardTestingLimitsFrom(env),
    secretsKey: secretsKeyOf(env),
  };
}
