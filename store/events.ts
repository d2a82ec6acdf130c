// Events as facts: one document per event and catalog, with the request that caused it and the
// endpoints it goes to (fixed when it is written, so a later sweep delivers to exactly those).
// The body an endpoint receives is rendered from the document, byte for byte the same every time.
import type { Db } from 'mongodb';
import { CURRENT_CATALOG, type EventCatalog } from '../domain/event-catalogs';
import { derivedId, newId } from '../domain/ids';
import { collections, type EventDoc } from './collections';
import { insertManyOnce } from './insert-once';
import { findOwnedById } from './owned';
import { createdFilter, findPage, NEWEST_FIRST, type CreatedRange, type PageResult, type PageWindow } from './pagination';

export const CURRENT_EVENT_CATALOG = CURRENT_CATALOG;

export interface EventRequest {
  id: string | null;
  idempotency_key: string | null;
}

export interface RecordEventInput {
  storeId: string;
  type: string;
  object: Record<string, unknown>;
  request?: EventRequest | null;
  /** Catalog the event belongs to; 2026-11-01 unless stated. */
  apiVersion?: EventCatalog;
  /** Endpoint ids that receive it (matched when written); none means nothing to dispatch. */
  targets?: string[];
  /** A webhook endpoint test event: kept out of GET /v1/events, livemode false. */
  test?: boolean;
  /** The fact's own key: the id derives from it, so a second writer of the fact finds the first's event. */
  factKey?: string;
  /** The fact's name in catalog 2026-09-01, kept on its 2026-11-01 event (null: none there). */
  legacyType?: string | null;
}

/** The event document as it will be stored (ids are time-ordered; nothing is written here). */
export function buildEventDoc(input: RecordEventInput, now = Date.now()): EventDoc {
  const targets = input.targets ?? [];
  const test = input.test ?? false;
  return {
    _id: input.factKey ? derivedId('evt', now, `${input.factKey}:${input.apiVersion ?? CURRENT_CATALOG}`) : newId('evt', now),
    store_id: input.storeId,
    type: input.type,
    api_version: input.apiVersion ?? CURRENT_CATALOG,
    created: Math.floor(now / 1000),
    livemode: !test,
    request: input.request ?? { id: null, idempotency_key: null },
    data_json: JSON.stringify({ object: input.object }),
    test,
    targets,
    ...(input.legacyType !== undefined ? { legacy_type: input.legacyType } : {}),
  };
}

export async function insertEvents(db: Db, docs: EventDoc[]): Promise<void> {
  if (docs.length === 1) await collections(db).events.insertOne(docs[0]);
  else if (docs.length > 1) await collections(db).events.insertMany(docs);
}

/** Inserts a keyed fact's events; false when another writer of the fact inserted them first. */
export async function insertEventsOnce(db: Db, docs: EventDoc[]): Promise<boolean> {
  const refused = await insertManyOnce(collections(db).events, docs);
  return refused.size === 0;
}

/** Whether the event has deliveries to create: only then does it enter the dispatch outbox. */
export function hasTargets(event: Pick<EventDoc, 'targets'>): boolean {
  return (event.targets ?? []).length > 0;
}

/** Writes one event; one with targets also enters the dispatch outbox until its deliveries run. */
export async function recordEvent(db: Db, input: RecordEventInput, now = Date.now()): Promise<EventDoc> {
  const doc = buildEventDoc(input, now);
  // The outbox entry goes first, as in emitEvent: an event never exists undispatched without one.
  if (hasTargets(doc)) await addToOutbox(db, [doc]);
  await insertEvents(db, [doc]);
  return doc;
}

/** A store's live 2026-11-01 events with ids after `afterId`, oldest first (what `listen` streams). */
export function findEventsAfter(db: Db, storeId: string, afterId: string, limit: number): Promise<EventDoc[]> {
  return collections(db)
    .events.find({ store_id: storeId, _id: { $gt: afterId }, api_version: CURRENT_CATALOG, test: false })
    .sort({ _id: 1 })
    .limit(limit)
    .toArray();
}

