// Rate limits for every API request, after auth has found the caller: a valid key has its own window
// (100 per 2 s), a request without one counts against its address (10 a minute), and every response
// carries the X-RateLimit headers: also unknown paths and public documents. Hosted pages have no window.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError } from '../../domain/errors';
import { SharedRateWindows, sweepExpiredWindows, type WindowHit } from '../../store/rate-counters';
import { clientAddress } from '../client-address';

function setRateHeaders(reply: FastifyReply, limit: number, hit: WindowHit) {
  reply.header('X-RateLimit-Limit', String(limit));
  reply.header('X-RateLimit-Remaining', String(hit.remaining));
  reply.header('X-RateLimit-Reset', String(hit.resetAt));
}

function rateLimited(hit: WindowHit, what: string): ApiError {
  const retryAfter = Math.max(1, hit.resetAt - Math.floor(Date.now() / 1000));
  return new ApiError('rate_limit', `Too many requests ${what}. Retry after ${retryAfter} seconds.`, {
    headers: { 'Retry-After': String(retryAfter) },
  });
}

export default fp(
  async function rateLimitsPlugin(app: FastifyInstance) {
    const { config, db } = app.deps;
    const windows = new SharedRateWindows(db);

    async function limit(reply: FastifyReply, counter: string, max: number, windowMs: number, what: string): Promise<void> {
      const hit = await windows.hit(counter, max, windowMs);
      setRateHeaders(reply, max, hit);
      if (!hit.allowed) throw rateLimited(hit, what);
    }

    app.addHook('onRequest', async (request, reply) => {
      const caller = request.caller;
      if (!caller) return;
      if (caller.kind === 'key') await limit(reply, `key:${caller.key._id}`, config.keyRateLimit, config.keyRateWindowMs, 'with this API key');
      else await limit(reply, `ip:${clientAddress(request)}`, config.ipRateLimit, config.ipRateWindowMs, 'without a valid API key from this address');
    });

    // Counters of ended windows are swept as a fallback where the TTL index is not available; the per-process state too.
    const sweeper = setInterval(() => {
      windows.prune();
      sweepExpiredWindows(db).catch((err) => app.log.warn({ err }, 'rate window sweep failed'));
    }, 60_000);
    sweeper.unref();
    app.addHook('onClose', async () => clearInterval(sweeper));
  },
  { name: 'rate-limits', dependencies: ['auth'] },
);
