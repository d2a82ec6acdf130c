// Ingesting meter events (single call and batch): each item checked on its own (event rules 1-4),
// attachment decided once, on arrival (event rule 5), the events and their rollups written exactly
// once (store/usage-rollups.ts), the hourly error report for unattached events (event rule 6), and the
// recompute signal when a batch may have taken a period to its billing threshold.
import type { Database } from '../../store/database';
import { ApiError } from '../../domain/errors';
import { chosenSubscriptionOf, customerIdOf, readEventShape, resolveTimestamp, valueOf, type EventShape } from '../../domain/meter-events';
import { periodTotal, priceLine, thresholdReached } from '../../domain/pricing';
import { cycleOf, HOUR, latePeriodFor, periodRollupKey, periodStartFor, windowStart } from '../../domain/usage-periods';
import { idTimeMs } from '../../domain/ids';
import { randomBase62 } from '../../domain/ids';
import { findMeterByEventName, type MeterDoc } from '../../store/meters';
import type { SubscriptionDoc } from '../../store/subscriptions';
import {
  noteUnattachedHour,
  contributionOf,
  customerKey,
  customerSubscriptions,
  encodePayload,
  findMeterEvents,
  findUsageItem,
  findUsageState,
  insertMeterEvents,
  journalEventLoader,
  meterEventId,
  type MeterEventDoc,
  type UsageStateDoc,
} from '../../store/usage';
import { meterEventObject, type MeterEventObject } from '../../resources/meter-event';
import { quantityOf, readRollups, recoverJournals, writeBatch, type BatchWrite } from '../../store/usage-rollups';
import type { EventRequest } from '../../store/events';
import { countBusiness } from '../operations/business-metrics';
import { customerTestClock, isChargeable, loadSubscription, recent, recentClockNowMs, seconds, signalUsageWorkflow, type UsageDeps } from './shared';

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

export type IngestResult =
  | { status: 'accepted'; id: string; event: MeterEventObject }
  /** `event` is the stored event when asked for (the single call returns it), else null. */
  | { status: 'duplicate'; id: string; event: MeterEventObject | null }
  | { status: 'error'; error: ApiError };

/** An item whose meter, customer and value are read; its timestamp is checked once its customer's "now" is known. */
type Read = Omit<Checked, 'timestamp'>;

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
  db: Database,
  storeId: string,
  customer: string,
  meter: string,
  chosen: string | null,
  nowMs: number,
): Promise<Attachment | null> {
  const candidates = chosen ? [chosen] : await recent(`c|${storeId}|${customer}`, () => customerSubscriptions(db, storeId, customer), nowMs);
  // Subscription ids are time-ordered: the most recent first.
  for (const id of [...candidates].sort().reverse()) {
    // Read together: one round trip's wait instead of three.
    const [sub, item, state] = await Promise.all([
      recent(`s|${storeId}|${id}`, () => loadSubscription(db, storeId, id), nowMs),
      recent(`i|${storeId}|${id}|${meter}`, () => findUsageItem(db, storeId, id, meter), nowMs),
      recent(`u|${storeId}|${id}`, () => findUsageState(db, storeId, id), nowMs),
    ]);
    if (!sub || sub.customer !== customer || !isChargeable(sub) || !item) continue;
    return { sub, state };
  }
  return null;
}

/** Records an item's refusal in its slot of the results. */
type Fail = (index: number, error: unknown) => void;

/**
 * Ingests meter events (one call or a batch): each item is accepted, a duplicate of a stored event
 * (same meter and identifier: returned, not counted again) or refused on its own.
 */
export async function ingestMeterEvents(
  deps: UsageDeps,
  storeId: string,
  items: unknown[],
  options: { now?: number; request?: EventRequest | null; storedDuplicates?: boolean } = {},
): Promise<IngestResult[]> {
  const { db } = deps;
  const nowMs = options.now ?? Date.now();
  const now = seconds(nowMs);
  const results: IngestResult[] = new Array(items.length);
  const fail: Fail = (index, error) => (results[index] = { status: 'error', error: asApiError(error) });

  const read = await checkItems(db, storeId, readShapes(items, fail), fail);
  const valid = await keepKnownCustomers(db, storeId, read, nowMs, fail);
  const { firstOf, unique, repeats } = splitRepeats(valid);
  // Attachment is decided here, once, and stored with the event.
  const attachments = await Promise.all(
    unique.map((c) => resolveAttachment(db, storeId, c.customer, c.meter._id, chosenSubscriptionOf(c.shape.payload), nowMs)),
  );
  const docs = unique.map((c, i) => meterEventDoc(storeId, c, attachments[i], now));
  // Noted before the write: a process dying after it (its journal replayed later) still leaves the hour to report.
  await noteUnattached(db, storeId, docs, now);
  const written = await writeEvents(db, storeId, unique, docs);
  const stored = options.storedDuplicates === false ? new Map<string, MeterEventDoc>() : await storedDuplicates(db, unique, repeats, written);
  answerEach(results, { unique, repeats, firstOf, docs, written, stored });
  for (const result of results) countBusiness('meterEvents', result.status);

  const fresh = docs.filter((d) => written.inserted.has(d._id));
  await signalCrossedThresholds(deps, fresh, attachments, unique, nowMs);
  return results;
}