/** How many of the store's live events `findEventsAfter` would read after `afterId`, counting at most `limit` (a replay's bound). */
export function countEventsAfter(db: Db, storeId: string, afterId: string, limit: number): Promise<number> {
  return collections(db).events.countDocuments({ store_id: storeId, _id: { $gt: afterId }, api_version: CURRENT_CATALOG, test: false }, { limit });
}

/** What GET /v1/events filters by: one type, or any of several (a pattern's matches), and a created range. */
export interface EventListFilter {
  type?: string | string[];
  created?: CreatedRange;
}

/** A page of the store's events, newest first; test events (webhook endpoint test) are left out. */
export function listEvents(db: Db, storeId: string, filter: EventListFilter, window: PageWindow): Promise<PageResult<EventDoc>> {
  const { type, created } = filter;
  const conditions: Record<string, unknown> = { test: false, ...createdFilter(created) };
  if (type !== undefined) conditions.type = Array.isArray(type) ? { $in: type } : type;
  return findPage(collections(db).events, { storeId, filter: conditions, order: NEWEST_FIRST, ...window });
}

export async function findEvent(db: Db, storeId: string, id: string): Promise<EventDoc | null> {
  return findOwnedById(collections(db).events, storeId, id);
}

/**
 * The dispatch outbox: one small document per event whose deliveries are not known to be created and
 * started, removed once they are: an event awaits dispatch exactly while its entry exists. The sweeper
 * reads this collection, not the events: it holds only what is pending, so a sweep reads little however
 * many events a store has.
 */
export interface OutboxDoc {
  _id: string;
  store_id: string;
  created: number;
}

export function outboxCollection(db: Db) {
  return db.collection<OutboxDoc>('event_outbox');
}

export async function addToOutbox(db: Db, events: Pick<EventDoc, '_id' | 'store_id' | 'created'>[]): Promise<void> {
  const docs = events.map((e) => ({ _id: e._id, store_id: e.store_id, created: e.created }));
  // A keyed fact's second writer: the entry is there already.
  await insertManyOnce(outboxCollection(db), docs);
}

/** The events' deliveries exist and were started: out of the outbox, which is what makes them dispatched. */
export async function confirmDispatched(db: Db, ids: string[]): Promise<void> {
  await Promise.all(ids.map((id) => outboxCollection(db).deleteOne({ _id: id })));
}

/** Of these event ids, those still awaiting dispatch (in the outbox). */
export async function awaitingDispatch(db: Db, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const entries = await outboxCollection(db)
    .find({ _id: { $in: ids } })
    .toArray();
  return new Set(entries.map((entry) => entry._id));
}

/** An outbox entry whose event was never written (its writer died first): nothing to deliver. */
export async function dropOutboxEntry(db: Db, id: string): Promise<void> {
  await outboxCollection(db).deleteOne({ _id: id });
}

/** Outbox entries written more than `olderThanMs` ago (their writer had time to finish), oldest first. */
export async function findStaleOutbox(db: Db, { olderThanMs, limit, now = Date.now() }: { olderThanMs: number; limit: number; now?: number }) {
  return outboxCollection(db)
    .find({ created: { $lte: Math.floor((now - olderThanMs) / 1000) } })
    .sort({ created: 1 })
    .limit(limit)
    .toArray();
}

/**
 * The event as JSON text, fields in the spec's order. Catalog 2026-11-01 carries pending_webhooks
 * (when delivered: the endpoints it went to; when read through the API: computed at query time)
 * and request; the original catalog carries neither. A test event says so with `test: true`.
 */
export function renderEventBody(doc: EventDoc, pendingWebhooks?: number): string {
  const head: Record<string, unknown> = {
    id: doc._id,
    object: 'event',
    type: doc.type,
    api_version: doc.api_version,
    created: doc.created,
    livemode: doc.livemode,
  };
  if (doc.test) head.test = true;
  if (doc.api_version === CURRENT_CATALOG) {
    head.pending_webhooks = pendingWebhooks ?? doc.targets?.length ?? 0;
    head.request = doc.request ?? { id: null, idempotency_key: null };
  }
  // data_json is spliced in as stored so the bytes never depend on a parse/serialize round trip.
  return `${JSON.stringify(head).slice(0, -1)},"data":${doc.data_json}}`;
}
