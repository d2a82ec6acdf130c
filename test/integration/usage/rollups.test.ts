// What this tests: rollups and ingestion journals with several processes at once (each its own
// MongoClient): concurrent batches on one key add up exactly; a batch whose process died after
// inserting its events, or midway through its rollups, is counted exactly once however many
// recoveries run at once; a journal left behind after its totals were applied adds nothing; a failed
// batch holds up no other; concurrent ingestions of overlapping batches with repeated identifiers
// count each distinct event once; concurrent additions to a customer's subscriptions all land.
import { MongoClient, type Db } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, onTestFinished, test, vi } from 'vitest';
import {
  journalsCollection,
  readRollups,
  recoverJournals,
  rollupsCollection,
  RECOVERY_MARGIN_MS,
  JOURNAL_LEASE_MS,
  writeBatch,
  type JournalDoc,
  type RollupContribution,
} from '../../../store/usage-rollups';
import { createMeter } from '../../../store/meters';
import { addCustomerSubscription, customerKey, customerSubscriptions, meterEventsCollection } from '../../../store/usage';
import { ingestMeterEvents } from '../../../services/usage/ingestion';
import { putUsageItem } from '../../../services/usage/items';
import { DAY, dayRollupKey, periodRollupKey, windowStart } from '../../../domain/usage-periods';
import { createTestStore } from '../../support/api';
import { lazyTestClient, testMongo, uniqueTaskQueue, waitFor, type TestMongo } from '../../support/env';
import { seedCustomer, seedUsageOffer, seedUsageSubscription } from '../../support/usage';

let mongo: TestMongo;
const clients: MongoClient[] = [];

beforeAll(async () => {
  mongo = await testMongo();
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await mongo?.close();
});

/** The test database as another API process reaches it: through a client of its own. */
async function processDbs(count: number): Promise<Db[]> {
  const opened = await Promise.all(Array.from({ length: count }, () => MongoClient.connect(inject('mongoUri'))));
  clients.push(...opened);
  return opened.map((c) => c.db(mongo.db.databaseName));
}

let n = 0;
const contribution = (key: string, value: number, timestamp = 1000): RollupContribution => ({ id: `ev_${++n}`, keys: [key], value, timestamp });

/** Events "inserted" by a batch, kept in memory with the batch that inserted them. */
const inserted = new Map<string, { batch: string; c: RollupContribution }>();
const insertAll = (contributions: RollupContribution[]) => async (journalId: string) => {
  for (const c of contributions) if (!inserted.has(c.id)) inserted.set(c.id, { batch: journalId, c });
  return new Set(contributions.map((c) => c.id));
};
const loader = async (journal: JournalDoc) =>
  journal.events
    .map((id) => inserted.get(id))
    .filter((e) => e?.batch === journal._id)
    .map((e) => e!.c);

const write = (db: Db, contributions: RollupContribution[], insert = insertAll(contributions)) =>
  writeBatch(db, 's', { customers: [], contributions, insert });

/** A batch whose process dies right after inserting its events: its journal is left behind. */
async function dieAfterInsert(db: Db, contributions: RollupContribution[]): Promise<void> {
  const dying = async (journalId: string) => {
    await insertAll(contributions)(journalId);
    throw new Error('process died');
  };
  await expect(write(db, contributions, dying)).rejects.toThrow('process died');
}

/** A time at which every journal written so far is past its lease and margin. */
const afterLeases = () => Date.now() + JOURNAL_LEASE_MS + RECOVERY_MARGIN_MS + 1000;
const totalsOf = async (keys: string[]) => {
  const docs = await readRollups(mongo.db, keys);
  return keys.map((key) => [docs.get(key)?.sum ?? 0, docs.get(key)?.count ?? 0]);
};
const openJournals = (keys: string[]) => journalsCollection(mongo.db).countDocuments({ keys: { $in: keys } });

