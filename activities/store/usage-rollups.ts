// Rollups: running totals (sum, count, latest value) per key — a period's meter on a subscription,
// and a customer's meter per hour and per day — that ingestion adds every new event to, so that a
// period recompute or an event summary reads a handful of documents by `_id` instead of scanning
// events (FerretDB v1 answers only `{_id: v}` without a full collection scan).
//
// Exactly once, without transactions: before inserting a batch of events, ingestion writes a journal
// (the event ids, its writer and a sequence number) and takes its place in this process's queue of
// each customer it holds events of (a customer's events are the only ones reaching its rollups);
// after the insert it adds the new events' totals to each key with `$max: {seq.<writer>: n}`
// in the same single-document update, then deletes the journal. A journal left behind (process
// died, database error, lease over) is replayed by recoverJournals: a key whose seq.<writer> is
// already >= n got the batch, any other gets it now. That test is exact because one writer applies
// its batches to a key in sequence order, and a writer that fails or overruns its lease is retired
// (the batches queued behind it are left to recovery, in order) — never skipped over. Several
// processes recover (the API's sweeper, the worker closing a period): each journal is replayed under
// a claim taken by inserting a unique `_id` (atomic on FerretDB too), and the replay's update only
// matches while seq.<writer> < n (atomic on MongoDB, should a claim run out mid-replay).
//
// FerretDB v1 applies updates as unlocked read-modify-writes, so updates of one key are serialized in
// this process (KeyedQueue); on MongoDB the $inc/$max are atomic and any number of processes may write.
import type { Db } from 'mongodb';
import { randomBase62 } from '../../domain/ids';
import { KeyedQueue } from './keyed-queue';
import { registerIndexes } from './collections';

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
  /** Highest batch sequence applied, per writer. */
  seq: Record<string, number>;
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
  writer: string;
  seq: number;
  /** Queue keys the batch held (ingestion: its customers). */
  locks: string[];
  events: string[];
  /** Milliseconds: the writer applies only before this; recovery only well after. */
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

/** A recovery's claim on a journal: `_id` is `<journal id>#<generation>`; an expired claim is taken over by the next generation. */
export interface JournalClaimDoc {
  _id: string;
  journal: string;
  /** Milliseconds, on the clock of the recovery that claimed it. */
  until: number;
  created: number;
}

export const rollupsCollection = (db: Db) => db.collection<RollupDoc>('usage_rollups');
export const journalsCollection = (db: Db) => db.collection<JournalDoc>('usage_journals');
export const journalClaimsCollection = (db: Db) => db.collection<JournalClaimDoc>('usage_journal_claims');

registerIndexes((db) => journalsCollection(db).createIndex({ store_id: 1, created: 1 }));

export const JOURNAL_LEASE_MS = 30_000;
/** Recovery leaves a journal alone until this long after its lease ended. */
export const RECOVERY_MARGIN_MS = 30_000;
/** A recovery's claim on a journal; it stops applying well before the claim runs out. */
export const RECOVERY_CLAIM_MS = 2 * 60_000;

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
      const key = at === -1 ? target : target.slice(0, at);
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

class Writer {
  readonly id = randomBase62(10);
  seq = 0;
  retired = false;
}

let writer = new Writer();
const keyQueue = new KeyedQueue();

/**
 * Journal writes of concurrent batches share round trips: inserts wait for the one in flight and go
 * together in one insertMany; deletes go together in one deleteMany (the collection only holds
 * batches in flight, so its `$in` scan is short).
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
        await journalsCollection(this.db).insertMany(group.map((g) => g.doc), { ordered: false });
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
      // A journal that stays (the delete failed) is recognised as applied by recovery.
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

function retire(w: Writer): void {
  w.retired = true;
  if (writer === w) writer = new Writer();
}

const isDuplicateKey = (error: unknown) => typeof error === 'object' && error !== null && (error as { code?: number }).code === 11000;

/**
 * Adds a delta to a key. `onlyBefore` (recovery) makes the update match only while the key has not
 * seen this writer's batch `seq`: the check and the write are one atomic update on MongoDB.
 */
