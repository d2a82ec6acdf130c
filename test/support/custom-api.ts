// A test API with extra routes registered only in the test (a handler that throws, a slow one), built
// exactly like the real app so the extra routes get every convention: auth, errors, idempotency, logs.
import type { FastifyInstance } from 'fastify';
import type { Db } from 'mongodb';
import { buildApp } from '../../api/app';
import { loadApiConfig, type ApiConfig } from '../../api/config';
import { ensureIndexes } from '../../store/indexes';
import { createTestConnection } from '../../adapters/provider/test-connection';
import { freePort } from '../../temporal-dev/servers';
import type { TestApi } from './api';
import { lazyTestClient, uniqueTaskQueue } from './env';

export async function startApiWithRoutes(options: {
  db: Db;
  routes: (v1: FastifyInstance) => void | Promise<void>;
  /** Routes outside /v1, as hosted pages are registered. */
  pages?: (root: FastifyInstance) => void | Promise<void>;
  config?: Partial<ApiConfig>;
}): Promise<TestApi> {
  await ensureIndexes(options.db);
  const port = await freePort();
  const base = loadApiConfig({ ...process.env, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'silent' });
  const config: ApiConfig = { ...base, trustProxy: ['loopback'], taskQueue: uniqueTaskQueue('unpolled'), ...options.config };
  // No workflow runs behind these routes: a lazy client, on a queue nobody polls.
  const lazy = lazyTestClient();
  const app = await buildApp(
    { db: options.db, config, temporal: lazy.client, provider: createTestConnection({ db: options.db }) },
    { logger: false },
  );
  app.addHook('onClose', () => lazy.close());
  await app.register(async (v1) => options.routes(v1), { prefix: '/v1' });
  if (options.pages) await app.register(async (root) => options.pages!(root));
  await app.listen({ port, host: '127.0.0.1' });
  return { app, url: `http://127.0.0.1:${port}`, config, close: () => app.close() };
}