function readShapes(items: unknown[], fail: Fail): (EventShape | null)[] {
  return items.map((raw, index) => {
    try {
      return readEventShape(raw);
    } catch (error) {
      fail(index, error);
      return null;
    }
  });
}

/** Event rules 1, 2 and 4 for each readable item, with its meter (looked up once per event name). */
async function checkItems(db: Database, storeId: string, shapes: (EventShape | null)[], fail: Fail): Promise<Read[]> {
  const names = [...new Set(shapes.filter((s): s is EventShape => s !== null).map((s) => s.eventName))];
  const meters = new Map(await Promise.all(names.map(async (name) => [name, await findMeterByEventName(db, storeId, name)] as const)));
  const checked: Read[] = [];
  shapes.forEach((shape, index) => {
    if (!shape) return;
    try {
      checked.push(checkItem(storeId, index, shape, meters.get(shape.eventName) ?? null));
    } catch (error) {
      fail(index, error);
    }
  });
  return checked;
}

function checkItem(storeId: string, index: number, shape: EventShape, meter: MeterDoc | null): Read {
  if (!meter) throw new ApiError('no_meter_found', `No active meter has event_name '${shape.eventName}'.`, { param: 'event_name' });
  if (meter.status !== 'active') throw new ApiError('meter_inactive', `The meter for '${shape.eventName}' is inactive.`, { param: 'event_name' });
  const customer = customerIdOf(shape.payload, meter);
  const value = valueOf(shape.payload, meter);
  // Without an identifier every call counts: a fresh one is generated.
  const identifier = shape.identifier ?? `gen_${randomBase62(24)}`;
  return { index, shape, meter, customer, value, identifier, id: meterEventId(storeId, meter._id, identifier) };
}

/**
 * Event rule 3 against each customer's "now" (its test clock's, else the arrival time), then the
 * customer's existence: items that pass both are kept, the others refused (each customer looked up once).
 */
async function keepKnownCustomers(db: Database, storeId: string, read: Read[], nowMs: number, fail: Fail): Promise<Checked[]> {
  const customers = [...new Set(read.map((c) => c.customer))];
  const clocks = new Map(await Promise.all(customers.map(async (id) => [id, await customerTestClock(db, storeId, id)] as const)));
  const clockNows = await clockNowsOf(db, storeId, clocks, nowMs);
  const kept: Checked[] = [];
  for (const c of read) {
    const clock = clocks.get(c.customer);
    try {
      const timestamp = resolveTimestamp(c.shape.timestamp, clock ? clockNows.get(clock)! : seconds(nowMs));
      if (clock === undefined)
        throw new ApiError('resource_missing', `No such customer: '${c.customer}'`, { param: `payload.${c.meter.customer_payload_key}` });
      kept.push({ ...c, timestamp });
    } catch (error) {
      fail(c.index, error);
    }
  }
  return kept;
}

/** Each test clock's time (seconds) among the batch's customers: nothing is read for a batch without one. */
async function clockNowsOf(
  db: Database,
  storeId: string,
  clocks: Map<string, string | null | undefined>,
  nowMs: number,
): Promise<Map<string, number>> {
  const ids = [...new Set([...clocks.values()].filter((clock): clock is string => Boolean(clock)))];
  if (ids.length === 0) return new Map();
  return new Map(await Promise.all(ids.map(async (id) => [id, seconds(await recentClockNowMs(db, storeId, id, nowMs))] as const)));
}

/** The same identifier twice in one batch: the later ones are duplicates of the first. */
function splitRepeats(valid: Checked[]): { firstOf: Map<string, Checked>; unique: Checked[]; repeats: Checked[] } {
  const firstOf = new Map<string, Checked>();
  const repeats: Checked[] = [];
  for (const c of valid) {
    if (firstOf.has(c.id)) repeats.push(c);
    else firstOf.set(c.id, c);
  }
  return { firstOf, unique: [...firstOf.values()], repeats };
}

