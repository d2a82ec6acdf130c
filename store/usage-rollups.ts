// Rollups: running totals (sum, count, latest value) per key (a subscription period's meter; a customer's
// meter per day, with its hours) that ingestion adds new events to. Exactly once without transactions: a
// batch inserts its journal (keys, event ids), adds its id to each key's `pending`, inserts its events,
// then applies each key with one update matching `{_id, pending: id}` that adds the totals and pulls the
// id, so the first to apply counts it and any replay (any process, any time) matches nothing.
import type { AnyBulkWriteOperation, Db, UpdateFilter } from 'mongodb';
import { randomBase62 } from '../domain/ids';
import { onlyDuplicateKeys } from './insert-once';

/** Totals of a set of events; `last` is `<timestamp, 12 digits>|<event id>|<value>` ($max keeps the latest). */
export interface RollupTotals {
  sum: number;
  count: number;
  last?: string;
}

export interface RollupDoc extends RollupTotals {
  _id: string;
  store_id: string;
  /** Day rollups: the totals of each hour (0-23, UTC) of the day. */
  h?: Record<string, RollupTotals>;
  /** Journals added to this key and not applied yet: only batches in flight, as nothing applied is remembered. */
  pending: string[];
  created: number;
}

export interface RollupDelta {
  sum: number;
  count: number;
  last: string | null;
  /** Per-hour parts of a day rollup. */
  hours: Map<string, { sum: number; count: number; last: string | null }>;
}

export interface JournalDoc {
  _id: string;
  store_id: string;
  /** `<store>|<customer>` of its events: closing a period waits for the customer's open journals. */
  customers: string[];
  /** The rollup keys it is pending on. */
  keys: string[];
  /** Ids of the events it may insert (those it inserted carry `batch` = its id). */
  events: string[];
  /** Milliseconds: its writer inserts events only before this; recovery replays only RECOVERY_MARGIN_MS after. */
  lease_until: number;
  created: number;
}

/** One event's part in a batch: its id, the keys it adds to (`key@part` also adds to that part), and what it adds. */
export interface RollupContribution {
  id: string;
  keys: string[];
  value: number;
  timestamp: number;
}

export const rollupsCollection = (db: Db) => db.collection<RollupDoc>('usage_rollups');
export const journalsCollection = (db: Db) => db.collection<JournalDoc>('usage_journals');

/** A batch's writer inserts its events within this (or gives up); recovery waits this plus the margin. */
export const JOURNAL_LEASE_MS = 30_000;
/** Room for an insert still in flight when its writer's lease ends, and for clock skew between processes. */
export const RECOVERY_MARGIN_MS = 30_000;

export function encodeLast(timestamp: number, eventId: string, value: number): string {
  return `${String(timestamp).padStart(12, '0')}|${eventId}|${value}`;
}

export function lastValueOf(last: string | undefined | null): number | null {
  if (!last) return null;
  const value = Number(last.slice(last.lastIndexOf('|') + 1));
  return Number.isFinite(value) ? value : null;
}

export function lastTimestampOf(last: string | undefined | null): number | null {
  return last ? Number(last.slice(0, last.indexOf('|'))) : null;
}

/** The rollup key of a contribution target (`key` or `key@part`). */
const rollupKeyOf = (target: string) => target.split('@')[0];

export function deltasOf(contributions: RollupContribution[]): Map<string, RollupDelta> {
  const deltas = new Map<string, RollupDelta>();
  const add = (t: { sum: number; count: number; last: string | null }, value: number, last: string) => {
    t.sum += value;
    t.count += 1;
    if (t.last === null || last > t.last) t.last = last;
  };
  for (const c of contributions) {
    const last = encodeLast(c.timestamp, c.id, c.value);
    for (const target of c.keys) {
      const at = target.indexOf('@');
      const key = rollupKeyOf(target);
      const d = deltas.get(key) ?? { sum: 0, count: 0, last: null, hours: new Map() };
      add(d, c.value, last);
      if (at !== -1) {
        const part = target.slice(at + 1);
        const h = d.hours.get(part) ?? { sum: 0, count: 0, last: null };
        add(h, c.value, last);
        d.hours.set(part, h);
      }
      deltas.set(key, d);
    }
  }
  return deltas;
}

/**
 * Journal writes of concurrent batches share round trips: inserts wait for the one in flight and go
 * together in one insertMany; deletes go together in one deleteMany.
 */
class JournalWrites {
  private inserts: { doc: JournalDoc; done: (error?: unknown) => void }[] = [];
  private deletes: string[] = [];
  private inserting = false;
  private deleting = false;

