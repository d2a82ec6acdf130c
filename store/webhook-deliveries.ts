// Webhook deliveries in MongoDB: documents and the conditional single-document updates the delivery
// workflow makes. A delivery's id is a v7 UUID derived from (event, endpoint), ordered by the event's
// time, so dispatching twice finds the same one.
import type { Collection, Db, Filter } from 'mongodb';
import { derivedTimeOrderedUuid, idTimeMs } from '../domain/ids';
import type { EventDoc } from './collections';
import { awaitingDispatch, renderEventBody } from './events';
import { insertManyOnce, insertOnce } from './insert-once';
import { findOwnedById } from './owned';
import { definedFields, findPage, NEWEST_FIRST, type PageResult, type PageWindow } from './pagination';
import { endpointIdsOf } from './webhook-endpoints';

export const ENDPOINT_DISABLED_ERROR = 'endpoint disabled';
export const DELIVERY_STATUSES = ['pending', 'delivering', 'succeeded', 'failed', 'exhausted'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

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

export function deliveriesCollection(db: Db): Collection<WebhookDeliveryDoc> {
  return db.collection<WebhookDeliveryDoc>('webhook_deliveries');
}

/** The delivery of `eventId` to `endpointId`: always the same UUID, ordered by the event's time. */
export function deliveryIdFor(eventId: string, endpointId: string): string {
  return derivedTimeOrderedUuid(idTimeMs(eventId), `${eventId}\n${endpointId}`);
}

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

/** Inserts deliveries; ones that already exist (same event and endpoint) are left as they are. */
export async function insertDeliveries(db: Db, docs: WebhookDeliveryDoc[]): Promise<void> {
  await insertManyOnce(deliveriesCollection(db), docs);
}

/** The delivery of an event to an endpoint, created pending if it does not exist yet. */
export async function ensureDelivery(db: Db, event: EventDoc, endpointId: string, now = Date.now()): Promise<WebhookDeliveryDoc> {
  return insertOnce(deliveriesCollection(db), newDeliveryDoc(event, endpointId, renderEventBody(event), now));
}

export async function findDelivery(db: Db, storeId: string, id: string): Promise<WebhookDeliveryDoc | null> {
  return findOwnedById(deliveriesCollection(db), storeId, id);
}

/** Ids of all the store's endpoints: the only ones an event can have deliveries to (a deleted endpoint takes its deliveries along). */
/** The store's deliveries among `ids`, in one query. */
async function deliveriesByIds(db: Db, storeId: string, ids: string[]): Promise<WebhookDeliveryDoc[]> {
  if (ids.length === 0) return [];
  return deliveriesCollection(db)
    .find({ _id: { $in: ids }, store_id: storeId })
    .toArray();
}

/** The deliveries an event has, looked up by their derived ids. */
/** A page of an endpoint's deliveries, newest first, in one status when asked. */
export function listEndpointDeliveries(
  db: Db,
  storeId: string,
  endpointId: string,
  filter: { status?: DeliveryStatus },
  window: PageWindow,
): Promise<PageResult<WebhookDeliveryDoc>> {
  const conditions = { webhook_endpoint: endpointId, ...definedFields({ status: filter.status }) };
  return findPage(deliveriesCollection(db), { storeId, filter: conditions, order: NEWEST_FIRST, ...window });
}

export async function deliveriesOfEvent(db: Db, storeId: string, eventId: string, endpointIds?: string[]): Promise<WebhookDeliveryDoc[]> {
  const ids = (endpointIds ?? (await endpointIdsOf(db, storeId))).map((endpointId) => deliveryIdFor(eventId, endpointId));
  return deliveriesByIds(db, storeId, ids);
}

/**
 * pending_webhooks at query time, per event: its deliveries not yet succeeded, plus, while the event
 * awaits dispatch (in the outbox), target endpoints whose delivery is not written yet. Once dispatched,
 * a target without a delivery never gets one (it was disabled or deleted before dispatch), so it is not
 * pending. The outbox is read only for events with such targets: rarely, once deliveries are written.
 */
export async function pendingWebhookCounts(db: Db, storeId: string, events: Pick<EventDoc, '_id' | 'targets'>[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  if (events.length === 0) return counts;
  const endpointIds = await endpointIdsOf(db, storeId);
  const ids = events.flatMap((event) =>
    [...new Set([...endpointIds, ...(event.targets ?? [])])].map((endpointId) => deliveryIdFor(event._id, endpointId)),
  );
  const all = await deliveriesByIds(db, storeId, ids);
  const tally = events.map((event) => {
    const deliveries = all.filter((d) => d.event === event._id);
    const written = new Set(deliveries.map((d) => d.webhook_endpoint));
    const unwritten = (event.targets ?? []).filter((t) => !written.has(t) && endpointIds.includes(t)).length;
    return { id: event._id, open: deliveries.filter((d) => d.status !== 'succeeded').length, unwritten };
  });
  const awaiting = await awaitingDispatch(
    db,
    tally.filter((t) => t.unwritten > 0).map((t) => t.id),
  );
  for (const t of tally) counts.set(t.id, t.open + (awaiting.has(t.id) ? t.unwritten : 0));
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
export async function resetDelivery(db: Db, storeId: string, id: string, resendToken: string, now = Date.now()): Promise<WebhookDeliveryDoc | null> {
  const changes = {
    status: 'pending' as const,
    attempts: 0,
    next_attempt_at: Math.floor(now / 1000),
    failure_counted: false,
    resend_token: resendToken,
  };
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

export type DeliveryChanges = Pick<WebhookDeliveryDoc, 'status' | 'next_attempt_at' | 'last_response_status' | 'last_error' | 'last_duration_ms'> &
  Partial<Pick<WebhookDeliveryDoc, 'delivered_at' | 'failure_counted' | 'attempts'>>;

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