describe('rollups', () => {
  test('40 concurrent batches on one key from 4 processes add up exactly (sum, count, latest value)', async () => {
    const key = 'test|concurrent';
    const dbs = await processDbs(4);
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const batch = [contribution(key, 1, 1000 + i), contribution(key, 2, 1000 + i)];
        return write(dbs[i % dbs.length], batch);
      }),
    );
    const doc = (await readRollups(mongo.db, [key])).get(key)!;
    expect(doc).toMatchObject({ sum: 120, count: 80, pending: [] });
    expect(doc.last?.startsWith('000000001039|')).toBe(true);
    // Journals are deleted after the totals are in (not awaited by the request).
    await waitFor(async () => (await openJournals([key])) === 0, { timeoutMs: 10_000, description: 'journals deleted' });
  });

  test('batches whose process died after inserting their events are counted exactly once after two concurrent recoveries from separate processes', async () => {
    const keys = ['test|died-a', 'test|died-b', 'test|died-c'];
    for (const [i, key] of keys.entries()) await dieAfterInsert(mongo.db, [contribution(key, 10 + i), contribution(key, 1)]);
    expect(await totalsOf(keys)).toEqual(keys.map(() => [0, 0]));
    expect(await recoverJournals(mongo.db, loader)).toBe(0); // leases not over yet: left to their writers
    // The other process: its own client and its own module instance.
    const [otherDb] = await processDbs(1);
    vi.resetModules();
    const other = await import('../../../store/usage-rollups');
    const at = afterLeases();
    // The other's clock is as late as if this one's claims had already run out: both may replay a journal.
    const claimOver = at + JOURNAL_LEASE_MS + RECOVERY_MARGIN_MS;
    await Promise.all([recoverJournals(mongo.db, loader, at), other.recoverJournals(otherDb, loader, claimOver)]);
    const counted = [
      [11, 2],
      [12, 2],
      [13, 2],
    ];
    expect(await totalsOf(keys)).toEqual(counted);
    expect(await openJournals(keys)).toBe(0);
    await recoverJournals(mongo.db, loader, afterLeases());
    expect(await totalsOf(keys)).toEqual(counted);
  });

  test('a batch applied to some of its keys only (a database error midway) gets the rest from recovery, never a key twice', async () => {
    const [good, broken] = ['test|midway-good', 'test|midway-broken'];
    // A document whose sum cannot be incremented: the batch's update of that key fails.
    await rollupsCollection(mongo.db).insertOne({
      _id: broken,
      store_id: 's',
      sum: 'unreadable' as unknown as number,
      count: 0,
      pending: [],
      created: 0,
    });
    const result = await write(mongo.db, [contribution(good, 5), contribution(broken, 7)]);
    expect(result.complete).toBe(false);
    expect(await totalsOf([good])).toEqual([[5, 1]]);
    await rollupsCollection(mongo.db).updateOne({ _id: broken }, { $set: { sum: 0 } });
    const [otherDb] = await processDbs(1);
    await Promise.all([recoverJournals(mongo.db, loader, afterLeases()), recoverJournals(otherDb, loader, afterLeases())]);
    expect(await totalsOf([good, broken])).toEqual([
      [5, 1],
      [7, 1],
    ]);
    expect(await openJournals([good, broken])).toBe(0);
  });

  test('a journal left behind after its totals were applied adds nothing when replayed', async () => {
    const key = 'test|applied';
    const batch = [contribution(key, 3)];
    let journalId = '';
    await write(mongo.db, batch, async (id) => {
      journalId = id;
      return insertAll(batch)(id);
    });
    await waitFor(async () => (await openJournals([key])) === 0, { timeoutMs: 10_000, description: 'journal deleted' });
    // As if the delete after applying had failed.
    const now = Date.now();
    await journalsCollection(mongo.db).insertOne({
      _id: journalId,
      store_id: 's',
      customers: [],
      keys: [key],
      events: [batch[0].id],
      lease_until: now - 1000,
      created: now - 2000,
    });
    const [otherDb] = await processDbs(1);
    await recoverJournals(otherDb, loader, afterLeases());
    expect(await totalsOf([key])).toEqual([[3, 1]]);
    expect(await openJournals([key])).toBe(0);
  });

  test('duplicates inside a batch (not new) add nothing', async () => {
    const key = 'test|dups';
    const batch = [contribution(key, 4), contribution(key, 4)];
    const result = await write(mongo.db, batch, async () => new Set([batch[0].id]));
    expect([...result.inserted]).toEqual([batch[0].id]);
    expect(await totalsOf([key])).toEqual([[4, 1]]);
  });

  test('a failed batch holds up no other batch on its key; recovery adds it later', async () => {
    const key = 'test|failed';
    await dieAfterInsert(mongo.db, [contribution(key, 100)]);
    const next = await write(mongo.db, [contribution(key, 1)]);
    expect(next.complete).toBe(true);
    expect(await totalsOf([key])).toEqual([[1, 1]]);
    await recoverJournals(mongo.db, loader, afterLeases());
    expect(await totalsOf([key])).toEqual([[101, 2]]);
  });
});

