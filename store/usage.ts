// Metered usage persistence: meter events, usage items, usage periods, each subscription's usage state
// and the per-customer list of subscriptions with usage items. Ids ingestion
// must find derive from what it knows (an event's from store, meter and identifier; an item's from
// subscription and meter), so a repeated identifier is a primary-key conflict and an item is one read.
import type { Db } from 'mongodb';
import type { Payload, PayloadValue } from '../domain/meter-events';
import { derivedId, hashedId } from '../domain/ids';
import type { Rounding, Tier } from '../domain/pricing';
import { dayHourRollupKey, HOUR, lateRollupKey, periodRollupKey, unattachedRollupKey, windowStart, type CloseReason } from '../domain/usage-periods';
import type { JournalDoc, RollupContribution } from './usage-rollups';
import { insertIfAbsent, insertManyOnce, insertOnce, retryOnDuplicateKey } from './insert-once';

// ---------------------------------------------------------------------------------------------
// Meter events

export interface MeterEventDoc {
  _id: string;
  store_id: string;
  meter: string;
  event_name: string;
  identifier: string;
  customer: string;
  /** The subscription it was attached to on arrival; null: unattached (never charged). */
  subscription: string | null;
  /** Start of the usage period it counts in; null when it precedes every period of the subscription. */
  period_start: number | null;
  /** A late event (its timestamp in a closed period): that period's start; it counts in period_start's charge on a line of its own. */
  late_from?: number | null;
  value: number;
  timestamp: number;
  /** As sent, as pairs: payload keys may hold '.' or start with '$'. */
  payload: { k: string; v: PayloadValue }[];
  /** The ingestion batch (journal) that inserted it. */
  batch: string | null;
  livemode: boolean;
  created: number;
}

export const meterEventsCollection = (db: Db) => db.collection<MeterEventDoc>('billing_meter_events');

/** The event id of (store, meter, identifier): a repeated identifier collides on `_id`. */
export const meterEventId = (storeId: string, meterId: string, identifier: string) => hashedId('mev', `${storeId}|${meterId}|${identifier}`);

export const encodePayload = (payload: Payload) => Object.entries(payload).map(([k, v]) => ({ k, v }));
export const decodePayload = (pairs: { k: string; v: PayloadValue }[]): Payload => Object.fromEntries(pairs.map((p) => [p.k, p.v]));

/** The rollups an event adds to: its day (and hour in it), and its period when it has one. */
export function contributionOf(
  doc: Pick<MeterEventDoc, '_id' | 'meter' | 'customer' | 'subscription' | 'period_start' | 'late_from' | 'value' | 'timestamp' | 'created'>,
): RollupContribution {
  const keys = [dayHourRollupKey(doc.meter, doc.customer, doc.timestamp)];
  if (doc.subscription !== null && doc.period_start !== null) {
    const late = doc.late_from ?? null;
    keys.push(
      late === null
        ? periodRollupKey(doc.subscription, doc.period_start, doc.meter)
        : lateRollupKey(doc.subscription, doc.period_start, doc.meter, late),
    );
  }
  // Counted with the rollups (journaled, exactly once): the hour's error report reads the full count.
  if (doc.subscription === null) keys.push(unattachedRollupKey(doc.meter, windowStart(doc.created, HOUR)));
  return { id: doc._id, keys, value: doc.value, timestamp: doc.timestamp };
}

/** Inserts events in one unordered insertMany; returns the ids that were new. */
export async function insertMeterEvents(db: Db, docs: MeterEventDoc[]): Promise<Set<string>> {
  const refused = await insertManyOnce(meterEventsCollection(db), docs);
  return new Set(docs.filter((_, i) => !refused.has(i)).map((d) => d._id));
}

/** A customer's events of a meter with timestamps in [from, to), read one by one (only ever a partial hour). */
export function meterEventsBetween(
  db: Db,
  storeId: string,
  meterId: string,
  customer: string,
  from: number,
  to: number,
): AsyncIterable<Pick<MeterEventDoc, '_id' | 'value' | 'timestamp'>> {
  return meterEventsCollection(db).find(
    { store_id: storeId, meter: meterId, customer, timestamp: { $gte: from, $lt: to } },
    { projection: { _id: 1, value: 1, timestamp: 1 } },
  );
}

export async function findMeterEvents(db: Db, ids: string[]): Promise<Map<string, MeterEventDoc>> {
  const docs = await Promise.all([...new Set(ids)].map((id) => meterEventsCollection(db).findOne({ _id: id })));
  return new Map(docs.filter((d): d is MeterEventDoc => d !== null).map((d) => [d._id, d]));
}

/** Recovery's loader: the journal's events its batch inserted, as rollup contributions. */
export function journalEventLoader(db: Db) {
  return async (journal: JournalDoc): Promise<RollupContribution[]> => {
    const docs = await findMeterEvents(db, journal.events);
    return [...docs.values()].filter((d) => d.batch === journal._id).map(contributionOf);
  };
}

// ---------------------------------------------------------------------------------------------
// Usage items