/** The events and their rollups, written exactly once (store/usage-rollups.ts). */
async function writeEvents(db: Database, storeId: string, unique: Checked[], docs: MeterEventDoc[]): Promise<BatchWrite> {
  if (unique.length === 0) return { inserted: new Set(), complete: true };
  return writeBatch(db, storeId, {
    customers: unique.map((c) => customerKey(storeId, c.customer)),
    contributions: docs.map(contributionOf),
    insert: (journalId) => {
      for (const doc of docs) doc.batch = journalId;
      return insertMeterEvents(db, docs);
    },
  });
}

/** A duplicate is a primary-key conflict, so it is stored; the single call returns the stored event. */
function storedDuplicates(db: Database, unique: Checked[], repeats: Checked[], written: BatchWrite): Promise<Map<string, MeterEventDoc>> {
  return findMeterEvents(
    db,
    [...unique.filter((c) => !written.inserted.has(c.id)), ...repeats].map((c) => c.id),
  );
}

/** Each written item is accepted; the others are duplicates, with their stored event when it was read. */
function answerEach(
  results: IngestResult[],
  batch: {
    unique: Checked[];
    repeats: Checked[];
    firstOf: Map<string, Checked>;
    docs: MeterEventDoc[];
    written: BatchWrite;
    stored: Map<string, MeterEventDoc>;
  },
): void {
  const { unique, repeats, firstOf, docs, written, stored } = batch;
  const byId = new Map(docs.map((d) => [d._id, d]));
  for (const c of [...unique, ...repeats]) {
    if (written.inserted.has(c.id) && firstOf.get(c.id) === c) {
      results[c.index] = { status: 'accepted', id: c.id, event: meterEventObject(byId.get(c.id)!) };
    } else {
      const doc = stored.get(c.id);
      results[c.index] = { status: 'duplicate', id: c.id, event: doc ? meterEventObject(doc) : null };
    }
  }
}

/** A period's start, from its id (derived from the start: store/usage.ts usagePeriodId). */
const periodStartOf = (periodId: string) => idTimeMs(periodId) / 1000;

/** The stored event of a checked item, in the period its attachment puts it in (event rule 5). */
function meterEventDoc(storeId: string, c: Checked, attached: Attachment | null, now: number): MeterEventDoc {
  let periodStart: number | null = null;
  let lateFrom: number | null = null;
  if (attached) {
    const state = attached.state;
    periodStart = state
      ? periodStartFor(c.timestamp, state.open, state.next_start)
      : periodStartFor(c.timestamp, null, cycleOf(attached.sub)?.start ?? null);
    // "Late events are never lost": one whose period is closed counts in the next charge, on its own line.
    const late = periodStart === null && state ? latePeriodFor(c.timestamp, state.periods.map(periodStartOf), state.open, state.next_start) : null;
    if (late) [periodStart, lateFrom] = [late.start, late.from];
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
    ...(lateFrom !== null ? { late_from: lateFrom } : {}),
    value: c.value,
    timestamp: c.timestamp,
    payload: encodePayload(c.shape.payload),
    batch: null,
    livemode: true,
    created: now,
  };
}

/**
 * Event rule 6: notes the hour of unattached events; the usage routine reports it once the hour is over
 * (services/usage/error-reports.ts). A note for repeats only (nothing new in the hour's count) sends nothing.
 */
async function noteUnattached(db: Database, storeId: string, docs: MeterEventDoc[], now: number): Promise<void> {
  const meters = new Set(docs.filter((doc) => doc.subscription === null).map((doc) => doc.meter));
  const hour = windowStart(now, HOUR);
  await Promise.all([...meters].map((meterId) => noteUnattachedHour(db, storeId, meterId, hour)));
}

/**
 * Signals the usage workflow when a batch may have taken its open period to the threshold: the period's
 * rollups are read (by `_id`) only for subscriptions with a threshold, so a batch without one writes its
 * totals without reading them back.
 */
async function signalCrossedThresholds(
  deps: UsageDeps,
  fresh: MeterEventDoc[],
  attachments: (Attachment | null)[],
  unique: Checked[],
  nowMs: number,
): Promise<void> {
  const freshIds = new Set(fresh.map((d) => d._id));
  const touched = new Map<string, Attachment>();
  unique.forEach((c, i) => {
    const a = attachments[i];
    if (a && a.state?.open && a.state.threshold !== null && freshIds.has(c.id)) touched.set(a.sub._id, a);
  });
  for (const { sub, state } of touched.values()) {
    const open = state!.open!;
    const read = await readRollups(
      deps.db,
      state!.pricing.map((p) => periodRollupKey(sub._id, open.start, p.meter)),
    );
    const amount = periodTotal(
      state!.pricing.map((p) => priceLine(quantityOf(read.get(periodRollupKey(sub._id, open.start, p.meter)), p.formula), p, p.active)),
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
export function recoverUsageJournals(db: Database, now = Date.now()): Promise<number> {
  return recoverJournals(db, journalEventLoader(db), now);
}
