// Authentication, scopes, versions and rate limits, in the spec's order: key shape is checked
// before any lookup, the secret is compared by hash in constant time, and a request without a
// valid key counts against its IP address (10 a minute) while a valid key has its own window.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { API_VERSIONS, parseApiKey, secretMatches } from '../../domain/api-keys';
import { ApiError } from '../../domain/errors';
import { findApiKeyByKeyId, findStore } from '../../activities/store/stores';
import { hitWindow, sweepExpiredWindows } from '../../activities/store/rate-counters';
import type { AuthContext } from '../context';

const INVALID_KEY_MESSAGE = 'Invalid API key provided.';

function extractKey(header: string | undefined): string | null | undefined {
  if (!header) return undefined;
  const [scheme, ...rest] = header.trim().split(/\s+/);
  const value = rest.join(' ');
  if (/^bearer$/i.test(scheme)) return value;
  if (/^basic$/i.test(scheme)) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    // The key is the user; the password must be empty.
    if (colon === -1) return decoded;
    return decoded.slice(colon + 1) === '' ? decoded.slice(0, colon) : '';
  }
  return undefined;
}

async function authenticate(app: FastifyInstance, request: FastifyRequest): Promise<AuthContext> {
  const { db } = app.deps;
  const raw = extractKey(request.headers.authorization);
  if (raw === undefined) {
    throw new ApiError('api_key_missing', 'You did not provide an API key. Send it as "Authorization: Bearer <API_KEY>".');
  }
  const parsed = parseApiKey(raw ?? '');
  if (!parsed) throw new ApiError('invalid_api_key', INVALID_KEY_MESSAGE);
  const key = await findApiKeyByKeyId(db, parsed.keyId);
  if (!key || !secretMatches(parsed.secret, key.secret_hash)) {
    throw new ApiError('invalid_api_key', INVALID_KEY_MESSAGE);
  }
  const store = await findStore(db, key.store_id);
  if (!store) throw new ApiError('invalid_api_key', INVALID_KEY_MESSAGE);
  if (key.revoked_at !== null) throw new ApiError('api_key_revoked', 'This API key has been revoked.');
  if (key.expires_at !== null && key.expires_at * 1000 <= Date.now()) {
    throw new ApiError('api_key_expired', 'This API key has expired.');
  }
  if (!store.active) throw new ApiError('project_inactive', 'This store is not active.');
  if (!store.api_enabled) throw new ApiError('api_not_enabled', 'The API is not enabled for this store.');
  return { store, apiKey: key, apiVersion: key.version };
}

function setRateHeaders(reply: FastifyReply, limit: number, count: number, resetAt: number) {
  reply.header('X-RateLimit-Limit', String(limit));
  reply.header('X-RateLimit-Remaining', String(Math.max(0, limit - count)));
  reply.header('X-RateLimit-Reset', String(resetAt));
}

function rateLimited(resetAt: number, what: string): ApiError {
  const retryAfter = Math.max(1, resetAt - Math.floor(Date.now() / 1000));
  return new ApiError('rate_limit', `Too many requests ${what}. Retry after ${retryAfter} seconds.`, {
    headers: { 'Retry-After': String(retryAfter) },
  });
}

export default fp(async function authPlugin(app: FastifyInstance) {
  const { config, db } = app.deps;
  app.decorateRequest('auth', null);

  app.addHook('onRequest', async (request, reply) => {
    // Unknown paths answer 404 whoever asks; pages and documents need no key.
    if (request.is404 || request.routeOptions.config?.public) return;

    let auth: AuthContext;
    try {
      auth = await authenticate(app, request);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        const hit = await hitWindow(db, `ip:${request.ip}`, config.ipRateWindowMs);
        setRateHeaders(reply, config.ipRateLimit, hit.count, hit.resetAt);
        if (hit.count > config.ipRateLimit) throw rateLimited(hit.resetAt, 'without a valid API key from this address');
      }
      throw error;
    }

    const hit = await hitWindow(db, `key:${auth.apiKey._id}`, config.keyRateWindowMs);
    setRateHeaders(reply, config.keyRateLimit, hit.count, hit.resetAt);
    if (hit.count > config.keyRateLimit) throw rateLimited(hit.resetAt, 'with this API key');

    const requested = request.headers['service-version'];
    if (requested !== undefined) {
      const version = Array.isArray(requested) ? requested[0] : requested;
      if (!(API_VERSIONS as readonly string[]).includes(version)) {
        throw new ApiError(
          'invalid_api_version',
          `Unknown API version '${version}'. Accepted versions: ${API_VERSIONS.join(', ')}.`,
          { param: 'Service-Version' },
        );
      }
      auth.apiVersion = version;
    }
    request.auth = auth;
    reply.header('Service-Version', auth.apiVersion);

    const needed = request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write';
    if (!auth.apiKey.scopes.includes(needed)) {
      throw new ApiError('insufficient_scope', `This API key lacks the '${needed}' scope needed for ${request.method} requests.`);
    }
  });

  // Rate windows are small documents; sweep the old ones (no TTL index on FerretDB).
  const sweeper = setInterval(() => {
    sweepExpiredWindows(db).catch((err) => app.log.warn({ err }, 'rate window sweep failed'));
  }, 60_000);
  sweeper.unref();
  app.addHook('onClose', async () => clearInterval(sweeper));
});
