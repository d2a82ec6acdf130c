// Webhook endpoints and deliveries in MongoDB: documents, ids, and the conditional
// single-document updates the delivery workflow makes. Ids are time-ordered v7 UUIDs, so `_id` order is
// creation order; a delivery's id is derived from (event, endpoint), so dispatching twice finds the same one.
import type { Collection, Db, Filter } from 'mongodb';
import type { EventCatalog } from '../domain/event-catalogs';
import { derivedTimeOrderedUuid, idTimeMs, newTimeOrderedUuid, randomBase62 } from '../domain/ids';
import { type EventDoc } from './collections';
import { isDuplicateKeyError } from './collections';
import { renderEventBody } from './events';
import { findOwnedById } from './owned';

export const AUTO_DISABLE_AFTER = 20;
export const AUTO_DISABLED_REASON = `auto-disabled after ${AUTO_DISABLE_AFTER} exhausted deliveries`;
export const ENDPOINT_DISABLED_ERROR = 'endpoint disabled';
/** How long a rotated-out secret keeps signing beside the new one. */
export const SECRET_ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

export type EndpointStatus = 'enabled' | 'disabled';
export const DELIVERY_STATUSES = ['pending', 'delivering', 'succeeded', 'failed', 'exhausted'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

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

export interface WebhookDeliveryDoc {
  _id: string;
  store_id: string;
  event: string;
  webhook_endpoint: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number | null;
  last_attempt_at: number | null;
  delivered_at: number | null;
  last_response_status: number | null;
  last_error: string | null;
  last_duration_ms: number | null;
  created: number;
  /**
   * Set once the exhaustion was added to the endpoint's consecutive_failures (counted once per
   * exhaustion); cleared only by a resend, so recording the same exhaustion twice cannot count it twice.
   */
  failure_counted: boolean;
  /** The resend the record was last reset for (chosen by the workflow), so a retried reset is not applied again. */
  resend_token?: string | null;
  /** The event's JSON as delivered (store/events.ts renderEventBody), so an attempt needs no event read. */
  body?: string;
}

export function endpointsCollection(db: Db): Collection<WebhookEndpointDoc> {
  return db.collection<WebhookEndpointDoc>('webhook_endpoints');
}

export function deliveriesCollection(db: Db): Collection<WebhookDeliveryDoc> {
  return db.collection<WebhookDeliveryDoc>('webhook_deliveries');
}

// ---- ids -------------------------------------------------------------------------------------------

export function newEndpointId(now = Date.now()): string {
  return newTimeOrderedUuid(now);
}

/** The delivery of `eventId` to `endpointId`: always the same UUID, ordered by the event's time. */
export function deliveryIdFor(eventId: string, endpointId: string): string {
  return derivedTimeOrderedUuid(idTimeMs(eventId), `${eventId}\n${endpointId}`);
}

export function newWebhookSecret(): string {
  return `whsec_${randomBase62(32)}`;
}

// ---- endpoints ---------------------------------------------------------------------------------------

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

export type FanOutEndpoint = Pick<WebhookEndpointDoc, '_id' | 'api_version' | 'status' | 'enabled_events'>;

/** What fan-out needs of every endpoint of a store (enabled or not: a disabled 2026-09-01 endpoint still keeps that catalog on). */
export async function endpointsForFanOut(db: Db, storeId: string): Promise<FanOutEndpoint[]> {
  return endpointsCollection(db)
    .find({ store_id: storeId }, { projection: { _id: 1, api_version: 1, status: 1, enabled_events: 1 } })
    .toArray();
}

export async function findEndpointsByIds(db: Db, storeId: string, ids: string[]): Promise<WebhookEndpointDoc[]> {
  if (ids.length === 0) return [];
  return endpointsCollection(db).find({ _id: { $in: ids }, store_id: storeId }).toArray();
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
    try {
      await endpointCounts(db).insertOne({ _id: storeId, count: existing });
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
    }
  }
  const taken = await endpointCounts(db).findOneAndUpdate({ _id: storeId, count: { $lt: ENDPOINTS_PER_STORE } }, { $inc: { count: 1 } });
  return taken !== null;
}