  constructor(private readonly db: Db) {}

  insert(doc: JournalDoc): Promise<void> {
    return new Promise((resolve, reject) => {
      this.inserts.push({ doc, done: (error) => (error === undefined ? resolve() : reject(error)) });
      if (!this.inserting) void this.flushInserts();
    });
  }

  delete(id: string): void {
    this.deletes.push(id);
    if (!this.deleting) void this.flushDeletes();
  }

  private async flushInserts(): Promise<void> {
    this.inserting = true;
    while (this.inserts.length > 0) {
      const group = this.inserts.splice(0);
      try {
        await journalsCollection(this.db).insertMany(
          group.map((g) => g.doc),
          { ordered: false },
        );
        for (const g of group) g.done();
      } catch (error) {
        for (const g of group) g.done(error);
      }
    }
    this.inserting = false;
  }

  private async flushDeletes(): Promise<void> {
    this.deleting = true;
    while (this.deletes.length > 0) {
      const ids = this.deletes.splice(0);
      // A journal that stays (the delete failed) is replayed by recovery as a no-op: nothing is pending.
      await journalsCollection(this.db)
        .deleteMany({ _id: { $in: ids } })
        .catch(() => undefined);
    }
    this.deleting = false;
  }
}

const journalWrites = new Map<Db, JournalWrites>();
const journalWritesOf = (db: Db) => {
  let writes = journalWrites.get(db);
  if (!writes) journalWrites.set(db, (writes = new JournalWrites(db)));
  return writes;
};

/** Adds the journal's id to `pending` on each of its keys (a new key starts at zero), in one round trip. */
async function addPending(db: Db, journal: JournalDoc): Promise<void> {
  const created = Math.floor(journal.created / 1000);
  const ops: AnyBulkWriteOperation<RollupDoc>[] = journal.keys.map((key) => ({
    updateOne: {
      filter: { _id: key },
      update: { $addToSet: { pending: journal._id }, $setOnInsert: { store_id: journal.store_id, sum: 0, count: 0, created } },
      upsert: true,
    },
  }));
  if (ops.length === 0) return;
  try {
    await rollupsCollection(db).bulkWrite(ops, { ordered: false });
  } catch (error) {
    // Lost the race to create a key: the upsert now finds the winner's document ($addToSet is idempotent).
    if (!onlyDuplicateKeys(error)) throw error;
    await rollupsCollection(db).bulkWrite(ops, { ordered: false });
  }
}

/** Adds a delta to a key and pulls the journal from its `pending` (a key without new events only pulls). */
function applyUpdate(journalId: string, delta: RollupDelta | undefined): UpdateFilter<RollupDoc> {
  const inc: Record<string, number> = {};
  const max: Record<string, string> = {};
  if (delta) {
    Object.assign(inc, { sum: delta.sum, count: delta.count });
    if (delta.last !== null) max.last = delta.last;
    for (const [part, h] of delta.hours) {
      Object.assign(inc, { [`h.${part}.sum`]: h.sum, [`h.${part}.count`]: h.count });
      if (h.last !== null) max[`h.${part}.last`] = h.last;
    }
  }
  const update: UpdateFilter<RollupDoc> = { $pull: { pending: journalId } };
  if (Object.keys(inc).length > 0) update.$inc = inc;
  if (Object.keys(max).length > 0) update.$max = max;
  return update;
}

/**
 * Applies a journal to each of its keys: the update matches only while the journal is pending there, so
 * the key counts it once whoever applies it and however often. One unordered bulk write (one round trip
 * however many keys): a key that fails holds up none of the others, and the journal stays for recovery.
 */
async function applyJournal(db: Db, journal: JournalDoc, deltas: Map<string, RollupDelta>): Promise<void> {
  if (journal.keys.length === 0) return;
  const ops: AnyBulkWriteOperation<RollupDoc>[] = journal.keys.map((key) => ({
    updateOne: { filter: { _id: key, pending: journal._id }, update: applyUpdate(journal._id, deltas.get(key)) },
  }));
  await rollupsCollection(db).bulkWrite(ops, { ordered: false });
}

export interface Batch {
  /** `<store>|<customer>` of the customers whose events it holds. */
  customers: string[];
  /** Every event it may insert; only those `insert` reports as new are counted. */
  contributions: RollupContribution[];
  /** Inserts the events with `batch` set to the journal id; returns the ids that were new. */
  insert: (journalId: string) => Promise<Set<string>>;
}

