// Metered usage side effects: ingesting meter events (attachment decided once, on arrival, per event
// rule 5), usage items set through the API or inherited from the offer, the open period computed at
// call time, event summaries, and the activities of the usage-period workflow (open, recompute, pull
// the end in at the threshold, close, charge through the charge workflow).
//
// Who starts `usage/<sub_id>`: a usage item posted through the API (signal-with-start), the usage
// routine (a Temporal schedule every 10 minutes) for new subscriptions of offers with usage rows,
// where the workflow's first run inherits the rows, and ingestion when a batch may have crossed the
// billing threshold. A run that finds nothing to do (no items; subscription ended) completes.
import type { Db } from 'mongodb';
import { ScheduleAlreadyRunning, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { ApiError, invalid, notFound } from '../domain/errors';
import {
  chosenSubscriptionOf,
  customerIdOf,
  readEventShape,
  resolveTimestamp,
  valueOf,
  type EventShape,
} from '../domain/meter-events';
import { lowestThreshold, normalizePrice, periodTotal, priceLine, thresholdReached, type PriceInput } from '../domain/pricing';
import {
  cycleOf,
  DAY,
  dayRollupKey,
  HOUR,
  hourRollupKey,
  periodRollupKey,
  periodStartFor,
  usageChargeDescription,
  usageChargeLines,
  windowStart,
  RECOMPUTE_INTERVAL_SECONDS,
  type CloseReason,
} from '../domain/usage-periods';
import { periodEnd, isBillingCycle } from '../domain/billing-periods';
import { CHARGEABLE_STATUSES, isEnded } from '../domain/subscriptions';
import { randomBase62 } from '../domain/ids';
import { collections } from './store/collections';
import { findOwnedById } from './store/owned';
import { findMeter, findMeterByEventName, metersById, metersCollection, type MeterDoc } from './store/meters';
import { subscriptionsCollection, type SubscriptionDoc } from './store/subscriptions';
import {
  addCustomerSubscription,
  claimErrorReport,
  contributionOf,
  customerLock,
  customerSubscriptions,
  deleteUsageItem,
  encodePayload,
  ensureUsageState,
  findMeterEvents,
  findUsageItem,
  findUsageItemById,
  findUsagePeriod,
  findUsageState,
  hashedId,
  insertInheritedItem,
  insertMeterEvents,
  insertUsagePeriod,
  journalEventLoader,
  listUsageItems,
  meterEventId,
  meterEventObject,
  saveUsageItem,
  updateUsagePeriod,
  updateUsageState,
  usageItemId,
  usagePeriodId,
  usagePeriodObject,
  type MeterEventDoc,
  type MeterEventObject,
  type PeriodLineDoc,
  type PricingSnapshot,
  type UsageItemDoc,
  type UsagePeriodDoc,
  type UsagePeriodObject,
  type UsageStateDoc,
} from './store/usage';
import { JOURNAL_LEASE_MS, openJournalsFor, quantityOf, readRollups, recoverJournals, writeBatchPrepared, type RollupDoc } from './store/usage-rollups';
import { emitEvent, type EventDeps } from './events';
import type { EventRequest } from './store/events';
import { startCharge } from './charges';
import { subscriptionSearchAttributes } from './subscriptions';
import { recomputeSignal, usageWorkflowId, type UsageWorkflowInput } from '../workflows/usage-periods-messages';

export interface UsageDeps extends EventDeps {
  db: Db;
  temporal: Client | null;
  taskQueue: string;
  /** How often the workflow recomputes an open period (default RECOMPUTE_INTERVAL_SECONDS). */
  usageRecomputeSeconds?: number;
}

const seconds = (ms: number) => Math.floor(ms / 1000);
const isChargeable = (sub: SubscriptionDoc) => CHARGEABLE_STATUSES.includes(sub.status);

/** A subscription of the store, read by `_id` alone (the filter FerretDB answers without a scan). */
export function loadSubscription(db: Db, storeId: string, id: string): Promise<SubscriptionDoc | null> {
  return findOwnedById(subscriptionsCollection(db), storeId, id);
}

// Customers are never deleted: once seen, a customer id is known for good in this process.
const knownCustomers = new Set<string>();

async function customerExists(db: Db, storeId: string, id: string): Promise<boolean> {
  const key = `${storeId}|${id}`;
  if (knownCustomers.has(key)) return true;
  if (!(await findOwnedById(collections(db).customers, storeId, id))) return false;
  if (knownCustomers.size > 100_000) knownCustomers.clear();
  knownCustomers.add(key);
  return true;
}

// ---------------------------------------------------------------------------------------------
// The usage workflow: started or signalled

export async function signalUsageWorkflow(client: Client, taskQueue: string, sub: Pick<SubscriptionDoc, '_id' | 'store_id' | 'customer'>): Promise<void> {
  const input: UsageWorkflowInput = { storeId: sub.store_id, subscriptionId: sub._id };
  await client.workflow.signalWithStart('usagePeriodsWorkflow', {
    workflowId: usageWorkflowId(sub._id),
    taskQueue,
    args: [input],
    signal: recomputeSignal,
    signalArgs: [],
    typedSearchAttributes: subscriptionSearchAttributes(sub),
  });
}

/** For callers outside this module (subscription creation, reactivation): make sure usage runs. */
export async function ensureUsageForSubscription(deps: UsageDeps, sub: SubscriptionDoc): Promise<void> {
  if (deps.temporal) await signalUsageWorkflow(deps.temporal, deps.taskQueue, sub);
}

// Threshold checks after ingestion signal a period at most this often from one process.
const SIGNAL_EVERY_MS = 5_000;
const lastSignal = new Map<string, number>();

function signalDue(periodId: string, now: number): boolean {
  const last = lastSignal.get(periodId);
  if (last !== undefined && now - last < SIGNAL_EVERY_MS) return false;
  if (lastSignal.size > 10_000) lastSignal.clear();
  lastSignal.set(periodId, now);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Ingestion

export type IngestResult = { status: 'accepted' | 'duplicate'; event: MeterEventObject } | { status: 'error'; error: ApiError };

interface Checked {
  index: number;
  shape: EventShape;
  meter: MeterDoc;
  customer: string;
  value: number;
  timestamp: number;
  id: string;
  identifier: string;
}

interface Attachment {
  sub: SubscriptionDoc;
  state: UsageStateDoc | null;
}

function asApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  throw error;
}

/** Event rule 5: the most recent chargeable subscription of the customer with an item for the meter. */
async function resolveAttachment(
  db: Db,
  storeId: string,
  customer: string,
  meter: string,
  chosen: string | null,
  cache: Map<string, Promise<unknown>>,
): Promise<Attachment | null> {
  const once = <T>(key: string, load: () => Promise<T>): Promise<T> => {
    if (!cache.has(key)) cache.set(key, load());
    return cache.get(key) as Promise<T>;
  };
  const candidates = chosen ? [chosen] : await once(`c|${customer}`, () => customerSubscriptions(db, storeId, customer));
  // Subscription ids are time-ordered: the most recent first.
  for (const id of [...candidates].sort().reverse()) {
    // Read together: one round trip's wait instead of three.
    const [sub, item, state] = await Promise.all([
      once(`s|${id}`, () => loadSubscription(db, storeId, id)),
      once(`i|${id}|${meter}`, () => findUsageItem(db, storeId, id, meter)),
      once(`u|${id}`, () => findUsageState(db, storeId, id)),
    ]);
    if (!sub || sub.customer !== customer || !isChargeable(sub) || !item) continue;
    return { sub, state };
  }
  return null;
}

/**
 * Ingests meter events (one call or a batch): each item is accepted, a duplicate of a stored event
 * (same meter and identifier: returned, not counted again) or refused on its own.
 */
export async function ingestMeterEvents(
  deps: UsageDeps,
  storeId: string,
  items: unknown[],
  options: { now?: number; request?: EventRequest | null } = {},
): Promise<IngestResult[]> {
  const { db } = deps;
  const nowMs = options.now ?? Date.now();
  const now = seconds(nowMs);
  const results: IngestResult[] = new Array(items.length);
  const fail = (index: number, error: unknown) => (results[index] = { status: 'error', error: asApiError(error) });

  const shapes = items.map((raw, index) => {
    try {
      return readEventShape(raw);
    } catch (error) {
      fail(index, error);
      return null;
    }
  });
  const names = [...new Set(shapes.filter((s): s is EventShape => s !== null).map((s) => s.eventName))];
  const meters = new Map(await Promise.all(names.map(async (name) => [name, await findMeterByEventName(db, storeId, name)] as const)));

  const checked: Checked[] = [];
  shapes.forEach((shape, index) => {
    if (!shape) return;
    try {
      const meter = meters.get(shape.eventName);
      if (!meter) throw new ApiError('no_meter_found', `No active meter has event_name '${shape.eventName}'.`, { param: 'event_name' });
      if (meter.status !== 'active') throw new ApiError('meter_inactive', `The meter for '${shape.eventName}' is inactive.`, { param: 'event_name' });
      const customer = customerIdOf(shape.payload, meter);
      const value = valueOf(shape.payload, meter);
      const timestamp = resolveTimestamp(shape.timestamp, now);
      // Without an identifier every call counts: a fresh one is generated.
      const identifier = shape.identifier ?? `gen_${randomBase62(24)}`;
      checked.push({ index, shape, meter, customer, value, timestamp, identifier, id: meterEventId(storeId, meter._id, identifier) });
    } catch (error) {
      fail(index, error);
    }
  });

  const customers = [...new Set(checked.map((c) => c.customer))];
  const exists = new Map(await Promise.all(customers.map(async (id) => [id, await customerExists(db, storeId, id)] as const)));
  const valid = checked.filter((c) => {
    if (exists.get(c.customer)) return true;
    fail(c.index, new ApiError('resource_missing', `No such customer: '${c.customer}'`, { param: `payload.${c.meter.customer_payload_key}` }));
    return false;
  });

  // The same identifier twice in one batch: the later ones are duplicates of the first.
  const firstOf = new Map<string, Checked>();
  const repeats: Checked[] = [];
  for (const c of valid) {
    if (firstOf.has(c.id)) repeats.push(c);
    else firstOf.set(c.id, c);
  }
  const unique = [...firstOf.values()];

  // Attachment is decided here, once, and stored with the event (while the batch's journal is written).
  let attachments: (Attachment | null)[] = [];
  let docs: MeterEventDoc[] = [];
  const attach = async () => {
    const cache = new Map<string, Promise<unknown>>();
    attachments = await Promise.all(
      unique.map((c) => resolveAttachment(db, storeId, c.customer, c.meter._id, chosenSubscriptionOf(c.shape.payload), cache)),
    );
    docs = unique.map((c, i) => {
      const attached = attachments[i];
      let periodStart: number | null = null;
      if (attached) {
        const state = attached.state;
        periodStart = state
          ? periodStartFor(c.timestamp, state.open, state.next_start)
          : periodStartFor(c.timestamp, null, cycleOf(attached.sub)?.start ?? null);
      }
      return {
        _id: c.id,
        store_id: storeId,
        meter: c.meter._id,
        event_name: c.meter.event_name,
        identifier: c.identifier,
        customer: c.customer,
        subscription: attached?.sub._id ?? null,
        period_start: periodStart,
        value: c.value,
        timestamp: c.timestamp,
        payload: encodePayload(c.shape.payload),
        batch: null,
        livemode: true,
        created: now,
      };
    });
    return {
      contributions: docs.map(contributionOf),
      insert: (batchId: string) => {
        for (const doc of docs) doc.batch = batchId;
        return insertMeterEvents(db, docs);
      },
    };
  };

  const written =
    unique.length === 0
      ? { inserted: new Set<string>(), totals: new Map<string, RollupDoc>(), complete: true }
      : await writeBatchPrepared(
          db,
          storeId,
          { locks: unique.map((c) => customerLock(storeId, c.customer)), events: unique.map((c) => c.id) },
          attach,
        );

  const storedDuplicates = await findMeterEvents(
    db,
    [...unique.filter((c) => !written.inserted.has(c.id)), ...repeats].map((c) => c.id),
  );
  const byId = new Map(docs.map((d) => [d._id, d]));
  for (const c of [...unique, ...repeats]) {
    const isNew = written.inserted.has(c.id) && firstOf.get(c.id) === c;
    const doc = isNew ? byId.get(c.id) : storedDuplicates.get(c.id) ?? byId.get(c.id);
    if (!doc) {
      fail(c.index, new ApiError('internal_error', 'The event could not be stored; retry with the same identifier.', { status: 500, type: 'api_error' }));
      continue;
    }
    results[c.index] = { status: isNew ? 'accepted' : 'duplicate', event: meterEventObject(doc) };
  }

  const fresh = docs.filter((d) => written.inserted.has(d._id));
  await reportUnattached(deps, storeId, fresh, now, options.request ?? null);
  await signalCrossedThresholds(deps, fresh, attachments, unique, written.totals, nowMs);
  return results;
}

/** Event rule 6: billing.meter.error_report_triggered at most once per meter per hour. */
async function reportUnattached(deps: UsageDeps, storeId: string, fresh: MeterEventDoc[], now: number, request: EventRequest | null): Promise<void> {
  const byMeter = new Map<string, number>();
  for (const doc of fresh) if (doc.subscription === null) byMeter.set(doc.meter, (byMeter.get(doc.meter) ?? 0) + 1);
  const hour = windowStart(now, HOUR);
  for (const [meterId, count] of byMeter) {
    if (!(await claimErrorReport(deps.db, storeId, meterId, hour, count))) continue;
    await emitEvent(deps, {
      storeId,
      type: 'billing.meter.error_report_triggered',
      legacyType: null,
      request,
      object: {
        id: meterId,
        object: 'billing.meter_error_report',
        meter: meterId,
        livemode: true,
        validation_start: hour,
        validation_end: hour + HOUR,
        developer_message_summary: `${count} meter event(s) arrived for a customer without an active, trialing or past_due subscription with a usage item for this meter; they are stored and not charged.`,
        reason: {
          error_count: count,
          error_types: [{ code: 'no_subscription_for_customer', error_count: count }],
        },
      },
    });
  }
}

/** Signals the usage workflow when a batch may have taken its open period to the threshold. */
async function signalCrossedThresholds(
  deps: UsageDeps,
  fresh: MeterEventDoc[],
  attachments: (Attachment | null)[],
  unique: Checked[],
  totals: Map<string, RollupDoc>,
  nowMs: number,
): Promise<void> {
  if (!deps.temporal) return;
  const freshIds = new Set(fresh.map((d) => d._id));
  const touched = new Map<string, Attachment>();
  unique.forEach((c, i) => {
    const a = attachments[i];
    if (a && a.state?.open && a.state.threshold !== null && freshIds.has(c.id)) touched.set(a.sub._id, a);
  });
  for (const { sub, state } of touched.values()) {
    const open = state!.open!;
    const keys = state!.pricing.map((p) => periodRollupKey(sub._id, open.start, p.meter));
    const missing = keys.filter((k) => !totals.has(k));
    const read = await readRollups(deps.db, missing);
    const amount = periodTotal(
      state!.pricing.map((p) => {
        const key = periodRollupKey(sub._id, open.start, p.meter);
        return priceLine(quantityOf(totals.get(key) ?? read.get(key), p.formula), p, p.active);
      }),
    );
    if (thresholdReached(amount, state!.threshold) && signalDue(open.id, nowMs)) {
      await signalUsageWorkflow(deps.temporal, deps.taskQueue, sub).catch((error: unknown) => {
        // The 10-minute recompute catches the threshold anyway.
        console.warn(`usage ${sub._id}: threshold signal deferred (${error instanceof Error ? error.message : String(error)})`);
      });
    }
  }
}

/** Replays ingestion journals left behind (crash, database error); the API process runs this periodically. */
export function recoverUsageJournals(db: Db, now = Date.now()): Promise<number> {
  return recoverJournals(db, journalEventLoader(db), now);
}

// ---------------------------------------------------------------------------------------------
// Usage items

export interface UsageItemInput extends PriceInput {
  meter: string;
  currency?: string | null;
  label?: string | null;
}

async function storeMeterIds(db: Db, storeId: string): Promise<string[]> {
  const docs = await metersCollection(db).find({ store_id: storeId }, { projection: { _id: 1 } }).toArray();
  return docs.map((d) => d._id);
}

function newUsageState(sub: SubscriptionDoc, now: number): UsageStateDoc {
  return {
    _id: sub._id,
    store_id: sub.store_id,
    customer: sub.customer,
    currency: sub.currency,
    inherited: false,
    open: null,
    next_start: cycleOf(sub)?.start ?? now,
    periods: [],
    threshold: null,
    pricing: [],
    created: now,
  };
}

export async function requireSubscription(db: Db, storeId: string, id: string): Promise<SubscriptionDoc> {
  const sub = await loadSubscription(db, storeId, id);
  if (!sub) throw notFound('subscription', id);
  return sub;
}

/** POST /subscriptions/{id}/usage_items: creates the meter's item or replaces it (same id). */
export async function putUsageItem(
  deps: UsageDeps,
  storeId: string,
  subscriptionId: string,
  input: UsageItemInput,
  nowMs = Date.now(),
): Promise<{ item: UsageItemDoc; created: boolean }> {
  const { db } = deps;
  const sub = await requireSubscription(db, storeId, subscriptionId);
  const meter = await findMeter(db, storeId, input.meter);
  if (!meter) throw notFound('meter', input.meter, 'meter');
  if (meter.status !== 'active') throw new ApiError('meter_inactive', `Meter ${meter._id} is inactive.`, { param: 'meter' });
  if (input.currency !== undefined && input.currency !== null && input.currency.toLowerCase() !== sub.currency) {
    throw new ApiError('currency_mismatch', `Usage items are priced in the subscription's currency, ${sub.currency}.`, { param: 'currency' });
  }
  const price = normalizePrice(input);
  const now = seconds(nowMs);
  await ensureUsageState(db, newUsageState(sub, now));
  const existing = await findUsageItem(db, storeId, sub._id, meter._id);
  const item: UsageItemDoc = {
    _id: usageItemId(sub._id, meter._id),
    store_id: storeId,
    subscription: sub._id,
    customer: sub.customer,
    meter: meter._id,
    offer: null,
    currency: sub.currency,
    ...price,
    label: input.label ?? null,
    source: 'api',
    created: existing?.created ?? now,
    created_ms: existing?.created_ms ?? nowMs,
    updated: now,
  };
  await saveUsageItem(db, item);
  if (sub.customer) await addCustomerSubscription(db, storeId, sub.customer, sub._id);
  if (deps.temporal) await signalUsageWorkflow(deps.temporal, deps.taskQueue, sub);
  return { item, created: existing === null };
}

export async function listSubscriptionUsageItems(db: Db, storeId: string, subscriptionId: string): Promise<UsageItemDoc[]> {
  await requireSubscription(db, storeId, subscriptionId);
  return listUsageItems(db, storeId, subscriptionId, await storeMeterIds(db, storeId));
}

export async function removeUsageItem(deps: UsageDeps, storeId: string, subscriptionId: string, itemId: string): Promise<{ id: string; object: 'usage_item'; deleted: true }> {
  const sub = await requireSubscription(deps.db, storeId, subscriptionId);
  const item = await findUsageItemById(deps.db, storeId, itemId);
  if (!item || item.subscription !== sub._id) throw notFound('usage item', itemId, 'itemId');
  await deleteUsageItem(deps.db, item._id);
  if (deps.temporal) await signalUsageWorkflow(deps.temporal, deps.taskQueue, sub);
  return { id: item._id, object: 'usage_item', deleted: true };
}

/** Usage rule 4: the offer's rows, once, in the subscription's currency else the store's. */
async function inheritOfferItems(db: Db, sub: SubscriptionDoc, now: number): Promise<number> {
  const offer = await collections(db).offers.findOne({ _id: sub.offer.id });
  if (!offer || offer.store_id !== sub.store_id || !offer.usage?.length) return 0;
  const store = await collections(db).stores.findOne({ _id: sub.store_id });
  const byMeter = new Map<string, (typeof offer.usage)[number]>();
  for (const row of offer.usage) {
    if (row.currency === sub.currency) byMeter.set(row.meter, row);
    else if (store && row.currency === store.currency && !byMeter.has(row.meter)) byMeter.set(row.meter, row);
  }
  let inserted = 0;
  for (const row of byMeter.values()) {
    const doc: UsageItemDoc = {
      _id: usageItemId(sub._id, row.meter),
      store_id: sub.store_id,
      subscription: sub._id,
      customer: sub.customer,
      meter: row.meter,
      offer: offer._id,
      currency: sub.currency,
      unit_amount: row.unit_amount,
      included_units: row.included_units,
      tiers: row.tiers ? row.tiers.map((t) => ({ up_to: t.up_to, unit_amount: t.unit_amount, ...(t.flat_amount ? { flat_amount: t.flat_amount } : {}) })) : null,
      rounding: row.rounding,
      billing_threshold: row.billing_threshold,
      label: row.label,
      source: 'offer',
      created: now,
      created_ms: now * 1000,
      updated: now,
    };
    // An insert: a meter that already has an item (set through the API) keeps it.
    if (await insertInheritedItem(db, doc)) inserted++;
  }
  return inserted;
}

// ---------------------------------------------------------------------------------------------
// Computing a period

interface Computed {
  lines: PeriodLineDoc[];
  amount_total: number;
  threshold: number | null;
  pricing: PricingSnapshot[];
}

/** Prices a period from its rollups and the subscription's current items (deactivated meters at zero). */
async function computePeriod(db: Db, storeId: string, subscriptionId: string, periodStart: number, items: UsageItemDoc[]): Promise<Computed> {
  const meters = await metersById(db, storeId, items.map((i) => i.meter));
  const priced = items.filter((i) => meters.has(i.meter)).sort((a, b) => (a.created_ms ?? 0) - (b.created_ms ?? 0) || (a.meter < b.meter ? -1 : 1));
  const rollups = await readRollups(db, priced.map((i) => periodRollupKey(subscriptionId, periodStart, i.meter)));
  const lines: PeriodLineDoc[] = priced.map((item) => {
    const meter = meters.get(item.meter)!;
    const quantity = quantityOf(rollups.get(periodRollupKey(subscriptionId, periodStart, item.meter)), meter.formula);
    const line = priceLine(quantity, item, meter.status === 'active');
    return {
      meter: meter._id,
      event_name: meter.event_name,
      display_name: meter.display_name,
      quantity: line.quantity,
      included: line.included,
      billable: line.billable,
      unit_amount: line.unit_amount,
      amount: line.amount,
    };
  });
  const pricing: PricingSnapshot[] = priced.map((item) => ({
    meter: item.meter,
    formula: meters.get(item.meter)!.formula,
    active: meters.get(item.meter)!.status === 'active',
    unit_amount: item.unit_amount,
    included_units: item.included_units,
    tiers: item.tiers,
    rounding: item.rounding,
  }));
  return { lines, amount_total: periodTotal(lines), threshold: lowestThreshold(priced), pricing };
}

async function subscriptionItems(db: Db, sub: SubscriptionDoc): Promise<UsageItemDoc[]> {
  return listUsageItems(db, sub.store_id, sub._id, await storeMeterIds(db, sub.store_id));
}

/** GET /subscriptions/{id}/usage: the 12 most recent periods, newest first, the open one computed now. */
export async function subscriptionUsage(db: Db, storeId: string, subscriptionId: string, nowMs = Date.now()): Promise<UsagePeriodObject[]> {
  const sub = await requireSubscription(db, storeId, subscriptionId);
  const state = await findUsageState(db, storeId, sub._id);
  if (!state) return [];
  const ids = [...state.periods].sort().reverse().slice(0, 12);
  const docs = (await Promise.all(ids.map((id) => findUsagePeriod(db, storeId, id)))).filter((d): d is UsagePeriodDoc => d !== null);
  const items = docs.some((d) => d.status === 'open') ? await subscriptionItems(db, sub) : [];
  const out: UsagePeriodObject[] = [];
  for (const doc of docs) {
    if (doc.status !== 'open') {
      out.push(usagePeriodObject(doc));
      continue;
    }
    const computed = await computePeriod(db, storeId, sub._id, doc.period_start, items);
    out.push(usagePeriodObject({ ...doc, lines: computed.lines, amount_total: computed.amount_total, computed_at: seconds(nowMs) }));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Event summaries

export interface SummaryQuery {
  customer: string;
  start_time: number;
  end_time: number;
  value_grouping_window?: 'hour' | 'day';
}

export const SUMMARY_RANGE_MAX_SECONDS = 366 * DAY;

/** GET /billing/meters/{id}/event_summaries: sums of the customer's events (attached or not) per window. */
export async function meterEventSummaries(db: Db, storeId: string, meterId: string, query: SummaryQuery) {
  const meter = await findMeter(db, storeId, meterId);
  if (!meter) throw notFound('meter', meterId);
  const { start_time: start, end_time: end, value_grouping_window: window } = query;
  if (end <= start) throw invalid('end_time', 'end_time must be after start_time.');
  if (end - start > SUMMARY_RANGE_MAX_SECONDS) throw invalid('end_time', 'The range between start_time and end_time is at most one year.');
  const size = window === 'day' ? DAY : HOUR;
  for (const [param, t] of [['start_time', start], ['end_time', end]] as const) {
    if (t % size !== 0) {
      throw invalid(param, `${param} must be at the start of ${window === 'day' ? 'a day (UTC, a multiple of 86400)' : 'an hour (a multiple of 3600)'}.`);
    }
  }
  if (!(await customerExists(db, storeId, query.customer))) throw notFound('customer', query.customer, 'customer');

  // Each summary window is made of whole days (day rollups) and whole hours (hour rollups).
  const windows: { start: number; end: number; keys: string[] }[] = [];
  const keysFor = (from: number, to: number) => {
    const keys: string[] = [];
    for (let t = from; t < to; ) {
      if (t % DAY === 0 && t + DAY <= to) {
        keys.push(dayRollupKey(meter._id, query.customer, t));
        t += DAY;
      } else {
        keys.push(hourRollupKey(meter._id, query.customer, t));
        t += HOUR;
      }
    }
    return keys;
  };
  if (window) {
    for (let t = start; t < end; t += size) windows.push({ start: t, end: t + size, keys: keysFor(t, t + size) });
  } else {
    windows.push({ start, end, keys: keysFor(start, end) });
  }
  const rollups = await readRollups(db, windows.flatMap((w) => w.keys));
  const data = [];
  for (const w of windows) {
    const docs = w.keys.map((k) => rollups.get(k)).filter((d): d is RollupDoc => d !== undefined && d.count > 0);
    if (docs.length === 0) continue;
    let value: number;
    if (meter.formula === 'count') value = docs.reduce((s, d) => s + d.count, 0);
    else if (meter.formula === 'sum') value = docs.reduce((s, d) => s + d.sum, 0);
    else value = quantityOf(docs.reduce((a, b) => ((a.last ?? '') >= (b.last ?? '') ? a : b)), 'last');
    data.push({
      id: hashedId('mes', `${meter._id}|${query.customer}|${w.start}|${w.end}`),
      object: 'billing.meter_event_summary' as const,
      meter: meter._id,
      customer: query.customer,
      aggregated_value: value,
      start_time: w.start,
      end_time: w.end,
      livemode: true,
    });
  }
  data.reverse();
  return { object: 'list' as const, url: `/v1/billing/meters/${meter._id}/event_summaries`, has_more: false, data };
}

// ---------------------------------------------------------------------------------------------
// Activities of the usage-period workflow

export interface PeriodRef {
  id: string;
  start: number;
  end: number;
  threshold_boundary: boolean;
}

export type PrepareResult = (
  | { kind: 'open'; period: PeriodRef }
  | { kind: 'wait'; reason: 'not_chargeable' | 'no_cycle' }
  | { kind: 'finished'; reason: 'no_subscription' | 'no_items' | 'ended' }
) & { recomputeEverySeconds: number };

export interface RecomputeResult {
  chargeable: boolean;
  status: string;
  amount_total: number;
  threshold: number | null;
  thresholdReached: boolean;
  period: UsagePeriodObject;
}

export interface CloseResult {
  amount_total: number;
  chargeNeeded: boolean;
  period: UsagePeriodObject;
}

export interface ChargeResult {
  charge: string | null;
  state: UsagePeriodDoc['charge_state'];
  outcome: string | null;
  refusal: { code: string; message: string } | null;
}

type WithStore = UsageWorkflowInput;

/** End of a period opening at `start`: the subscription's cycle end when ahead, else the next cycle's. */
function periodEndFor(sub: SubscriptionDoc, start: number, now: number): number {
  const cycle = cycleOf(sub);
  if (cycle && cycle.end > start && cycle.end > now) return cycle.end;
  if (!isBillingCycle(sub.billing_cycle)) return start + 30 * DAY;
  let end = periodEnd(start, sub.billing_cycle, sub.custom_billing_days, sub.billing_anchor_day ?? undefined);
  // A start far back (after a long pause) still opens a period that ends in the future.
  while (end <= now) end = periodEnd(end, sub.billing_cycle, sub.custom_billing_days, sub.billing_anchor_day ?? undefined);
  return end;
}

const refOf = (open: UsageStateDoc['open'] & object): PeriodRef => ({ id: open.id, start: open.start, end: open.end, threshold_boundary: open.threshold_boundary });

export function createUsageActivities(deps: UsageDeps) {
  const { db } = deps;

  async function openPeriod(sub: SubscriptionDoc, state: UsageStateDoc, start: number, end: number, now: number): Promise<PeriodRef> {
    const id = usagePeriodId(sub._id, start);
    await insertUsagePeriod(db, {
      _id: id,
      store_id: sub.store_id,
      subscription: sub._id,
      status: 'open',
      close_reason: null,
      period_start: start,
      period_end: end,
      currency: state.currency,
      lines: [],
      amount_total: 0,
      threshold: null,
      threshold_boundary: false,
      charge: null,
      charge_state: 'none',
      charge_refusal: null,
      computed_at: null,
      closed_at: null,
      livemode: true,
      created: now,
    });
    const open = { id, start, end, threshold_boundary: false };
    await updateUsageState(db, sub._id, { $set: { open }, $addToSet: { periods: id } });
    return open;
  }

  type Prepared =
    | { kind: 'open'; period: PeriodRef }
    | { kind: 'wait'; reason: 'not_chargeable' | 'no_cycle' }
    | { kind: 'finished'; reason: 'no_subscription' | 'no_items' | 'ended' };

  async function prepare(input: WithStore & { now: number }): Promise<Prepared> {
    const sub = await loadSubscription(db, input.storeId, input.subscriptionId);
    if (!sub) return { kind: 'finished', reason: 'no_subscription' };
    let state = await ensureUsageState(db, newUsageState(sub, input.now));
    if (!state.inherited) {
      await inheritOfferItems(db, sub, input.now);
      state = (await updateUsageState(db, sub._id, { $set: { inherited: true } })) ?? state;
    }
    const items = await subscriptionItems(db, sub);
    // Re-checked on every run: an index entry lost to a concurrent writer is restored.
    if (items.length > 0 && sub.customer) await addCustomerSubscription(db, sub.store_id, sub.customer, sub._id);
    if (state.open) return { kind: 'open', period: refOf(state.open) };
    if (items.length === 0) return { kind: 'finished', reason: 'no_items' };
    const start = state.next_start ?? cycleOf(sub)?.start ?? input.now;
    if (!isChargeable(sub)) {
      if (!isEnded(sub.status)) return { kind: 'wait', reason: 'not_chargeable' };
      // Usage attached after the last period closed (while it was past_due) is still charged.
      const pending = await readRollups(db, items.map((i) => periodRollupKey(sub._id, start, i.meter)));
      if (![...pending.values()].some((r) => r.count > 0) || start >= input.now) return { kind: 'finished', reason: 'ended' };
      return { kind: 'open', period: await openPeriod(sub, state, start, input.now, input.now) };
    }
    return { kind: 'open', period: await openPeriod(sub, state, start, periodEndFor(sub, start, input.now), input.now) };
  }

  return {
    /** Inherits the offer's rows once, then finds or opens the period of the current cycle. */
    async prepareUsagePeriod(input: WithStore & { now: number }): Promise<PrepareResult> {
      return { ...(await prepare(input)), recomputeEverySeconds: deps.usageRecomputeSeconds ?? RECOMPUTE_INTERVAL_SECONDS };
    },

    /** Prices the open period now; says whether the threshold is reached and the subscription chargeable. */
    async recomputeUsagePeriod(input: WithStore & { periodId: string; now: number }): Promise<RecomputeResult> {
      const sub = await loadSubscription(db, input.storeId, input.subscriptionId);
      const period = await findUsagePeriod(db, input.storeId, input.periodId);
      if (!sub || !period) throw ApplicationFailure.nonRetryable(`usage period ${input.periodId} of ${input.subscriptionId} not found`);
      const items = await subscriptionItems(db, sub);
      if (items.length > 0 && sub.customer) await addCustomerSubscription(db, sub.store_id, sub.customer, sub._id);
      const computed = await computePeriod(db, sub.store_id, sub._id, period.period_start, items);
      const updated =
        period.status === 'open'
          ? await updateUsagePeriod(db, period._id, {
              lines: computed.lines,
              amount_total: computed.amount_total,
              threshold: computed.threshold,
              computed_at: input.now,
            })
          : period;
      await updateUsageState(db, sub._id, { $set: { threshold: computed.threshold, pricing: computed.pricing } });
      return {
        chargeable: isChargeable(sub),
        status: sub.status,
        amount_total: computed.amount_total,
        threshold: computed.threshold,
        thresholdReached: thresholdReached(computed.amount_total, computed.threshold),
        period: usagePeriodObject(updated ?? period),
      };
    },

    /** The threshold was reached: the open period now ends at `end` (ingestion reads the new end first). */
    async moveUsagePeriodEnd(input: WithStore & { periodId: string; end: number }): Promise<PeriodRef> {
      const state = await findUsageState(db, input.storeId, input.subscriptionId);
      if (!state?.open || state.open.id !== input.periodId) throw ApplicationFailure.nonRetryable(`usage period ${input.periodId} is not open`);
      const open = { ...state.open, end: input.end, threshold_boundary: true };
      await updateUsageState(db, input.subscriptionId, { $set: { open } });
      await updateUsagePeriod(db, input.periodId, { period_end: input.end, threshold_boundary: true });
      return refOf(open);
    },

    /**
     * Closes the period with its final lines. Waits (by failing, to be retried) while ingestion
     * batches for it are still in flight; replays the ones a dead process left behind.
     */
    async closeUsagePeriod(input: WithStore & { periodId: string; reason: CloseReason; end: number; now: number }): Promise<CloseResult> {
      const period = await findUsagePeriod(db, input.storeId, input.periodId);
      if (!period) throw ApplicationFailure.nonRetryable(`usage period ${input.periodId} not found`);
      if (period.status === 'closed') {
        return { amount_total: period.amount_total, chargeNeeded: period.charge_state === 'none' && period.amount_total > 0, period: usagePeriodObject(period) };
      }
      const sub = await loadSubscription(db, input.storeId, input.subscriptionId);
      if (!sub) throw ApplicationFailure.nonRetryable(`subscription ${input.subscriptionId} not found`);
      // Batches of the subscription's customer still being written (or left by a dead process).
      const journals = sub.customer ? await openJournalsFor(db, customerLock(sub.store_id, sub.customer)) : [];
      if (journals.length > 0) {
        const stale = journals.every((j) => j.lease_until + 5 * JOURNAL_LEASE_MS < Date.now());
        if (!stale) throw ApplicationFailure.retryable(`${journals.length} ingestion batch(es) for ${period._id} still in flight`, 'UsageBatchesInFlight');
        await recoverUsageJournals(db);
      }
      const computed = await computePeriod(db, sub.store_id, sub._id, period.period_start, await subscriptionItems(db, sub));
      const closed = (await updateUsagePeriod(db, period._id, {
        status: 'closed',
        close_reason: input.reason,
        period_end: input.end,
        lines: computed.lines,
        amount_total: computed.amount_total,
        threshold: computed.threshold,
        computed_at: input.now,
        closed_at: input.now,
        charge_state: computed.amount_total > 0 ? 'none' : 'not_needed',
      }))!;
      const state = await findUsageState(db, input.storeId, input.subscriptionId);
      if (state?.open?.id === period._id) await updateUsageState(db, sub._id, { $set: { open: null, next_start: input.end } });
      return { amount_total: closed.amount_total, chargeNeeded: closed.amount_total > 0, period: usagePeriodObject(closed) };
    },

    /**
     * Charges a closed period once (key `usage:<period id>`) through the charge workflow. A refusal
     * before the card closes it with charge null for good; a decline keeps the failed charge.
     */
    async chargeUsagePeriod(input: WithStore & { periodId: string }): Promise<ChargeResult> {
      const period = await findUsagePeriod(db, input.storeId, input.periodId);
      if (!period || period.status !== 'closed') throw ApplicationFailure.nonRetryable(`usage period ${input.periodId} is not closed`);
      if (period.charge_state !== 'none') {
        return { charge: period.charge, state: period.charge_state, outcome: null, refusal: period.charge_refusal };
      }
      if (period.amount_total <= 0) {
        await updateUsagePeriod(db, period._id, { charge_state: 'not_needed' });
        return { charge: null, state: 'not_needed', outcome: null, refusal: null };
      }
      try {
        const result = await startCharge(deps, {
          storeId: period.store_id,
          subscriptionId: period.subscription,
          key: `usage:${period._id}`,
          amount: period.amount_total,
          currency: period.currency,
          description: usageChargeDescription(period.period_start, period.period_end),
          lines: usageChargeLines(period.lines),
          metadata: { kind: 'usage', usage_period: period._id },
          source: 'usage',
          billingReason: 'usage',
        });
        await updateUsagePeriod(db, period._id, { charge: result.charge.id, charge_state: 'charged' });
        return { charge: result.charge.id, state: 'charged', outcome: result.outcome, refusal: null };
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const refusal = { code: error.code, message: error.message };
        await updateUsagePeriod(db, period._id, { charge: null, charge_state: 'refused', charge_refusal: refusal });
        return { charge: null, state: 'refused', outcome: null, refusal };
      }
    },

    /**
     * The usage routine: starts the usage workflow of every subscription created since the last run
     * whose offer has usage rows (its first run inherits them). Keeps a cursor of subscription ids.
     */
    async runUsageRoutine(input: { now?: number } = {}): Promise<{ started: number }> {
      return runUsageRoutine(deps, input.now ?? Date.now());
    },
  };
}

const routineCursors = (db: Db) => db.collection<{ _id: string; last: string }>('usage_routine');

/** Subscriptions younger than this are left to the next run (their insert may still be in flight). */
const ROUTINE_LAG_MS = 60_000;

export async function runUsageRoutine(deps: UsageDeps, nowMs: number): Promise<{ started: number }> {
  const { db } = deps;
  const cursor = await routineCursors(db).findOne({ _id: 'subscriptions' });
  const offers = await collections(db).offers.find({}, { projection: { _id: 1, usage: 1 } }).toArray();
  const withUsage = new Set(offers.filter((o) => (o.usage ?? []).length > 0).map((o) => o._id));
  const subs = await subscriptionsCollection(db)
    .find(cursor ? { _id: { $gt: cursor.last } } : {})
    .sort({ _id: 1 })
    .toArray();
  let started = 0;
  let last = cursor?.last ?? null;
  for (const sub of subs) {
    if (sub.created * 1000 > nowMs - ROUTINE_LAG_MS) break;
    if (sub.offer && withUsage.has(sub.offer.id) && deps.temporal) {
      await signalUsageWorkflow(deps.temporal, deps.taskQueue, sub);
      started++;
    }
    last = sub._id;
  }
  if (last !== null && last !== cursor?.last) {
    await routineCursors(db).updateOne({ _id: 'subscriptions' }, { $set: { last } }, { upsert: true });
  }
  return { started };
}

export function usageRoutineScheduleId(taskQueue: string): string {
  return `usage-routine/${taskQueue}`;
}

/** The schedule that runs the usage routine every 10 minutes; the worker ensures it at start. */
export async function ensureUsageRoutineSchedule(client: Client, taskQueue: string, everyMs = 10 * 60_000): Promise<string> {
  const scheduleId = usageRoutineScheduleId(taskQueue);
  try {
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: everyMs }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'usageRoutineWorkflow',
        workflowId: `usage-routine/${taskQueue}`,
        taskQueue,
        args: [],
        workflowRunTimeout: '5 minutes',
      },
      policies: { overlap: 'SKIP', catchupWindow: '1 minute' },
    });
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  return scheduleId;
}