/** Gives a slot back (an endpoint deleted, or a create that did not insert). */
export async function releaseEndpointSlot(db: Db, storeId: string): Promise<void> {
  await endpointCounts(db).updateOne({ _id: storeId, count: { $gt: 0 } }, { $inc: { count: -1 } });
}

/** A succeeded delivery resets the run of exhausted deliveries (always: one may have been counted during its POST). */
export async function resetEndpointFailures(db: Db, storeId: string, id: string): Promise<void> {
  await endpointsCollection(db).updateOne({ _id: id, store_id: storeId }, { $set: { consecutive_failures: 0 } });
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

// ---- deliveries --------------------------------------------------------------------------------------

/** A new pending delivery of `event` (rendered as `body`) to an endpoint. */
export function newDeliveryDoc(event: Pick<EventDoc, '_id' | 'store_id'>, endpointId: string, body: string, now = Date.now()): WebhookDeliveryDoc {
  return {
    _id: deliveryIdFor(event._id, endpointId),
    store_id: event.store_id,
    event: event._id,
    webhook_endpoint: endpointId,
    status: 'pending',
    attempts: 0,
    next_attempt_at: Math.floor(now / 1000),
    last_attempt_at: null,
    delivered_at: null,
    last_response_status: null,
    last_error: null,
    last_duration_ms: null,
    created: Math.floor(now / 1000),
    failure_counted: false,
    body,
  };
}

function onlyDuplicates(error: unknown): boolean {
  if (isDuplicateKeyError(error)) return true;
  const writeErrors = (error as { writeErrors?: unknown } | null)?.writeErrors;
  const list = Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : [];
  return list.length > 0 && list.every((e: { code?: number; err?: { code?: number } }) => (e.code ?? e.err?.code) === 11000);
}

/** Inserts deliveries; ones that already exist (same event and endpoint) are left as they are. */
export async function insertDeliveries(db: Db, docs: WebhookDeliveryDoc[]): Promise<void> {
  if (docs.length === 0) return;
  try {
    if (docs.length === 1) await deliveriesCollection(db).insertOne(docs[0]);
    else await deliveriesCollection(db).insertMany(docs, { ordered: false });
  } catch (error) {
    if (!onlyDuplicates(error)) throw error;
  }
}

/** The delivery of an event to an endpoint, created pending if it does not exist yet. */
export async function ensureDelivery(db: Db, event: EventDoc, endpointId: string, now = Date.now()): Promise<WebhookDeliveryDoc> {
  const doc = newDeliveryDoc(event, endpointId, renderEventBody(event), now);
  try {
    await deliveriesCollection(db).insertOne(doc);
    return doc;
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
    const existing = await deliveriesCollection(db).findOne({ _id: doc._id });
    if (!existing) throw error;
    return existing;
  }
}

export async function findDelivery(db: Db, storeId: string, id: string): Promise<WebhookDeliveryDoc | null> {
  return findOwnedById(deliveriesCollection(db), storeId, id);
}

/** Ids of all the store's endpoints: the only ones an event can have deliveries to (a deleted endpoint takes its deliveries along). */
async function endpointIdsOf(db: Db, storeId: string): Promise<string[]> {
  const docs = await endpointsCollection(db).find({ store_id: storeId }, { projection: { _id: 1 } }).toArray();
  return docs.map((doc) => doc._id);
}

/** The store's deliveries among `ids`, in one query. */
async function deliveriesByIds(db: Db, storeId: string, ids: string[]): Promise<WebhookDeliveryDoc[]> {
  if (ids.length === 0) return [];
  return deliveriesCollection(db).find({ _id: { $in: ids }, store_id: storeId }).toArray();
}

/** The deliveries an event has, looked up by their derived ids. */
export async function deliveriesOfEvent(db: Db, storeId: string, eventId: string, endpointIds?: string[]): Promise<WebhookDeliveryDoc[]> {
  const ids = (endpointIds ?? (await endpointIdsOf(db, storeId))).map((endpointId) => deliveryIdFor(eventId, endpointId));
  return deliveriesByIds(db, storeId, ids);
}

/**
 * pending_webhooks at query time, per event: its deliveries not yet succeeded, plus, while the event
 * is not dispatched yet, target endpoints whose delivery is not written yet. Once dispatched, a target
 * without a delivery never gets one (it was disabled or deleted before dispatch), so it is not pending.
 */
export async function pendingWebhookCounts(
  db: Db,
  storeId: string,
  events: Pick<EventDoc, '_id' | 'targets' | 'dispatched'>[],
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  if (events.length === 0) return counts;
  const endpointIds = await endpointIdsOf(db, storeId);
  const ids = events.flatMap((event) => [...new Set([...endpointIds, ...(event.targets ?? [])])].map((endpointId) => deliveryIdFor(event._id, endpointId)));
  const all = await deliveriesByIds(db, storeId, ids);
  for (const event of events) {
    const deliveries = all.filter((d) => d.event === event._id);
    const written = new Set(deliveries.map((d) => d.webhook_endpoint));
    const awaited = event.dispatched ? [] : (event.targets ?? []);
    const unwritten = awaited.filter((t) => !written.has(t) && endpointIds.includes(t)).length;
    counts.set(event._id, deliveries.filter((d) => d.status !== 'succeeded').length + unwritten);
  }
  return counts;
}

/** Deliveries of an endpoint still to be tried (their workflows are stopped when it is deleted). */
export async function openDeliveriesOf(db: Db, storeId: string, endpointId: string): Promise<WebhookDeliveryDoc[]> {
  return deliveriesCollection(db)
    .find({ store_id: storeId, webhook_endpoint: endpointId, status: { $in: ['pending', 'delivering', 'failed'] } })
    .toArray();
}

export async function deleteDeliveriesOf(db: Db, storeId: string, endpointId: string): Promise<void> {
  await deliveriesCollection(db).deleteMany({ store_id: storeId, webhook_endpoint: endpointId });
}

type DeliveryFields = Partial<Omit<WebhookDeliveryDoc, '_id' | 'store_id' | 'event' | 'webhook_endpoint' | 'created' | 'body'>>;

/** Writes `changes` to the delivery only if it is in the `expected` state; null: it was not (or is gone). */
function updateIf(db: Db, expected: Filter<WebhookDeliveryDoc>, changes: DeliveryFields): Promise<WebhookDeliveryDoc | null> {
  return deliveriesCollection(db).findOneAndUpdate(expected, { $set: changes }, { returnDocument: 'after' });
}

/**
 * Resend: back to pending with attempts 0, to be tried at once, once per resend token: a retried
 * activity finds its token applied and resets nothing, so the attempts made since stand. Null when
 * the delivery is gone.
 */
export async function resetDelivery(
  db: Db,
  storeId: string,
  id: string,
  resendToken: string,
  now = Date.now(),
): Promise<WebhookDeliveryDoc | null> {
  const changes = { status: 'pending' as const, attempts: 0, next_attempt_at: Math.floor(now / 1000), failure_counted: false, resend_token: resendToken };
  const reset = await updateIf(db, { _id: id, store_id: storeId, resend_token: { $ne: resendToken } }, changes);
  return reset ?? findDelivery(db, storeId, id);
}

export type AttemptClaim =
  /** Attempt N is this execution's to make: newly claimed, or claimed by one that died mid-POST. */
  | { kind: 'claimed'; doc: WebhookDeliveryDoc }
  /** Attempt N already has its outcome (or the delivery ended before it): nothing to make. */
  | { kind: 'recorded'; doc: WebhookDeliveryDoc }
  | { kind: 'gone' };

/**
 * Claims attempt `attempt` (1-based) of the delivery: only a delivery pending or failed with
 * `attempt - 1` attempts becomes delivering with `attempt`. A delivery still delivering was claimed by
 * an execution that died (or timed out) mid-POST: the attempt is made again. Anything else is the
 * outcome already recorded, returned as is, so a retried activity never makes the next attempt early.
 */
export async function claimAttempt(db: Db, storeId: string, id: string, attempt: number, now = Date.now()): Promise<AttemptClaim> {
  const changes = { status: 'delivering' as const, attempts: attempt, last_attempt_at: Math.floor(now / 1000), next_attempt_at: null };
  const waiting = { _id: id, store_id: storeId, status: { $in: ['pending', 'failed'] as DeliveryStatus[] }, attempts: attempt - 1 };
  const claimed = await updateIf(db, waiting, changes);
  if (claimed) return { kind: 'claimed', doc: claimed };
  const current = await findDelivery(db, storeId, id);
  if (!current) return { kind: 'gone' };
  return { kind: current.status === 'delivering' ? 'claimed' : 'recorded', doc: current };
}

export interface AttemptOutcome {
  ok: boolean;
  responseStatus: number | null;
  error: string | null;
  durationMs: number;
}

export type DeliveryChanges = Pick<
  WebhookDeliveryDoc,
  'status' | 'next_attempt_at' | 'last_response_status' | 'last_error' | 'last_duration_ms'
> & Partial<Pick<WebhookDeliveryDoc, 'delivered_at' | 'failure_counted' | 'attempts'>>;

/**
 * Records the outcome of attempt `attempt`, if the delivery is still delivering it. Otherwise an
 * overlapping execution recorded first (or the workflow moved on) and that record stands: `doc` is
 * the delivery as recorded either way.
 */
export async function recordAttemptOutcome(
  db: Db,
  id: string,
  attempt: number,
  changes: DeliveryChanges,
): Promise<{ doc: WebhookDeliveryDoc | null; applied: boolean }> {
  const recorded = await updateIf(db, { _id: id, status: 'delivering', attempts: attempt }, changes);
  if (recorded) return { doc: recorded, applied: true };
  return { doc: await deliveriesCollection(db).findOne({ _id: id }), applied: false };
}

export function successChanges(outcome: AttemptOutcome, now = Date.now()): DeliveryChanges {
  return {
    status: 'succeeded',
    next_attempt_at: null,
    delivered_at: Math.floor(now / 1000),
    last_response_status: outcome.responseStatus,
    last_error: null,
    last_duration_ms: outcome.durationMs,
  };
}

/**
 * A failed attempt: failed with the next attempt's time, or exhausted (null) after the last. The time
 * is rounded up, so a wait computed from it (a retried activity) is never shorter than the schedule.
 */
export function failureChanges(outcome: AttemptOutcome, nextAttemptAtMs: number | null): DeliveryChanges {
  const exhausted = nextAttemptAtMs === null;
  return {
    status: exhausted ? 'exhausted' : 'failed',
    next_attempt_at: exhausted ? null : Math.ceil(nextAttemptAtMs / 1000),
    last_response_status: outcome.responseStatus,
    last_error: outcome.error,
    last_duration_ms: outcome.durationMs,
  };
}

/** A delivery to a disabled endpoint closes at once, its claimed attempt not made (nor counted as a failure). */
export function disabledChanges(doc: Pick<WebhookDeliveryDoc, 'last_response_status' | 'last_duration_ms'>, attempt: number): DeliveryChanges {
  return {
    status: 'exhausted',
    attempts: attempt - 1,
    next_attempt_at: null,
    last_response_status: doc.last_response_status,
    last_error: ENDPOINT_DISABLED_ERROR,
    last_duration_ms: doc.last_duration_ms,
    failure_counted: true,
  };
}

/**
 * Marks the exhaustion recorded in `doc` as counted on its endpoint: true for exactly one caller per
 * exhaustion (the one whose update flips failure_counted), who then adds it. The resend token as read
 * keeps a stale caller from counting a later resend's exhaustion.
 */
export async function markFailureCounted(db: Db, storeId: string, doc: WebhookDeliveryDoc): Promise<boolean> {
  if (doc.status !== 'exhausted' || doc.failure_counted) return false;
  const result = await deliveriesCollection(db).updateOne(
    { _id: doc._id, store_id: storeId, status: 'exhausted', resend_token: doc.resend_token ?? null, failure_counted: { $ne: true } },
    { $set: { failure_counted: true } },
  );
  return result.modifiedCount === 1;
}
