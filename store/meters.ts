// Meters (billing.meter): persistence and the lookups ingestion makes on every call.
// event_name is unique per store (a unique index) and immutable, and meters are never deleted, so the
// (store, event_name) -> meter id mapping is cached in the process forever; the meter (its status) never.
import type { Db } from 'mongodb';
import { newId } from '../domain/ids';
import { ApiError, notFound } from '../domain/errors';
import { DISPLAY_NAME_MAX, validateEventName, type MeterFormula } from '../domain/meter-events';
import { isDuplicateKeyError } from './insert-once';
import { definedFields, findPage, NEWEST_FIRST, type PageResult, type PageWindow } from './pagination';

export interface MeterDoc {
  _id: string;
  store_id: string;
  display_name: string;
  event_name: string;
  formula: MeterFormula;
  customer_payload_key: string;
  value_payload_key: string;
  status: 'active' | 'inactive';
  deactivated_at: number | null;
  created: number;
  updated: number;
}

const metersCollection = (db: Db) => db.collection<MeterDoc>('billing_meters');

export interface NewMeter {
  storeId: string;
  displayName: string;
  eventName: string;
  formula?: MeterFormula;
  customerPayloadKey?: string;
  valuePayloadKey?: string;
}
const seconds = (ms: number) => Math.floor(ms / 1000);

/** Creates a meter; an event_name already used in the store is 400 event_name_taken. */
export async function createMeter(db: Db, input: NewMeter, now = Date.now()): Promise<MeterDoc> {
  validateEventName(input.eventName);
  if (input.displayName.length < 1 || input.displayName.length > DISPLAY_NAME_MAX) {
    throw new ApiError('parameter_invalid', `display_name is 1 to ${DISPLAY_NAME_MAX} characters.`, { param: 'display_name' });
  }
  const doc: MeterDoc = {
    _id: newId('mtr', now),
    store_id: input.storeId,
    display_name: input.displayName,
    event_name: input.eventName,
    formula: input.formula ?? 'sum',
    customer_payload_key: input.customerPayloadKey ?? 'customer_id',
    value_payload_key: input.valuePayloadKey ?? 'value',
    status: 'active',
    deactivated_at: null,
    created: seconds(now),
    updated: seconds(now),
  };
  try {
    await metersCollection(db).insertOne(doc);
  } catch (error) {
    if (isDuplicateKeyError(error)) {
      throw new ApiError('event_name_taken', `A meter with event_name '${input.eventName}' already exists in this store.`, { param: 'event_name' });
    }
    throw error;
  }
  return doc;
}

/** A meter of the store by id (another store's is answered like a missing one). */
export function findMeter(db: Db, storeId: string, id: string): Promise<MeterDoc | null> {
  return metersCollection(db).findOne({ _id: id, store_id: storeId });
}

/** A page of the store's meters, newest first, in one status when asked. */
export function listMeters(db: Db, storeId: string, filter: { status?: MeterDoc['status'] }, window: PageWindow): Promise<PageResult<MeterDoc>> {
  return findPage(metersCollection(db), { storeId, filter: definedFields({ status: filter.status }), order: NEWEST_FIRST, ...window });
}

export async function requireMeter(db: Db, storeId: string, id: string, param = 'id'): Promise<MeterDoc> {
  const doc = await findMeter(db, storeId, id);
  if (!doc) throw notFound('meter', id, param);
  return doc;
}

/** Sets display_name alone, so a deactivation landing at the same moment keeps its status. */
export async function renameMeter(db: Db, storeId: string, id: string, displayName: string, now = Date.now()): Promise<MeterDoc> {
  const updated = await metersCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId },
    { $set: { display_name: displayName, updated: seconds(now) } },
    { returnDocument: 'after' },
  );
  if (!updated) throw notFound('meter', id);
  return updated;
}

/** active -> inactive, once: deactivating an inactive meter returns it unchanged (there is no way back). */
export async function deactivateMeter(db: Db, storeId: string, id: string, now = Date.now()): Promise<MeterDoc> {
  // Matches only while active, so deactivated_at is set once however many deactivations race.
  const updated = await metersCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId, status: 'active' },
    { $set: { status: 'inactive', deactivated_at: seconds(now), updated: seconds(now) } },
    { returnDocument: 'after' },
  );
  return updated ?? (await requireMeter(db, storeId, id));
}

// (store, event_name) -> meter id. Safe to keep forever: names are immutable and meters never deleted.
const meterIdByName = new Map<string, string>();
const NAME_CACHE_MAX = 50_000;
// The meter itself is read on every call (one lookup by _id): "New events for it get 400 meter_inactive"
// applies at once on every API process, which a per-process copy could not promise.

/** The meter an event_name names in the store (its current status included), or null. */
export async function findMeterByEventName(db: Db, storeId: string, eventName: string): Promise<MeterDoc | null> {
  const cacheKey = `${storeId}|${eventName}`;
  const cachedId = meterIdByName.get(cacheKey);
  if (cachedId) return findMeter(db, storeId, cachedId);
  const doc = await metersCollection(db).findOne({ store_id: storeId, event_name: eventName });
  if (doc) {
    if (meterIdByName.size >= NAME_CACHE_MAX) meterIdByName.clear();
    meterIdByName.set(cacheKey, doc._id);
  }
  return doc;
}

/** The store's meters among `ids`, in one query. */
export async function metersById(db: Db, storeId: string, ids: string[]): Promise<Map<string, MeterDoc>> {
  const docs = await metersCollection(db)
    .find({ _id: { $in: [...new Set(ids)] }, store_id: storeId })
    .toArray();
  return new Map(docs.map((d) => [d._id, d]));
}

/** Ids of the store's meters. */
export async function meterIdsOf(db: Db, storeId: string): Promise<string[]> {
  const docs = await metersCollection(db)
    .find({ store_id: storeId }, { projection: { _id: 1 } })
    .toArray();
  return docs.map((d) => d._id);
}
