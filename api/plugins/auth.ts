// Authentication, scopes and versions for every route, in the spec's order: the key's shape is checked
// before any lookup, the secret is compared by hash in constant time, and keys are read fresh on every
// request (revocation applies at once on every process). Two hooks with the rate limits between them
// (api/app.ts): identify finds the caller, rate-limits.ts counts it, authorize refuses or admits it.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { API_VERSIONS, parseApiKey, secretMatches } from '../../domain/api-keys';
import { ApiError } from '../../domain/errors';
import { findApiKeyByKeyId, StoreCache } from '../../store/stores';
import type { ApiKeyDoc, StoreDoc } from '../../store/collections';
import type { AuthContext } from '../context';

const INVALID_KEY_MESSAGE = 'Invalid API key provided.';

/**
 * Who a request comes from, as far as its key goes: a valid key and its store, or only an address
 * (with the 401 to answer once the address's window has counted it, when the route needs a key).
 */
export type Caller = { kind: 'key'; key: ApiKeyDoc; store: StoreDoc } | { kind: 'address'; refusal: ApiError | null };

declare module 'fastify' {
  interface FastifyRequest {
    /** The key a request presented once it was found, even when refused: the request log names it. */
    presentedKey: { id: string; storeId: string } | null;
    /** null for hosted pages: the buyer's browser, not an API call. */
    caller: Caller | null;
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

/**
 * page: hosted pages (public routes outside /v1), no key and no window; open: unknown paths (404) and
 * public documents, which answer without a key but count against the caller's window; key: everything else.
 */
function accessOf(request: FastifyRequest): 'page' | 'open' | 'key' {
  const isPublic = Boolean(request.routeOptions.config?.public);
  if (isPublic && !request.is404 && !request.url.startsWith('/v1/')) return 'page';
  return request.is404 || isPublic ? 'open' : 'key';
}

/** The key and its store, or the 401 the spec's table gives; store flags (403) come later. */
async function findKey(app: FastifyInstance, stores: StoreCache, request: FastifyRequest): Promise<{ key: ApiKeyDoc; store: StoreDoc }> {
  const raw = extractKey(request.headers.authorization);
  if (raw === undefined) {
    throw new ApiError('api_key_missing', 'You did not provide an API key. Send it as "Authorization: Bearer <API_KEY>".');
  }
  const parsed = parseApiKey(raw);
  if (!parsed) throw new ApiError('invalid_api_key', INVALID_KEY_MESSAGE);
  const key = await findApiKeyByKeyId(app.deps.db, parsed.keyId);
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

/** The caller of an open route: its key when a valid one is sent, else its address (nothing to refuse). */
async function openCaller(app: FastifyInstance, stores: StoreCache, request: FastifyRequest): Promise<Caller> {
  const found = request.headers.authorization ? await findKey(app, stores, request).catch(() => null) : null;
  return found ? { kind: 'key', ...found } : { kind: 'address', refusal: null };
}

/** The caller of a route that needs a key: a 401 is answered after the address's window counts it; other failures at once. */
async function keyCaller(app: FastifyInstance, stores: StoreCache, request: FastifyRequest): Promise<Caller> {
  try {
    return { kind: 'key', ...(await findKey(app, stores, request)) };
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return { kind: 'address', refusal: error };
    throw error;
  }
}

/** The version an authenticated answer names: the one asked for when it is known (an unknown one is refused later), else the key's. */
function echoedVersion(request: FastifyRequest, key: ApiKeyDoc): string {
  const requested = request.headers['service-version'];
  const version = Array.isArray(requested) ? requested[0] : requested;
  return version !== undefined && (API_VERSIONS as readonly string[]).includes(version) ? version : key.version;
}

/** Finds the caller (request.caller); refuses nothing yet, so the rate limits count every caller first. */
export default fp(
  async function authPlugin(app: FastifyInstance) {
    const stores = new StoreCache(app.deps.db);
    app.decorateRequest('auth', null);
    app.decorateRequest('presentedKey', null);
    app.decorateRequest('caller', null);
    app.addHook('onRequest', async (request, reply) => {
      const access = accessOf(request);
      if (access === 'page') return;
      request.caller = access === 'open' ? await openCaller(app, stores, request) : await keyCaller(app, stores, request);
      // Every authenticated answer carries the version, a 429 of the key's window included.
      if (request.caller.kind === 'key') reply.header('Service-Version', echoedVersion(request, request.caller.key));
    });
    // The per-process cache of stores is pruned now and then.
    const sweeper = setInterval(() => stores.prune(), 60_000);
    sweeper.unref();
    app.addHook('onClose', async () => clearInterval(sweeper));
  },
  { name: 'auth' },
);

/** After the rate limits: the 401 found earlier, then the store's flags (403), the version asked for and the key's scope. */
export const authorize = fp(
  async function authorizePlugin(app: FastifyInstance) {
    // Callback style: it never waits, so it costs no promise on every request.
    app.addHook('onRequest', (request, reply, done) => {
      const caller = request.caller;
      if (caller?.kind !== 'key') return done(caller?.refusal ?? undefined);
      reply.header('Service-Version', caller.key.version);
      try {
        if (accessOf(request) === 'key') request.auth = admit(request, reply, caller.key, caller.store);
      } catch (error) {
        return done(error as Error);
      }
      done();
    });
  },
  { name: 'authorize', dependencies: ['auth', 'rate-limits'] },
);

function admit(request: FastifyRequest, reply: FastifyReply, key: ApiKeyDoc, store: StoreDoc): AuthContext {
  if (!store.active) throw new ApiError('project_inactive', 'This store is not active.');
  if (!store.api_enabled) throw new ApiError('api_not_enabled', 'The API is not enabled for this store.');
  const auth: AuthContext = { store, apiKey: key, apiVersion: key.version };
  const requested = request.headers['service-version'];
  if (requested !== undefined) {
    const version = Array.isArray(requested) ? requested[0] : requested;
    if (!(API_VERSIONS as readonly string[]).includes(version)) {
      throw new ApiError('invalid_api_version', `Unknown API version '${version}'. Accepted versions: ${API_VERSIONS.join(', ')}.`, {
        param: 'Service-Version',
      });
    }
    auth.apiVersion = version;
    reply.header('Service-Version', version);
  }
  const needed = request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write';
  if (!key.scopes.includes(needed)) {
    throw new ApiError('insufficient_scope', `This API key lacks the '${needed}' scope needed for ${request.method} requests.`);
  }
  return auth;
}
