// A real API server for integration tests: the app on an ephemeral port over real HTTP, against the
// suite's FerretDB (and Temporal, when a test passes a client), plus a store and keys to call it with.
import type { FastifyInstance } from 'fastify';
import type { Client } from '@temporalio/client';
import type { Db } from 'mongodb';
import { buildApp } from '../../api/app';
import { loadApiConfig, type ApiConfig } from '../../api/config';
import { type Scope, type StoreDoc } from '../../store/collections';
import { ensureIndexes } from '../../store/indexes';
import { createApiKey, createStore } from '../../store/stores';
import { createTestConnection } from '../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../adapters/provider/types';
import { freePort } from '../../temporal-dev/servers';
import { lazyTestClient, uniqueTaskQueue } from './env';

export interface TestApi {
  app: FastifyInstance;
  /** Origin, e.g. http://127.0.0.1:41234 (paths start with /v1). */
  url: string;
  config: ApiConfig;
  close(): Promise<void>;
}

export async function startTestApi(options: {
  db: Db;
  /** Without one, a lazy client of the shared dev server and an unpolled task queue: nothing started runs. */
  temporal?: Client;
  taskQueue?: string;
  provider?: PaymentProvider;
  /** The test connection beside a real-looking `provider` (test clocks' money). */
  testProvider?: PaymentProvider | null;
  config?: Partial<ApiConfig>;
  /** Request spans on (tracing set up by the test). */
  traced?: boolean;
}): Promise<TestApi> {
  await ensureIndexes(options.db);
  // Pick the port first so every absolute URL the API prints (checkout, portal, docs) points here.
  const port = await freePort();
  const base = loadApiConfig({ ...process.env, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'silent' });
  const config: ApiConfig = {
    ...base,
    // Tests simulate many client addresses through X-Forwarded-For, sent from loopback as a proxy would.
    trustProxy: ['loopback'],
    // Suites pay many times from one address; the page submit limit has its own test.
    pagePostRateLimit: 100_000,
    // Suites decline many cards in one store; card testing (and the noisy neighbour) set their own bounds.
    cardTesting: { ...base.cardTesting, perOffer: 100_000, perStore: 100_000 },
    taskQueue: options.taskQueue ?? (options.temporal ? base.taskQueue : uniqueTaskQueue('unpolled')),
    ...options.config,
  };
  const lazy = options.temporal ? null : lazyTestClient();
  const temporal = options.temporal ?? lazy!.client;
  const provider = options.provider ?? createTestConnection({ db: options.db });
  const app = await buildApp(
    { db: options.db, config, temporal, provider, testProvider: options.testProvider ?? null, traced: options.traced },
    { logger: false },
  );
  if (lazy) app.addHook('onClose', () => lazy.close());
  await app.listen({ port, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${port}`;
  return { app, url, config, close: () => app.close() };
}

export interface TestStore {
  store: StoreDoc;
  /** Full vk_live_ key with read and write scopes. */
  key: string;
  keyId: string;
  makeKey(scopes: Scope[], extra?: { expiresAt?: number | null; name?: string }): Promise<{ key: string; id: string }>;
}

export async function createTestStore(
  db: Db,
  overrides: Partial<{ name: string; slug: string | null; country: string; currency: string; timezone: string }> = {},
): Promise<TestStore> {
  const store = await createStore(db, {
    name: overrides.name ?? 'Test Store',
    slug: overrides.slug === undefined ? `store-${Math.random().toString(36).slice(2, 10)}` : overrides.slug,
    country: overrides.country ?? 'BR',
    currency: overrides.currency ?? 'brl',
    timezone: overrides.timezone ?? 'America/Sao_Paulo',
  });
  const makeKey = async (scopes: Scope[], extra: { expiresAt?: number | null; name?: string } = {}) => {
    const { doc, key } = await createApiKey(db, { storeId: store._id, name: extra.name ?? 'test key', scopes, expiresAt: extra.expiresAt ?? null });
    return { key, id: doc._id };
  };
  const main = await makeKey(['read', 'write']);
  return { store, key: main.key, keyId: main.id, makeKey };
}

/** fetch against the test API with a key; JSON bodies by default, form bodies with `form`. */
export async function call(
  api: { url: string },
  key: string | null,
  method: string,
  path: string,
  options: { json?: unknown; form?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (key) headers.authorization = `Bearer ${key}`;
  let body: string | undefined;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.form !== undefined) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = options.form;
  }
  const response = await fetch(`${api.url}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // Pages answer HTML; keep the text.
  }
  return { status: response.status, headers: response.headers, body: parsed };
}