async function applyDelta(
  db: Db,
  storeId: string,
  key: string,
  delta: RollupDelta,
  writerId: string,
  seq: number,
  onlyBefore = false,
): Promise<RollupDoc | null> {
  const seqField = `seq.${writerId}`;
  // _id first; live writers keep the bare `{_id}` filter, the only one FerretDB answers from its index.
  const filter = onlyBefore ? { _id: key, $or: [{ [seqField]: { $exists: false } }, { [seqField]: { $lt: seq } }] } : { _id: key };
  const max: Record<string, unknown> = { [seqField]: seq };
  const inc: Record<string, number> = { sum: delta.sum, count: delta.count };
  if (delta.last !== null) max.last = delta.last;
  for (const [part, h] of delta.hours) {
    inc[`h.${part}.sum`] = h.sum;
    inc[`h.${part}.count`] = h.count;
    if (h.last !== null) max[`h.${part}.last`] = h.last;
  }
  const update = { $inc: inc, $max: max };
  try {
    return await rollupsCollection(db).findOneAndUpdate(
      filter,
      { ...update, $setOnInsert: { store_id: storeId, created: Math.floor(Date.now() / 1000) } },
      { upsert: true, returnDocument: 'after' },
    );
  } catch (error) {
    // Two first writes of a key from two processes (or `onlyBefore` on a key that has the batch):
    // the loser applies to the winner's document, under the same filter.
    if (!isDuplicateKey(error)) throw error;
    return rollupsCollection(db).findOneAndUpdate(filter, update, { returnDocument: 'after' });
  }
}

export interface BatchWrite {
  /** Ids the insert reported as new (the others were already stored). */
  inserted: Set<string>;
  /** Keys updated by this call, as they are after the update. */
  totals: Map<string, RollupDoc>;
  /** False when some totals were left to recovery (they will be added within a minute or so). */
  complete: boolean;
}

export interface BatchPlan {
  /**
   * Queue keys covering every rollup key the batch may touch (ingestion: one per customer, since a
   * customer's events are the only ones reaching its hour, day and period rollups).
   */
  locks: string[];
  /** Ids of the events the batch may insert. */
  events: string[];
}

export interface PreparedBatch {
  contributions: RollupContribution[];
  /** Inserts the events with `batch` set to `batchId`; returns the ids that were new. */
  insert: (batchId: string) => Promise<Set<string>>;
}

/**
 * Writes one batch of events and adds the new ones to their rollups, exactly once (module header).
 * `prepare` (attachment, documents) runs while the journal is written, to save a round trip.
 */
export async function writeBatchPrepared(
  db: Db,
  storeId: string,
  plan: BatchPlan,
  prepare: () => Promise<PreparedBatch>,
  now = Date.now(),
): Promise<BatchWrite> {
  const w = writer;
  const seq = ++w.seq;
  const locks = [...new Set(plan.locks)];
  // Places are taken synchronously, so this writer's batches reach each key in sequence order.
  const turns = locks.map((lock) => keyQueue.reserve(lock));
  const releaseAll = () => turns.forEach((turn) => turn.done());
  const journal: JournalDoc = {
    _id: `ubj_${randomBase62(20)}`,
    store_id: storeId,
    writer: w.id,
    seq,
    locks,
    events: plan.events,
    lease_until: now + JOURNAL_LEASE_MS,
    created: now,
  };
  let inserted: Set<string>;
  let contributions: RollupContribution[];
  try {
    const [, prepared] = await Promise.all([journalWritesOf(db).insert(journal), prepare()]);
    contributions = prepared.contributions;
    inserted = await prepared.insert(journal._id);
  } catch (error) {
    // Some events may be in: their journal (if written) goes to recovery, and so must every batch
    // of this writer queued behind it, or a later sequence would mark this one as applied.
    retire(w);
    releaseAll();
    throw error;
  }
  const deltas = deltasOf(contributions.filter((c) => inserted.has(c.id)));
  const totals = new Map<string, RollupDoc>();
  let complete = true;
  try {
    await Promise.all(turns.map((turn) => turn.ready));
    if (w.retired || Date.now() >= journal.lease_until) {
      retire(w);
      complete = false;
    } else {
      await Promise.all(
        [...deltas].map(async ([key, delta]) => {
          const doc = await applyDelta(db, storeId, key, delta, w.id, seq);
          if (doc) totals.set(key, doc);
        }),
      );
    }
  } catch {
    retire(w);
    complete = false;
  } finally {
    releaseAll();
  }
  // Not awaited: the totals are in. A journal that stays (its delete failed or has not run yet) is
  // recognised as applied by recovery.
  if (complete) journalWritesOf(db).delete(journal._id);
  return { inserted, totals, complete };
}

/** writeBatchPrepared for contributions known up front, each rollup key its own queue key. */
export function writeBatch(
  db: Db,
  storeId: string,
  contributions: RollupContribution[],
  insert: (batchId: string) => Promise<Set<string>>,
  now = Date.now(),
): Promise<BatchWrite> {
  return writeBatchPrepared(
    db,
    storeId,
    { locks: contributions.flatMap((c) => c.keys), events: contributions.map((c) => c.id) },
    async () => ({ contributions, insert }),
    now,
  );
}

/** Reads the events of a journal that its batch inserted (the loader checks their `batch`). */
export type JournalEventLoader = (journal: JournalDoc) => Promise<RollupContribution[]>;

const recovering = new Map<Db, Promise<number>>();

/**
 * Replays journals whose lease ended at least RECOVERY_MARGIN_MS ago, per writer in sequence order.
 * Runs in the process that ingests (it shares the per-key queue); one run at a time per process, and
 * each journal replayed by one process at a time (claimJournal).
 */
