// Authentication, scopes, versions and rate limits for every route, in the spec's order: the key's shape
// is checked before any lookup, the secret is compared by hash in constant time, keys are read fresh on
// every request (revocation applies at once on every process), a request without a valid key counts
// against its IP address (10 a minute) while a valid key has its own window (100 per 2 s), and every
// response carries the X-RateLimit headers: also unknown paths and public documents, which need no key.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { API_VERSIONS, parseApiKey, secretMatches } from '../../domain/api-keys';
import { ApiError } from '../../domain/errors';
import { findApiKeyByKeyId, StoreCache } from '../../store/stores';
import { SharedRateWindows, sweepExpiredWindows, type WindowHit } from '../../store/rate-counters';
import type { ApiKeyDoc, StoreDoc } from '../../store/collections';
import type { AuthContext } from '../context';

const INVALID_KEY_MESSAGE = 'Invalid API key provided.';

declare module 'fastify' {
  interface FastifyRequest {
    /** The key a request presented once it was found, even when refused: the request log names it. */
    presentedKey: { id: string; storeId: string } | null;
  }
}

/** undefined: no usable Authorization header (api_key_missing); otherwise the presented key text. */
export function extractKey(header: string | undefined): string | undefined {
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

export default fp(async function authPlugin(app: FastifyInstance) {
  const { config, db } = app.deps;
  const windows = new SharedRateWindows(db);
  const stores = new StoreCache(db);
  app.decorateRequest('auth', null);
  app.decorateRequest('presentedKey', null);

  /** The key and its store, or the 401 the spec's table gives; store flags (403) come later. */
  async function identify(request: FastifyRequest): Promise<{ key: ApiKeyDoc; store: StoreDoc }> {
    const raw = extractKey(request.headers.authorization);
    if (raw === undefined) {
      throw new ApiError('api_key_missing', 'You did not provide an API key. Send it as "Authorization: Bearer <API_KEY>".');
    }
    const parsed = parseApiKey(raw);
    if (!parsed) throw new ApiError('invalid_api_key', INVALID_KEY_MESSAGE);
    const key = await findApiKeyByKeyId(db, parsed.keyId);
    if (!key || !secretMatches(parsed.secret, key.secret_hash)) throw new ApiError('invalid_api_key', INVALID_KEY_MESSAGE);
    request.presentedKey = { id: key._id, storeId: key.store_id };
    const store = await stores.get(key.store_id);
    // A deleted store answers exactly like a wrong key.
    if (!store) throw new ApiError('invalid_api_key', INVALID_KEY_MESSAGE);
    if (key.revoked_at !== null) throw new ApiError('api_key_revoked', 'This API key has been revoked.');
    if (key.expires_at !== null && key.expires_at * 1000 <= Date.now()) {
      throw new ApiError('api_key_expired', 'This API key has expired.');
    }
    return { key, store };
  }

  async function limitByAddress(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const hit = await windows.hit(`ip:${request.ip}`, config.ipRateLimit, config.ipRateWindowMs);
    setRateHeaders(reply, config.ipRateLimit, hit);
    if (!hit.allowed) throw rateLimited(hit, 'without a valid API key from this address');
  }

  async function limitByKey(key: ApiKeyDoc, reply: FastifyReply): Promise<void> {
    const hit = await windows.hit(`key:${key._id}`, config.keyRateLimit, config.keyRateWindowMs);
    setRateHeaders(reply, config.keyRateLimit, hit);
    if (!hit.allowed) throw rateLimited(hit, 'with this API key');
  }

  app.addHook('onRequest', async (request, reply) => {
    const isPublic = Boolean(request.routeOptions.config?.public);
    // Hosted pages (public routes outside /v1) are the buyer's browser, not API calls: no key, no window.
    if (isPublic && !request.is404 && !request.url.startsWith('/v1/')) return;
    // Unknown paths answer 404 and public documents answer without a key, but both still count
    // against the caller's window: the key's when a valid one is sent, the address's otherwise.
    if (request.is404 || isPublic) {
      const found = request.headers.authorization ? await identify(request).catch(() => null) : null;
      if (found) {
        await limitByKey(found.key, reply);
        reply.header('Service-Version', found.key.version);
      } else {
        await limitByAddress(request, reply);
      }
      return;
    }

    let found: { key: ApiKeyDoc; store: StoreDoc };
    try {
      found = await identify(request);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) await limitByAddress(request, reply);
      throw error;
    }
    const { key, store } = found;
    await limitByKey(key, reply);
    reply.header('Service-Version', key.version);

    if (!store.active) throw new ApiError('project_inactive', 'This store is not active.');
    if (!store.api_enabled) throw new ApiError('api_not_enabled', 'The API is not enabled for this store.');

    const auth: AuthContext = { store, apiKey: key, apiVersion: key.version };
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
      reply.header('Service-Version', version);
    }

    const needed = request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write';
    if (!key.scopes.includes(needed)) {
      throw new ApiError('insufficient_scope', `This API key lacks the '${needed}' scope needed for ${request.method} requests.`);
    }
    request.auth = auth;
  });

  // Counters of ended windows are swept as a fallback where the TTL index is not available; the per-process state too.
  const sweeper = setInterval(() => {
    windows.prune();
    stores.prune();
    sweepExpiredWindows(db).catch((err) => app.log.warn({ err }, 'rate window sweep failed'));
  }, 60_000);
  sweeper.unref();
  app.addHook('onClose', async () => clearInterval(sweeper));
});