export interface BatchWrite {
  /** Ids the insert reported as new (the others were already stored). */
  inserted: Set<string>;
  /** False when the totals were left to recovery (they are added within a minute or so). */
  complete: boolean;
}

function newJournal(storeId: string, batch: Batch, now: number): JournalDoc {
  return {
    _id: `ubj_${randomBase62(20)}`,
    store_id: storeId,
    customers: [...new Set(batch.customers)],
    keys: [...new Set(batch.contributions.flatMap((c) => c.keys.map(rollupKeyOf)))],
    events: batch.contributions.map((c) => c.id),
    lease_until: now + JOURNAL_LEASE_MS,
    created: now,
  };
}

/** Writes one batch of events and adds the new ones to their rollups, exactly once (module header). */
export async function writeBatch(db: Db, storeId: string, batch: Batch, now = Date.now()): Promise<BatchWrite> {
  const journal = newJournal(storeId, batch, now);
  await journalWritesOf(db).insert(journal);
  await addPending(db, journal);
  // Past the lease a recovery may replay the journal: its events must not go in after that.
  if (Date.now() >= journal.lease_until) throw new Error(`usage batch ${journal._id}: lease over before its events were inserted`);
  const inserted = await batch.insert(journal._id);
  const deltas = deltasOf(batch.contributions.filter((c) => inserted.has(c.id)));
  try {
    await applyJournal(db, journal, deltas);
  } catch {
    // The journal stays: recovery applies what is still pending.
    return { inserted, complete: false };
  }
  // Not awaited: the totals are in, and a journal that stays is replayed as a no-op.
  journalWritesOf(db).delete(journal._id);
  return { inserted, complete: true };
}

/** Reads the events of a journal that its batch inserted (the loader checks their `batch`). */
export type JournalEventLoader = (journal: JournalDoc) => Promise<RollupContribution[]>;

/**
 * Replays every journal whose lease ended RECOVERY_MARGIN_MS ago (its writer died or failed). Any number
 * of processes may run it at once: applying is idempotent, and claiming a journal spares duplicate work.
 */
export async function recoverJournals(db: Db, load: JournalEventLoader, now = Date.now()): Promise<number> {
  const due = await journalsCollection(db)
    .find({ lease_until: { $lte: now - RECOVERY_MARGIN_MS } }, { projection: { _id: 1 } })
    .toArray();
  let replayed = 0;
  const errors: unknown[] = [];
  for (const { _id } of due) {
    try {
      if (await replayJournal(db, _id, load, now)) replayed++;
    } catch (error) {
      // One journal that cannot be applied holds up none of the others.
      errors.push(error);
    }
  }
  if (errors.length > 0) throw errors[0];
  return replayed;
}

/** Claims a due journal by moving its lease (one atomic update), applies what is pending, deletes it. */
async function replayJournal(db: Db, id: string, load: JournalEventLoader, now: number): Promise<boolean> {
  const journal = await journalsCollection(db).findOneAndUpdate(
    { _id: id, lease_until: { $lte: now - RECOVERY_MARGIN_MS } },
    { $set: { lease_until: now + JOURNAL_LEASE_MS } },
  );
  if (!journal) return false;
  await applyJournal(db, journal, deltasOf(await load(journal)));
  await journalsCollection(db).deleteOne({ _id: id });
  return true;
}

/** Journals of a customer (`<store>|<customer>`) created before `createdBefore` and not finished yet. */
export function openJournalsFor(db: Db, customer: string, createdBefore: number): Promise<JournalDoc[]> {
  return journalsCollection(db)
    .find({ customers: customer, created: { $lt: createdBefore } })
    .toArray();
}

/** Rollups by key, each read by `_id` (missing keys are absent from the map). */
export async function readRollups(db: Db, keys: string[]): Promise<Map<string, RollupDoc>> {
  const unique = [...new Set(keys)];
  const out = new Map<string, RollupDoc>();
  // Bounded parallelism: a year of hourly windows is thousands of reads.
  for (let i = 0; i < unique.length; i += 64) {
    const docs = await Promise.all(unique.slice(i, i + 64).map((key) => rollupsCollection(db).findOne({ _id: key })));
    for (const doc of docs) if (doc) out.set(doc._id, doc);
  }
  return out;
}

/** The quantity totals hold under a meter's formula. */
export function quantityOf(doc: RollupTotals | undefined, formula: 'sum' | 'count' | 'last'): number {
  if (!doc) return 0;
  if (formula === 'count') return doc.count;
  if (formula === 'last') return lastValueOf(doc.last) ?? 0;
  return doc.sum;
}