export function recoverJournals(db: Db, load: JournalEventLoader, now = Date.now()): Promise<number> {
  const running = recovering.get(db);
  if (running) return running;
  const run = (async () => {
    try {
      const all = await journalsCollection(db).find({}).toArray();
      const due = all.filter((j) => j.lease_until + RECOVERY_MARGIN_MS <= now);
      const byWriter = new Map<string, JournalDoc[]>();
      for (const j of due) byWriter.set(j.writer, [...(byWriter.get(j.writer) ?? []), j]);
      let replayed = 0;
      await Promise.all(
        [...byWriter.values()].map(async (journals) => {
          journals.sort((a, b) => a.seq - b.seq);
          for (const journal of journals) {
            const outcome = await replayClaimedJournal(db, journal, load, now);
            // Another process holds this one: the later batches of its writer must wait for it, or
            // their seq.<writer> would mark it as applied.
            if (outcome === 'held') break;
            if (outcome === 'replayed') replayed++;
          }
        }),
      );
      return replayed;
    } finally {
      recovering.delete(db);
    }
  })();
  recovering.set(db, run);
  return run;
}

interface JournalClaim {
  /** This claim's `_id` and those of the expired claims it took over (deleted with the journal). */
  ids: string[];
  /** Real-clock milliseconds after which this process stops applying. */
  applyBefore: number;
}

/**
 * Claims a journal for this process's replay, or null when another process holds it. A claim is an
 * insert of a unique `_id`, so two processes can never both get one (FerretDB's updates are not atomic).
 */
async function claimJournal(db: Db, journalId: string, now: number): Promise<JournalClaim | null> {
  const claims = journalClaimsCollection(db);
  const applyBefore = Date.now() + RECOVERY_CLAIM_MS / 2;
  const ids: string[] = [];
  for (let generation = 0; ; generation++) {
    const id = `${journalId}#${generation}`;
    ids.push(id);
    const held = await claims.findOne({ _id: id });
    if (held) {
      if (held.until > now) return null;
      continue;
    }
    try {
      await claims.insertOne({ _id: id, journal: journalId, until: now + RECOVERY_CLAIM_MS, created: now });
      return { ids, applyBefore };
    } catch (error) {
      if (isDuplicateKey(error)) return null;
      throw error;
    }
  }
}

async function replayClaimedJournal(db: Db, journal: JournalDoc, load: JournalEventLoader, now: number): Promise<'replayed' | 'held' | 'gone'> {
  const claim = await claimJournal(db, journal._id, now);
  if (!claim) return 'held';
  const releaseClaims = () => journalClaimsCollection(db).deleteMany({ _id: { $in: claim.ids } });
  try {
    // Read again under the claim: another process may have replayed and deleted it since it was listed.
    if (!(await journalsCollection(db).findOne({ _id: journal._id }))) {
      await releaseClaims();
      return 'gone';
    }
    await replayJournal(db, journal, load, claim.applyBefore);
  } catch (error) {
    // Released at once, so the next sweep retries without waiting for the claim to run out.
    await journalClaimsCollection(db)
      .deleteOne({ _id: claim.ids[claim.ids.length - 1] })
      .catch(() => undefined);
    throw error;
  }
  await releaseClaims();
  return 'replayed';
}

async function replayJournal(db: Db, journal: JournalDoc, load: JournalEventLoader, applyBefore: number): Promise<void> {
  const deltas = deltasOf(await load(journal));
  // The same queue places the live writers take, so a key never sees two updates at once here.
  const turns = journal.locks.map((lock) => keyQueue.reserve(lock));
  try {
    await Promise.all(turns.map((turn) => turn.ready));
    await Promise.all(
      [...deltas].map(async ([key, delta]) => {
        // Read by `_id` first: a key that has the batch is skipped without the filtered update, which
        // FerretDB answers with a collection scan.
        const current = await rollupsCollection(db).findOne({ _id: key });
        if ((current?.seq?.[journal.writer] ?? 0) >= journal.seq) return;
        if (Date.now() >= applyBefore) throw new Error(`usage journal ${journal._id}: recovery claim ran out before ${key} was applied`);
        await applyDelta(db, journal.store_id, key, delta, journal.writer, journal.seq, true);
      }),
    );
  } finally {
    turns.forEach((turn) => turn.done());
  }
  await journalsCollection(db).deleteOne({ _id: journal._id });
}

/** Journals still open (in flight or waiting for recovery) holding the queue key `lock`. */
export async function openJournalsFor(db: Db, lock: string): Promise<JournalDoc[]> {
  const all = await journalsCollection(db).find({}).toArray();
  return all.filter((j) => j.locks.includes(lock));
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

/** For tests: the id of the writer batches are currently written under. */
export function currentWriterId(): string {
  return writer.id;
}
