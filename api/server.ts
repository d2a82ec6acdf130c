// The API process: configuration, database and Temporal connections, listen, graceful close.
import http from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { buildApp } from './app';
import { loadApiConfig } from './config';
import { connectDatabase } from '../store/database';
import { slowCommandMsFrom } from '../store/slow-commands';
import { ensureIndexes } from '../store/indexes';
import { findStoreStripeAccount } from '../store/stores';
import { chargeAccountPins } from '../store/charge-accounts';
import { createPaymentConnections } from '../adapters/provider';
import { stripeWebSettings } from '../adapters/provider/stripe/web';
import { temporalConnectionOptions } from '../adapters/temporal-connection';
import { isEntryPoint } from '../adapters/entry-point';
import { apiTemporalInterceptors, DEPENDENCY_WAIT_MS } from './outages';
import { createApiMetrics, startMetricsServer } from './metrics';
import { installBusinessMetrics } from '../services/operations/business-metrics';
import { tracingClientInterceptors, tracingFromEnv } from '../adapters/tracing';

export async function startApiServer(config = loadApiConfig()) {
  // Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set; first, so every span has its provider.
  const tracing = tracingFromEnv('billing-api');
  // A database that cannot be reached answers 503 in about two seconds, not after the driver's 30.
  const database = await connectDatabase(config.mongoUri, config.mongoDb, {
    serverSelectionTimeoutMS: DEPENDENCY_WAIT_MS,
    slowCommandMs: slowCommandMsFrom(process.env),
  });
  const { db } = database;
  await ensureIndexes(db);
  // Lazy: the API answers reads even while Temporal is still starting or briefly away.
  const connection = Connection.lazy({
    ...temporalConnectionOptions(),
    address: config.temporalAddress,
    connectTimeout: DEPENDENCY_WAIT_MS,
    interceptors: apiTemporalInterceptors(),
  });
  const temporal = new Client({ connection, namespace: config.temporalNamespace, interceptors: tracingClientInterceptors(tracing) });
  const metrics = createApiMetrics();
  installBusinessMetrics(metrics.business);

  const app = await buildApp(
    {
      db,
      config,
      temporal,
      ...createPaymentConnections(db, process.env, {
        stripeAccountOf: (storeId) => findStoreStripeAccount(db, storeId),
        chargeAccounts: chargeAccountPins(db),
      }),
      stripe: stripeWebSettings(),
      httpDuration: metrics.httpDuration,
      traced: tracing !== null,
    },
    { logger: { level: config.logLevel }, connectionTimeout: 30_000, requestTimeout: 60_000, keepAliveTimeout: 72_000 },
  );
  app.addHook('onClose', async () => {
    await connection.close().catch(() => undefined);
    await database.close();
    await tracing?.shutdown();
  });
  await app.listen({ port: config.port, host: config.host });
  const metricsServer = await startMetricsServer(metrics.registry, config.metricsPort, config.host);

  // {alt_base_url}: the same routes on a second port, when configured.
  let alt: http.Server | null = null;
  if (config.altPort) {
    alt = http.createServer((req, res) => app.routing(req, res));
    await new Promise<void>((resolve) => alt!.listen(config.altPort!, config.host, resolve));
  }
  return {
    app,
    async close() {
      if (alt) await new Promise((resolve) => alt!.close(resolve));
      await new Promise((resolve) => metricsServer.close(resolve));
      await app.close();
    },
  };
}

/** How long a stopping API lets requests in flight finish before it exits anyway. */
const DRAIN_MS = 10_000;

if (isEntryPoint(import.meta.url)) {
  const server = await startApiServer();
  const stop = async () => {
    const forced = setTimeout(() => process.exit(0), DRAIN_MS);
    forced.unref();
    await server.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