describe('ingestion from several processes', () => {
  test('10 concurrent ingestions of overlapping batches with repeated identifiers count each distinct event once', async () => {
    const { store } = await createTestStore(mongo.db);
    const offer = await seedUsageOffer(mongo.db, store._id);
    const meter = await createMeter(mongo.db, { storeId: store._id, displayName: 'Images', eventName: 'images.concurrent' });
    const lazy = lazyTestClient();
    onTestFinished(() => lazy.close());
    const deps = { db: mongo.db, temporal: lazy.client, taskQueue: uniqueTaskQueue('unpolled') };
    const { subscription, customer } = await seedUsageSubscription(
      { db: mongo.db, taskQueue: deps.taskQueue },
      { store, offer, now: Date.now() - 60 * 60_000 },
    );
    await putUsageItem(deps, store._id, subscription._id, { meter: meter._id, unit_amount: 1 });
    const timestamp = Math.floor(Date.now() / 1000) - 60;
    const event = (k: number) => ({ event_name: meter.event_name, identifier: `e${k}`, timestamp, payload: { customer_id: customer._id, value: k } });
    // Batch i holds identifiers 5i..5i+19 (overlapping its neighbours) and its first one twice.
    const batches = Array.from({ length: 10 }, (_, i) => [...Array.from({ length: 20 }, (_, j) => event(5 * i + j)), event(5 * i)]);
    const dbs = await processDbs(10);
    const results = (await Promise.all(batches.map((events, i) => ingestMeterEvents({ ...deps, db: dbs[i] }, store._id, events)))).flat();

    const distinct = 65; // identifiers e0..e64
    const valueSum = (distinct * (distinct - 1)) / 2;
    expect(results.filter((r) => r.status === 'accepted')).toHaveLength(distinct);
    expect(results.filter((r) => r.status === 'duplicate')).toHaveLength(results.length - distinct);
    const stored = await meterEventsCollection(mongo.db).find({ store_id: store._id, meter: meter._id }).toArray();
    expect(stored.map((e) => e.subscription)).toEqual(stored.map(() => subscription._id));
    const periodStarts = [...new Set(stored.map((e) => e.period_start!))];
    expect(periodStarts).toHaveLength(1);
    const keys = [periodRollupKey(subscription._id, periodStarts[0], meter._id), dayRollupKey(meter._id, customer._id, windowStart(timestamp, DAY))];
    expect(await totalsOf(keys)).toEqual([
      [valueSum, distinct],
      [valueSum, distinct],
    ]);
    const customerJournals = () => journalsCollection(mongo.db).countDocuments({ customers: customerKey(store._id, customer._id) });
    await waitFor(async () => (await customerJournals()) === 0, { timeoutMs: 10_000, description: 'journals deleted' });
  });

  test("subscriptions added to one customer's candidates at once from separate processes are all kept", async () => {
    const { store } = await createTestStore(mongo.db);
    const customer = await seedCustomer(mongo.db, store._id);
    const dbs = await processDbs(10);
    const ids = dbs.map((_, i) => `sub_concurrent_${i}`);
    await Promise.all(dbs.map((db, i) => addCustomerSubscription(db, store._id, customer._id, ids[i])));
    expect((await customerSubscriptions(mongo.db, store._id, customer._id)).sort()).toEqual([...ids].sort());
  });
});
