// Webhook endpoints in MongoDB: documents, ids, the per-store slot counter and the failure count that
// auto-disables an endpoint. Ids are time-ordered v7 UUIDs, so `_id` order is creation order.
import type { Collection, Db } from 'mongodb';
import type { EventCatalog } from '../domain/event-catalogs';
import { newTimeOrderedUuid, randomBase62 } from '../domain/ids';
import { insertIfAbsent } from './insert-once';
import { findOwnedById } from './owned';
import { findPage, OLDEST_FIRST, type PageResult, type PageWindow } from './pagination';

export const AUTO_DISABLE_AFTER = 20;
export const AUTO_DISABLED_REASON = `auto-disabled after ${AUTO_DISABLE_AFTER} exhausted deliveries`;
/** How long a rotated-out secret keeps signing beside the new one. */
export const SECRET_ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

export type EndpointStatus = 'enabled' | 'disabled';

export interface WebhookEndpointDoc {
  _id: string;
  store_id: string;
  url: string;
  description: string | null;
  /** `['*']` for every event of the catalog, including future ones. */
  enabled_events: string[];
  api_version: EventCatalog;
  status: EndpointStatus;
  disabled_reason: string | null;
  consecutive_failures: number;
  created_via: 'dashboard' | 'api';
  secret: string;
  /** The secret before the last rotation, signing beside the new one until previous_secret_expires_at (ms). */
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  livemode: boolean;
  created: number;
}

export function endpointsCollection(db: Db): Collection<WebhookEndpointDoc> {
  return db.collection<WebhookEndpointDoc>('webhook_endpoints');
}

export function newEndpointId(now = Date.now()): string {
  return newTimeOrderedUuid(now);
}

export function newWebhookSecret(): string {
  return `whsec_${randomBase62(32)}`;
}

export interface NewEndpoint {
  storeId: string;
  url: string;
  description: string | null;
  enabledEvents: string[];
  apiVersion: EventCatalog;
  createdVia?: 'dashboard' | 'api';
}

export async function insertEndpoint(db: Db, input: NewEndpoint, now = Date.now()): Promise<WebhookEndpointDoc> {
  const doc: WebhookEndpointDoc = {
    _id: newEndpointId(now),
    store_id: input.storeId,
    url: input.url,
    description: input.description,
    enabled_events: input.enabledEvents,
    api_version: input.apiVersion,
    status: 'enabled',
    disabled_reason: null,
    consecutive_failures: 0,
    created_via: input.createdVia ?? 'api',
    secret: newWebhookSecret(),
    previous_secret: null,
    previous_secret_expires_at: null,
    livemode: true,
    created: Math.floor(now / 1000),
  };
  await endpointsCollection(db).insertOne(doc);
  return doc;
}

export async function findEndpoint(db: Db, storeId: string, id: string): Promise<WebhookEndpointDoc | null> {
  return findOwnedById(endpointsCollection(db), storeId, id);
}

/** A page of the store's webhook endpoints, oldest first. */
export function listEndpoints(db: Db, storeId: string, window: PageWindow): Promise<PageResult<WebhookEndpointDoc>> {
  return findPage(endpointsCollection(db), { storeId, filter: {}, order: OLDEST_FIRST, ...window });
}

export type FanOutEndpoint = Pick<WebhookEndpointDoc, '_id' | 'api_version' | 'status' | 'enabled_events'>;

/**
 * Every endpoint of the store, oldest first: one find by store, which the `{store_id, created, _id}` index serves.
 * Bounded by ENDPOINTS_PER_STORE (the slot counter keeps a store below it): one more is read, so a store past the
 * cap is an error here rather than endpoints silently left out of a fan-out.
 */
async function storeEndpoints(db: Db, storeId: string): Promise<WebhookEndpointDoc[]> {
  const docs = await endpointsCollection(db)
    .find({ store_id: storeId })
    .sort({ created: 1, _id: 1 })
    .limit(ENDPOINTS_PER_STORE + 1)
    .toArray();
  if (docs.length > ENDPOINTS_PER_STORE) {
    throw new Error(`store ${storeId} has more than ${ENDPOINTS_PER_STORE} webhook endpoints: its slot counter and its endpoints disagree`);
  }
  return docs;
}

/** What fan-out needs of every endpoint of a store (enabled or not: a disabled 2026-09-01 endpoint still keeps that catalog on). */
export function endpointsForFanOut(db: Db, storeId: string): Promise<FanOutEndpoint[]> {
  return storeEndpoints(db, storeId);
}

export async function findEndpointsByIds(db: Db, storeId: string, ids: string[]): Promise<WebhookEndpointDoc[]> {
  if (ids.length === 0) return [];
  return endpointsCollection(db)
    .find({ _id: { $in: ids }, store_id: storeId })
    .toArray();
}

export interface EndpointChanges {
  url?: string;
  description?: string | null;
  enabledEvents?: string[];
  status?: EndpointStatus;
}