export interface UsageItemDoc {
  _id: string;
  store_id: string;
  subscription: string;
  customer: string | null;
  meter: string;
  /** The offer it was inherited from; null for items set through the API. */
  offer: string | null;
  currency: string;
  unit_amount: number;
  included_units: number;
  tiers: Tier[] | null;
  rounding: Rounding;
  billing_threshold: number | null;
  label: string | null;
  source: 'api' | 'offer';
  created: number;
  /** Milliseconds, for newest-first order (ids derive from subscription and meter, not time). */
  created_ms: number;
  updated: number;
}

export const usageItemsCollection = (db: Db) => db.collection<UsageItemDoc>('usage_items');

/** One item per (subscription, meter): posting the same meter again replaces it under the same id. */
export const usageItemId = (subscriptionId: string, meterId: string) => hashedId('usi', `${subscriptionId}|${meterId}`);

export function findUsageItem(db: Db, storeId: string, subscriptionId: string, meterId: string): Promise<UsageItemDoc | null> {
  return findUsageItemById(db, storeId, usageItemId(subscriptionId, meterId));
}

export function findUsageItemById(db: Db, storeId: string, id: string): Promise<UsageItemDoc | null> {
  return usageItemsCollection(db).findOne({ _id: id, store_id: storeId });
}

/** The subscription's items, newest first: one read per meter of the store. */
export async function listUsageItems(db: Db, storeId: string, subscriptionId: string, meterIds: string[]): Promise<UsageItemDoc[]> {
  const docs = await Promise.all(meterIds.map((m) => findUsageItem(db, storeId, subscriptionId, m)));
  return docs.filter((d): d is UsageItemDoc => d !== null).sort((a, b) => (b.created_ms ?? 0) - (a.created_ms ?? 0) || (a._id < b._id ? 1 : -1));
}

/** Writes an item set through the API (replacing any item of that meter). */
export async function saveUsageItem(db: Db, doc: UsageItemDoc): Promise<void> {
  // Lost the race to insert the first item of that meter: the second replace finds the one that won.
  await retryOnDuplicateKey(() => usageItemsCollection(db).replaceOne({ _id: doc._id }, doc, { upsert: true }));
}

/** Inserts an inherited item unless the meter already has one (from the API or earlier): true when inserted. */
export async function insertInheritedItem(db: Db, doc: UsageItemDoc): Promise<boolean> {
  return insertIfAbsent(usageItemsCollection(db), doc);
}

export async function deleteUsageItem(db: Db, storeId: string, id: string): Promise<boolean> {
  const result = await usageItemsCollection(db).deleteOne({ _id: id, store_id: storeId });
  return result.deletedCount === 1;
}

// ---------------------------------------------------------------------------------------------
// Per-subscription usage state (written by the usage workflow; ingestion reads it)

export interface OpenPeriodState {
  id: string;
  start: number;
  end: number;
  /** The end was pulled in because the threshold was reached. */
  threshold_boundary: boolean;
}

/** Prices as of the last recompute: ingestion's threshold check uses them to decide to signal. */
export interface PricingSnapshot {
  meter: string;
  formula: 'sum' | 'count' | 'last';
  active: boolean;
  unit_amount: number;
  included_units: number;
  tiers: Tier[] | null;
  rounding: Rounding;
}

export interface UsageStateDoc {
  _id: string;
  store_id: string;
  customer: string | null;
  currency: string;
  /** Offer rows were copied (once). */
  inherited: boolean;
  open: OpenPeriodState | null;
  /** Where the next period starts (the end of the last closed one, or the first cycle's start). */
  next_start: number | null;
  /** Every period id, oldest first (ids sort by period start). */
  periods: string[];
  threshold: number | null;
  pricing: PricingSnapshot[];
  created: number;
}

export const usageStatesCollection = (db: Db) => db.collection<UsageStateDoc>('subscription_usage');

export function findUsageState(db: Db, storeId: string, subscriptionId: string): Promise<UsageStateDoc | null> {
  return usageStatesCollection(db).findOne({ _id: subscriptionId, store_id: storeId });
}

/** Creates the state once (insert: whoever comes first sets next_start); returns the stored one. */
export async function ensureUsageState(db: Db, doc: UsageStateDoc): Promise<UsageStateDoc> {
  return insertOnce(usageStatesCollection(db), doc);
}

export async function updateUsageState(db: Db, subscriptionId: string, update: Record<string, unknown>): Promise<UsageStateDoc | null> {
  return usageStatesCollection(db).findOneAndUpdate({ _id: subscriptionId }, update, { returnDocument: 'after' });
}

// ---------------------------------------------------------------------------------------------
// Customer -> subscriptions with usage items (attachment candidates)

interface UsageCustomerDoc {
  _id: string;
  store_id: string;
  subscriptions: string[];
}

const usageCustomersCollection = (db: Db) => db.collection<UsageCustomerDoc>('usage_customers');
/** A customer's key: its usage_customers `_id`, and how ingestion journals name the customers they hold. */
export const customerKey = (storeId: string, customerId: string) => `${storeId}|${customerId}`;

