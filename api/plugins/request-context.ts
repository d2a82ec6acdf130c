// Headers every response carries (Request-Id, Cache-Control) and the request log: which key made
// each call, buffered and written in batches so logging never sits on the request's path.
import fp from 'fastify-plugin';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { collections, type RequestLogDoc } from '../../activities/store/collections';

export const REQUEST_LOG_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export function newRequestId(): string {
  return `req_${randomBytes(10).toString('hex')}`;
}

export default fp(async function requestContextPlugin(app: FastifyInstance) {
  const { requestLogs } = collections(app.deps.db);
  let buffer: RequestLogDoc[] = [];

  app.addHook('onRequest', async (request, reply) => {
    reply.header('Request-Id', request.id);
    reply.header('Cache-Control', 'no-store');
  });

  app.addHook('onResponse', async (request, reply) => {
    if (request.routeOptions.config?.public) return;
    const now = Date.now();
    buffer.push({
      _id: request.id,
      store_id: request.auth?.store._id ?? null,
      api_key: request.auth?.apiKey._id ?? null,
      method: request.method,
      path: request.url.split('?')[0],
      status: reply.statusCode,
      duration_ms: Math.round(reply.elapsedTime),
      ip: request.ip,
      created: Math.floor(now / 1000),
    });
  });

  async function flush() {
    if (buffer.length === 0) return;
    const batch = buffer;
    buffer = [];
    await requestLogs.insertMany(batch, { ordered: false }).catch((err) => {
      if ((err as { code?: number }).code !== 11000) app.log.warn({ err }, 'request log write failed');
    });
  }

  async function sweep() {
    const cutoff = Math.floor((Date.now() - REQUEST_LOG_RETENTION_MS) / 1000);
    await requestLogs.deleteMany({ created: { $lt: cutoff } });
  }

  const flusher = setInterval(() => void flush(), 500);
  flusher.unref();
  const sweeper = setInterval(() => sweep().catch((err) => app.log.warn({ err }, 'request log sweep failed')), 60 * 60_000);
  sweeper.unref();
  app.addHook('onClose', async () => {
    clearInterval(flusher);
    clearInterval(sweeper);
    await flush();
  });
});
