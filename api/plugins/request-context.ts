// Headers every response carries (Request-Id, Cache-Control) and the request log: which key made
// each call, buffered and written in batches so logging never sits on the request's path.
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { sweepRequestLogs, writeRequestLogs } from '../../store/request-logs';
import { RequestLogBuffer } from '../request-log-buffer';

export default fp(async function requestContextPlugin(app: FastifyInstance) {
  const { db } = app.deps;
  const buffer = new RequestLogBuffer();

  // Callback style, here and below: hooks that never wait cost no promise on every request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('Request-Id', request.id);
    reply.header('Cache-Control', 'no-store');
    done();
  });

  app.addHook('onResponse', (request, reply, done) => {
    done();
    if (request.routeOptions.config?.public) return;
    const storeId = request.auth?.store._id ?? request.presentedKey?.storeId ?? null;
    // A call naming no store is in no store's log (logs are read per store): an anonymous flood writes nothing.
    if (storeId === null) return;
    const now = Date.now();
    buffer.push({
      _id: request.id,
      // The key that made the call, also when it was refused (revoked, expired, store switched off).
      store_id: storeId,
      api_key: request.auth?.apiKey._id ?? request.presentedKey?.id ?? null,
      method: request.method,
      path: request.url.split('?')[0],
      status: reply.statusCode,
      duration_ms: Math.round(reply.elapsedTime),
      ip: request.ip,
      created: Math.floor(now / 1000),
    });
  });

  const flush = () => buffer.flush((batch) => writeRequestLogs(db, batch)).catch((err) => app.log.warn({ err }, 'request log write failed'));

  const sweep = () => sweepRequestLogs(db).catch((err) => app.log.warn({ err }, 'request log sweep failed'));
  const flusher = setInterval(() => void flush(), 500);
  flusher.unref();
  const firstSweep = setTimeout(sweep, 10_000);
  firstSweep.unref();
  const sweeper = setInterval(sweep, 60 * 60_000);
  sweeper.unref();
  app.addHook('onClose', async () => {
    clearInterval(flusher);
    clearInterval(sweeper);
    clearTimeout(firstSweep);
    await flush();
  });
});