export async function customerSubscriptions(db: Db, storeId: string, customerId: string): Promise<string[]> {
  const doc = await usageCustomersCollection(db).findOne({ _id: customerKey(storeId, customerId) });
  return doc?.subscriptions ?? [];
}

/** Forgets these customers' attachment candidates (the customers are being deleted). */
export async function deleteUsageCustomers(db: Db, storeId: string, customerIds: string[]): Promise<void> {
  if (customerIds.length === 0) return;
  await usageCustomersCollection(db).deleteMany({ _id: { $in: customerIds.map((id) => customerKey(storeId, id)) } });
}

/** Adds a subscription to its customer's candidates: one $addToSet, so concurrent adds all land. */
export async function addCustomerSubscription(db: Db, storeId: string, customerId: string, subscriptionId: string): Promise<void> {
  const add = () =>
    usageCustomersCollection(db).updateOne(
      { _id: customerKey(storeId, customerId) },
      { $addToSet: { subscriptions: subscriptionId }, $setOnInsert: { store_id: storeId } },
      { upsert: true },
    );
  // Lost the race to create the customer's document: the upsert again finds the winner's.
  await retryOnDuplicateKey(add);
}

// ---------------------------------------------------------------------------------------------
// Usage periods (written by the usage workflow)

export interface PeriodLineDoc {
  meter: string;
  event_name: string;
  display_name: string;
  quantity: number;
  included: number;
  billable: number;
  unit_amount: number | null;
  amount: number;
  /** A line of late events: the closed period they belong to. */
  late_period?: { start: number; end: number } | null;
}

/**
 * none: not charged yet; not_needed: closed at zero; charged: `charge` points to it;
 * refused: refused before the card (charge null, never charged later).
 */
export type UsageChargeState = 'none' | 'not_needed' | 'charged' | 'refused';

export interface UsagePeriodDoc {
  _id: string;
  store_id: string;
  subscription: string;
  status: 'open' | 'closed';
  close_reason: CloseReason | null;
  period_start: number;
  period_end: number;
  currency: string;
  lines: PeriodLineDoc[];
  amount_total: number;
  threshold: number | null;
  threshold_boundary: boolean;
  charge: string | null;
  charge_state: UsageChargeState;
  charge_refusal: { code: string; message: string } | null;
  computed_at: number | null;
  closed_at: number | null;
  livemode: boolean;
  created: number;
}

export const usagePeriodsCollection = (db: Db) => db.collection<UsagePeriodDoc>('usage_periods');

/** A period's id follows from its subscription and start (opening twice finds the first). */
export const usagePeriodId = (subscriptionId: string, start: number) => derivedId('usp', start * 1000, `${subscriptionId}|${start}`);

export function findUsagePeriod(db: Db, storeId: string, id: string): Promise<UsagePeriodDoc | null> {
  return usagePeriodsCollection(db).findOne({ _id: id, store_id: storeId });
}

/** Inserts the period once; returns the stored one. */
export async function insertUsagePeriod(db: Db, doc: UsagePeriodDoc): Promise<UsagePeriodDoc> {
  return insertOnce(usagePeriodsCollection(db), doc);
}

export async function updateUsagePeriod(db: Db, id: string, set: Partial<UsagePeriodDoc>): Promise<UsagePeriodDoc | null> {
  return usagePeriodsCollection(db).findOneAndUpdate({ _id: id }, { $set: set }, { returnDocument: 'after' });
}

// ---------------------------------------------------------------------------------------------
// billing.meter.error_report_triggered: at most once per meter per hour

interface ErrorReportDoc {
  /** `<meter>|<hour start>` */
  _id: string;
  store_id: string;
  meter: string;
  hour: number;
  /** Set once the hour's report was emitted (emitted before it is set, keyed, so a retry emits nothing new). */
  reported: boolean;
  /** A day after its hour. */
  expires_at: Date;
}

const errorReportsCollection = (db: Db) => db.collection<ErrorReportDoc>('usage_error_reports');

/** Notes that a meter had unattached events in an hour (once; the count lives in the hour's rollup). */
export async function noteUnattachedHour(db: Db, storeId: string, meterId: string, hourStart: number): Promise<void> {
  const expires_at = new Date((hourStart + 24 * 60 * 60) * 1000);
  await errorReportsCollection(db).updateOne(
    { _id: `${meterId}|${hourStart}` },
    { $setOnInsert: { store_id: storeId, meter: meterId, hour: hourStart, reported: false, expires_at } },
    { upsert: true },
  );
}

/** Hours that started at or before `lastHour` whose report is still to send, oldest first. */
export function unreportedHours(db: Db, lastHour: number, limit = 500): Promise<ErrorReportDoc[]> {
  return errorReportsCollection(db)
    .find({ reported: false, hour: { $lte: lastHour } })
    .sort({ hour: 1 })
    .limit(limit)
    .toArray();
}

export async function markHourReported(db: Db, id: string): Promise<void> {
  await errorReportsCollection(db).updateOne({ _id: id }, { $set: { reported: true } });
}
