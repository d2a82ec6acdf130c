// Stores and their API keys: what authentication reads on every request and the admin CLI writes.
import type { Db } from 'mongodb';
import { generateApiKey, hashSecret, CURRENT_API_VERSION } from '../domain/api-keys';
import { newId } from '../domain/ids';
import { collections, type ApiKeyDoc, type Scope, type StoreDoc } from './collections';

export interface NewStore {
  name: string;
  slug?: string | null;
  country: string;
  currency: string;
  timezone: string;
}

export async function createStore(db: Db, input: NewStore, now = Date.now()): Promise<StoreDoc> {
  const doc: StoreDoc = {
    _id: newId('acct', now),
    name: input.name,
    slug: input.slug ?? null,
    country: input.country.toUpperCase(),
    currency: input.currency.toLowerCase(),
    timezone: input.timezone,
    active: true,
    api_enabled: true,
    plan_overdue: false,
    portal_enabled: true,
    custom_domain: null,
    created: Math.floor(now / 1000),
  };
  await collections(db).stores.insertOne(doc);
  return doc;
}

export async function findStore(db: Db, id: string): Promise<StoreDoc | null> {
  return collections(db).stores.findOne({ _id: id });
}

/** The store's connected Stripe account (acct_…), or null: the Stripe connection reads it per call (bounded cache there). */
export async function findStoreStripeAccount(db: Db, id: string): Promise<string | null> {
  const store = await collections(db).stores.findOne({ _id: id }, { projection: { stripe_account: 1 } });
  return store?.stripe_account ?? null;
}

/** The store an address names: its slug on the shared hosts, or its custom domain (hosted pages, offer links). */
export async function findStoreByAddress(db: Db, by: { slug: string } | { customDomain: string }): Promise<StoreDoc | null> {
  const { stores } = collections(db);
  return 'slug' in by ? stores.findOne({ slug: by.slug }) : stores.findOne({ custom_domain: by.customDomain });
}

/** Whether another store already has the slug (the portal's address on the shared host). */
export async function isStoreSlugTaken(db: Db, slug: string, exceptId?: string): Promise<boolean> {
  const filter = exceptId === undefined ? { slug } : { slug, _id: { $ne: exceptId } };
  return (await collections(db).stores.findOne(filter)) !== null;
}

/** Every store, in creation order (the admin CLI). */
export function listStores(db: Db): Promise<StoreDoc[]> {
  return collections(db).stores.find({}).sort({ _id: 1 }).toArray();
}

/** The operator's changes to a store's flags and settings; null when there is no such store. */
export function updateStoreFields(db: Db, id: string, set: Partial<StoreDoc>): Promise<StoreDoc | null> {
  return collections(db).stores.findOneAndUpdate({ _id: id }, { $set: set }, { returnDocument: 'after' });
}

export interface NewApiKey {
  storeId: string;
  name: string;
  scopes: Scope[];
  expiresAt?: number | null;
}

/** Creates a key pinned to the current version; the full key is returned here and never again. */
export async function createApiKey(db: Db, input: NewApiKey, now = Date.now()): Promise<{ doc: ApiKeyDoc; key: string }> {
  const { full, keyId, secret } = generateApiKey();
  const doc: ApiKeyDoc = {
    // The id is derived from the key's public identifier, so authentication, on every request, finds
    // the key with one primary-key lookup.
    _id: apiKeyIdOf(keyId),
    store_id: input.storeId,
    key_id: keyId,
    secret_hash: hashSecret(secret),
    last4: secret.slice(-4),
    name: input.name,
    scopes: input.scopes,
    version: CURRENT_API_VERSION,
    expires_at: input.expiresAt ?? null,
    revoked_at: null,
    created: Math.floor(now / 1000),
  };
  await collections(db).apiKeys.insertOne(doc);
  return { doc, key: full };
}

/** `ak_` + the 12-character public identifier that follows `vk_live_` in the key (not secret). */
export function apiKeyIdOf(keyId: string): string {
  return `ak_${keyId}`;
}

/** One lookup by `_id` (every key's id is derived from its identifier), so an unknown key costs no scan. */
export async function findApiKeyByKeyId(db: Db, keyId: string): Promise<ApiKeyDoc | null> {
  const byId = await collections(db).apiKeys.findOne({ _id: apiKeyIdOf(keyId) });
  return byId?.key_id === keyId ? byId : null;
}

/** A store's keys in creation order (the admin CLI). */
export function listApiKeys(db: Db, storeId: string): Promise<ApiKeyDoc[]> {
  return collections(db).apiKeys.find({ store_id: storeId }).sort({ _id: 1 }).toArray();
}

/** Revokes the key now, once (a revoked key keeps its first revocation time); null when there is no such key. */
export async function revokeApiKey(db: Db, id: string, now = Date.now()): Promise<ApiKeyDoc | null> {
  const { apiKeys } = collections(db);
  const revoked = await apiKeys.findOneAndUpdate(
    { _id: id, revoked_at: null },
    { $set: { revoked_at: Math.floor(now / 1000) } },
    { returnDocument: 'after' },
  );
  return revoked ?? apiKeys.findOne({ _id: id });
}

/**
 * Store records as authentication reads them, cached per process for at most `maxAgeMs` (1 s by
 * default): a store flag changed by the operator (inactive, API off, deleted) applies within a second
 * on every process. API keys are never cached, so a revocation applies on the very next request.
 */
export class StoreCache {
  private readonly entries = new Map<string, { at: number; store: Promise<StoreDoc | null> }>();

  constructor(
    private readonly db: Db,
    private readonly maxAgeMs = 1000,
  ) {}

  get(id: string, now = Date.now()): Promise<StoreDoc | null> {
    const hit = this.entries.get(id);
    if (hit && now - hit.at < this.maxAgeMs) return hit.store;
    // Concurrent requests for one store share a single read.
    const store = findStore(this.db, id);
    this.entries.set(id, { at: now, store });
    store.catch(() => this.entries.delete(id));
    if (this.entries.size > 10_000) this.prune(now);
    return store;
  }

  prune(now = Date.now()): void {
    for (const [id, entry] of this.entries) if (now - entry.at >= this.maxAgeMs) this.entries.delete(id);
  }
}
