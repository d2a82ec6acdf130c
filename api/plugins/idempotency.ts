// Idempotency-Key on every POST and DELETE, one key space for all of them: same key and same request
// replays the stored response (4xx included, 5xx never stored), a different request under the key is
// refused, and a concurrent duplicate gets 409 at once while the first still runs (its lease renewed
// until it answers). Charge keys never expire, and a replayed successful charge is answered by its route
// as the charge is now.
import fp from 'fastify-plugin';
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors';
import { sealerFor } from '../sealing';
import { hooksOf } from '../route-hooks';
import { stableStringify } from '../../domain/stable-json';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  renewIdempotencyLease,
  sweepExpiredIdempotencyKeys,
  type IdempotencyClaim,
} from '../../store/idempotency';

export const IDEMPOTENCY_KEY_MAX = 255;

export function readIdempotencyKey(headers: Record<string, string | string[] | undefined>): string | null {
  const raw = headers['idempotency-key'];
  const key = Array.isArray(raw) ? raw[0] : raw;
  if (key === undefined || key === '') return null;
  if (key.length > IDEMPOTENCY_KEY_MAX) {
    throw new ApiError('idempotency_key_too_long', `Idempotency-Key can be up to ${IDEMPOTENCY_KEY_MAX} characters.`, {
      param: 'Idempotency-Key',
    });
  }
  return key;
}

export function requestFingerprint(method: string, url: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${url}\n${stableStringify(body ?? {})}`)
    .digest('hex');
}

/** No request holds a key longer than this, renewed or not: a handler stuck for good frees it. */
const LEASE_RENEWAL_MAX_MS = 10 * 60_000;

/** Renews a running request's lease every third of it until stopped; stops itself once the run is not ours. */
function keepLease(app: FastifyInstance, claim: IdempotencyClaim, leaseMs: number): () => void {
  const started = Date.now();
  const timer = setInterval(() => {
    if (Date.now() - started > LEASE_RENEWAL_MAX_MS) return clearInterval(timer);
    renewIdempotencyLease(app.deps.db, claim, leaseMs).then(
      (ours) => ours || clearInterval(timer),
      (err: unknown) => app.log.warn({ err, requestId: claim.run }, 'idempotency lease renewal failed'),
    );
  }, leaseMs / 3);
  timer.unref();
  return () => clearInterval(timer);
}

export default fp(async function idempotencyPlugin(app: FastifyInstance) {
  const { db, config } = app.deps;
  const sealer = sealerFor(config.secretsKey);
  const leaseMs = config.idempotencyLeaseMs;
  const leases = new WeakMap<object, () => void>();
  const stopLease = (request: object) => {
    leases.get(request)?.();
    leases.delete(request);
  };
  app.decorateRequest('idempotency', null);

  const claim = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.auth) return;
    const key = readIdempotencyKey(request.headers);
    if (key === null) return;

    const permanent = request.routeOptions.config?.permanentIdempotency === true;
    const claim = await claimIdempotencyKey(db, {
      storeId: request.auth.store._id,
      key,
      fingerprint: requestFingerprint(request.method, request.url, request.body),
      requestId: request.id,
      permanent,
      leaseMs,
    });
    switch (claim.kind) {
      case 'claimed':
        request.idempotency = { id: claim.id, run: claim.run, key, created: claim.created, replayed: false };
        leases.set(request, keepLease(app, claim, leaseMs));
        return;
      case 'reused':
        throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was already used with a different method, path or body.', {
          param: 'Idempotency-Key',
        });
      case 'in_use':
        throw new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed. Retry shortly.', {
          param: 'Idempotency-Key',
        });
      case 'replay': {
        const stored = claim.doc.response!;
        request.idempotency = { id: claim.doc._id, run: '', key, created: 0, replayed: true };
        if (permanent && stored.status < 300) return;
        reply.headers(stored.headers);
        reply.header('Idempotent-Replayed', 'true');
        reply.header('Original-Request-Id', claim.doc.request_id);
        reply.status(stored.status).type('application/json; charset=utf-8');
        return reply.send(sealer.open(stored.body));
      }
    }
  };

  const record = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const state = request.idempotency;
    if (!state || state.replayed) return payload;
    stopLease(request);
    try {
      // A route's own 409 (its work still running elsewhere) is no answer to keep: a retry asks again.
      if (reply.statusCode >= 500 || reply.statusCode === 409) {
        await releaseIdempotencyKey(db, state);
      } else {
        const headers: Record<string, string> = {};
        const location = reply.getHeader('location');
        if (typeof location === 'string') headers.location = location;
        const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
        const secret = request.routeOptions.config?.secretResponse === true;
        await completeIdempotencyKey(db, state, { status: reply.statusCode, body: secret ? sealer.seal(body) : body, headers });
      }
    } catch (err) {
      // The work is done; the client still gets its answer. The key's lease runs out and a retry runs again.
      request.log.error({ err, requestId: request.id }, 'could not record the idempotent response');
    }
    return payload;
  };

  // Only POST and DELETE routes carry the hooks, so a GET runs none of them. The claim comes before the
  // route's own preValidation (its body checks), as a global hook would; a client that hung up does not
  // end the work: the lease is kept until the handler answers.
  app.addHook('onRoute', (route) => {
    if (![route.method].flat().some((method) => method === 'POST' || method === 'DELETE')) return;
    route.preValidation = [claim, ...hooksOf(route.preValidation)];
    route.onSend = [...hooksOf(route.onSend), record];
    route.onResponse = [...hooksOf(route.onResponse), (request, _reply, done) => (stopLease(request), done())];
  });

  // Swept as a fallback where the TTL index on expires_at is unavailable.
  const sweeper = setInterval(() => {
    sweepExpiredIdempotencyKeys(db).catch((err) => app.log.warn({ err }, 'idempotency sweep failed'));
  }, 10 * 60_000);
  sweeper.unref();
  app.addHook('onClose', async () => clearInterval(sweeper));
});