export async function updateEndpoint(db: Db, storeId: string, id: string, changes: EndpointChanges): Promise<WebhookEndpointDoc | null> {
  const set: Partial<WebhookEndpointDoc> = {};
  if (changes.url !== undefined) set.url = changes.url;
  if (changes.description !== undefined) set.description = changes.description;
  if (changes.enabledEvents !== undefined) set.enabled_events = changes.enabledEvents;
  const endpoints = endpointsCollection(db);
  if (changes.status === 'disabled') {
    // Switched off by the team: no automatic reason.
    set.status = 'disabled';
    set.disabled_reason = null;
  } else if (changes.status === 'enabled') {
    // Re-enabling (from disabled only) starts the failure count afresh.
    await endpoints.updateOne(
      { _id: id, store_id: storeId, status: 'disabled' },
      { $set: { status: 'enabled', disabled_reason: null, consecutive_failures: 0 } },
    );
  }
  if (Object.keys(set).length === 0) return findEndpoint(db, storeId, id);
  return endpoints.findOneAndUpdate({ _id: id, store_id: storeId }, { $set: set }, { returnDocument: 'after' });
}

export async function rotateEndpointSecret(db: Db, storeId: string, id: string, now = Date.now()): Promise<WebhookEndpointDoc | null> {
  const current = await findEndpoint(db, storeId, id);
  if (!current) return null;
  // Compare-and-set on the secret: two concurrent rotations cannot both keep the same previous secret.
  return endpointsCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId, secret: current.secret },
    {
      $set: {
        secret: newWebhookSecret(),
        previous_secret: current.secret,
        previous_secret_expires_at: now + SECRET_ROTATION_OVERLAP_MS,
      },
    },
    { returnDocument: 'after' },
  );
}

/** Deletes the endpoint (and with it its secrets) and frees its slot; its deliveries are removed by deleteDeliveriesOf. */
export async function deleteEndpoint(db: Db, storeId: string, id: string): Promise<boolean> {
  const result = await endpointsCollection(db).deleteOne({ _id: id, store_id: storeId });
  if (result.deletedCount === 1) await releaseEndpointSlot(db, storeId);
  return result.deletedCount === 1;
}

export const ENDPOINTS_PER_STORE = 16;

interface EndpointCountDoc {
  _id: string;
  count: number;
}

const endpointCounts = (db: Db) => db.collection<EndpointCountDoc>('webhook_endpoint_counts');

/**
 * Takes one of the store's endpoint slots: a counter per store, raised only while below the limit (one
 * conditional $inc), so concurrent creates in any number of processes never pass it. The first use
 * counts the endpoints the store already has.
 */
export async function takeEndpointSlot(db: Db, storeId: string): Promise<boolean> {
  if (!(await endpointCounts(db).findOne({ _id: storeId }))) {
    const existing = await endpointsCollection(db).countDocuments({ store_id: storeId });
    await insertIfAbsent(endpointCounts(db), { _id: storeId, count: existing });
  }
  const taken = await endpointCounts(db).findOneAndUpdate({ _id: storeId, count: { $lt: ENDPOINTS_PER_STORE } }, { $inc: { count: 1 } });
  return taken !== null;
}

/** Gives a slot back (an endpoint deleted, or a create that did not insert). */
export async function releaseEndpointSlot(db: Db, storeId: string): Promise<void> {
  await endpointCounts(db).updateOne({ _id: storeId, count: { $gt: 0 } }, { $inc: { count: -1 } });
}

/**
 * A succeeded delivery resets the run of exhausted deliveries (always asked: one may have been counted
 * during its POST). Filtered on a count above 0: the same result, and no write to the endpoint every
 * delivery shares when there is nothing to reset.
 */
export async function resetEndpointFailures(db: Db, storeId: string, id: string): Promise<void> {
  await endpointsCollection(db).updateOne({ _id: id, store_id: storeId, consecutive_failures: { $gt: 0 } }, { $set: { consecutive_failures: 0 } });
}

/** One more exhausted delivery; the update that finds AUTO_DISABLE_AFTER reached while enabled disables it, once. */
export async function countEndpointExhaustion(db: Db, storeId: string, id: string): Promise<WebhookEndpointDoc | null> {
  const endpoints = endpointsCollection(db);
  const after = await endpoints.findOneAndUpdate({ _id: id, store_id: storeId }, { $inc: { consecutive_failures: 1 } }, { returnDocument: 'after' });
  if (!after || after.status !== 'enabled' || after.consecutive_failures < AUTO_DISABLE_AFTER) return after;
  const disabled = await endpoints.findOneAndUpdate(
    { _id: id, store_id: storeId, status: 'enabled', consecutive_failures: { $gte: AUTO_DISABLE_AFTER } },
    { $set: { status: 'disabled', disabled_reason: AUTO_DISABLED_REASON } },
    { returnDocument: 'after' },
  );
  return disabled ?? after;
}

/** Ids of all the store's endpoints: the only ones an event can have deliveries to (a deleted endpoint takes its deliveries along). */
export async function endpointIdsOf(db: Db, storeId: string): Promise<string[]> {
  return (await storeEndpoints(db, storeId)).map((doc) => doc._id);
}
