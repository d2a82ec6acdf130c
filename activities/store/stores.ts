// Stores and their API keys: what authentication reads on every request and the admin CLI writes.
import type { Db } from 'mongodb';
import { generateApiKey, hashSecret, CURRENT_API_VERSION } from '../../domain/api-keys';
import { newId } from '../../domain/ids';
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
    _id: newId('ak', now),
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

export async function findApiKeyByKeyId(db: Db, keyId: string): Promise<ApiKeyDoc | null> {
  return collections(db).apiKeys.findOne({ key_id: keyId });
}
