// What this tests: rollups and ingestion journals against FerretDB — concurrent batches on one key
// add up exactly (FerretDB's updates are unlocked read-modify-writes, so this process serializes
// them), a batch whose process "died" after inserting its events is counted once by recovery, a
// journal left behind after its totals were applied is not applied again, a writer that failed
// leaves the batches queued behind it to recovery, in order, and two processes recovering the same
// leftover journals at once count each batch once, and a journal claimed by another process holds
// back the later batches of its writer.
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import {
  journalClaimsCollection,
  journalsCollection,
  readRollups,
  recoverJournals,
  RECOVERY_MARGIN_MS,
  JOURNAL_LEASE_MS,
  writeBatch,
  type JournalDoc,
  type RollupContribution,
} from '../../activities/store/usage-rollups';
import { testMongo, waitFor, type TestMongo } from '../support/env';

let mongo: TestMongo;

beforeAll(async () => {
  mongo = await testMongo();
});

afterAll(async () => {
  await mongo?.close();
});

let n = 0;
const contribution = (key: string, value: number, timestamp = 1000): RollupContribution => ({ id: `ev_${++n}`, keys: [key], value, timestamp });

/** Events "inserted" by a batch, kept in memory with the batch that inserted them. */
const inserted = new Map<string, { batch: string; c: RollupContribution }>();
const insertAll = (contributions: RollupContribution[]) => async (batchId: string) => {
  for (const c of contributions) if (!inserted.has(c.id)) inserted.set(c.id, { batch: batchId, c });
  return new Set(contributions.map((c) => c.id));
};
const loader = async (journal: JournalDoc) =>
  journal.events.map((id) => inserted.get(id)).filter((e) => e?.batch === journal._id).map((e) => e!.c);

/** Recovery as it would run well after every lease ended. */
const recoverLater = () => recoverJournals(mongo.db, loader, Date.now() + JOURNAL_LEASE_MS + RECOVERY_MARGIN_MS + 1000);

/**
 * A batch of 100 on `key` that fails after writing its journal, with a batch of 1 queued behind it on
 * the same key (held until both are in flight). Returns once the first has failed; `second` is the
 * queued write, still to be awaited.
 */
async function failWithOneQueued(key: string) {
  const failing = [contribution(key, 100)];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const first = writeBatch(mongo.db, 's', failing, async (batchId) => {
    await insertAll(failing)(batchId);
    await gate;
    throw new Error('database went away');
  });
  const queued = [contribution(key, 1)];
  const second = writeBatch(mongo.db, 's', queued, insertAll(queued));
  release();
  await expect(first).rejects.toThrow('database went away');
  return { failing, second };
}

describe('rollups', () => {
  test('40 concurrent batches on one key add up exactly (sum, count, latest value)', async () => {
    const key = 'test|concurrent';
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const batch = [contribution(key, 1, 1000 + i), contribution(key, 2, 1000 + i)];
        return writeBatch(mongo.db, 's', batch, insertAll(batch));
      }),
    );
    const doc = (await readRollups(mongo.db, [key])).get(key)!;
    expect(doc).toMatchObject({ sum: 120, count: 80 });
    expect(doc.last?.startsWith('000000001039|')).toBe(true);
    // Journals are deleted after the totals are in (not awaited by the request).
    await waitFor(async () => (await journalsCollection(mongo.db).countDocuments({ locks: key })) === 0, { timeoutMs: 10_000, description: 'journals deleted' });
  });

  test('a batch whose events went in but whose process died is counted once by recovery, and only once', async () => {
    const key = 'test|crashed';
    const batch = [contribution(key, 5), contribution(key, 7)];
    await expect(
      writeBatch(mongo.db, 's', batch, async (batchId) => {
        await insertAll(batch)(batchId);
        throw new Error('process died');
      }),
    ).rejects.toThrow('process died');
    expect((await readRollups(mongo.db, [key])).get(key)).toBeUndefined();
    expect(await recoverJournals(mongo.db, loader)).toBe(0); // lease not over yet: left to its writer
    expect(await recoverLater()).toBeGreaterThanOrEqual(1);
    expect((await readRollups(mongo.db, [key])).get(key)).toMatchObject({ sum: 12, count: 2 });
    await recoverLater();
    expect((await readRollups(mongo.db, [key])).get(key)).toMatchObject({ sum: 12, count: 2 });
    expect(await journalsCollection(mongo.db).countDocuments({ locks: key })).toBe(0);
  });

  test('a journal left behind after its totals were applied is recognised and not applied again', async () => {
    const key = 'test|applied';
    const batch = [contribution(key, 3)];
    await writeBatch(mongo.db, 's', batch, insertAll(batch));
    const journal = (await readRollups(mongo.db, [key])).get(key)!;
    const [writer, seq] = Object.entries(journal.seq)[0];
    const batchId = inserted.get(batch[0].id)!.batch;
    // The delete after applying is not awaited by writeBatch; wait for it before putting the journal back.
    await waitFor(async () => (await journalsCollection(mongo.db).countDocuments({ _id: batchId })) === 0, { timeoutMs: 10_000, description: 'journal deleted' });
    // As if the delete after applying had failed.
    await journalsCollection(mongo.db).insertOne({
      _id: batchId,
      store_id: 's',
      writer,
      seq,
      locks: [key],
      events: [batch[0].id],
      lease_until: Date.now() - 1000,
      created: Date.now() - 2000,
    });
    await recoverLater();
    expect((await readRollups(mongo.db, [key])).get(key)).toMatchObject({ sum: 3, count: 1 });
  });

  test('duplicates inside a batch (not new) add nothing', async () => {
    const key = 'test|dups';
    const batch = [contribution(key, 4), contribution(key, 4)];
    const result = await writeBatch(mongo.db, 's', batch, async () => new Set([batch[0].id]));
    expect([...result.inserted]).toEqual([batch[0].id]);
    expect((await readRollups(mongo.db, [key])).get(key)).toMatchObject({ sum: 4, count: 1 });
  });

  test('after a failed batch, the batches queued behind it on the same key are left to recovery and counted in order', async () => {
    const key = 'test|retired';
    const { second } = await failWithOneQueued(key);
    const secondResult = await second;
    expect(secondResult.complete).toBe(false);
    expect((await readRollups(mongo.db, [key])).get(key)).toBeUndefined();
    await recoverLater();
    expect((await readRollups(mongo.db, [key])).get(key)).toMatchObject({ sum: 101, count: 2 });
  });

  test('two processes recovering the same leftover journals at once count each batch once', async () => {
    const keys = ['test|twice-a', 'test|twice-b', 'test|twice-c'];
    // Each failed batch retires its writer: three journals of three writers, recovered in parallel.
    for (const [i, key] of keys.entries()) {
      const batch = [contribution(key, 10 + i), contribution(key, 1)];
      await expect(
        writeBatch(mongo.db, 's', batch, async (batchId) => {
          await insertAll(batch)(batchId);
          throw new Error('process died');
        }),
      ).rejects.toThrow('process died');
    }
    // The other process: a fresh module instance, so its own per-key queue and recovery dedupe.
    vi.resetModules();
    const otherProcess = await import('../../activities/store/usage-rollups');
    const later = Date.now() + JOURNAL_LEASE_MS + RECOVERY_MARGIN_MS + 1000;
    await Promise.all([recoverJournals(mongo.db, loader, later), otherProcess.recoverJournals(mongo.db, loader, later)]);
    const totals = await readRollups(mongo.db, keys);
    expect(keys.map((key) => [totals.get(key)?.sum, totals.get(key)?.count])).toEqual([
      [11, 2],
      [12, 2],
      [13, 2],
    ]);
    expect(await journalsCollection(mongo.db).countDocuments({ locks: { $in: keys } })).toBe(0);
  });

  test("a journal another process is replaying holds back its writer's later journals until it is done", async () => {
    const key = 'test|held';
    const { failing, second } = await failWithOneQueued(key);
    await second;
    const firstJournal = inserted.get(failing[0].id)!.batch;
    const later = Date.now() + JOURNAL_LEASE_MS + RECOVERY_MARGIN_MS + 1000;
    await journalClaimsCollection(mongo.db).insertOne({ _id: `${firstJournal}#0`, journal: firstJournal, until: later + 60_000, created: later });
    await recoverJournals(mongo.db, loader, later);
    expect((await readRollups(mongo.db, [key])).get(key)).toBeUndefined();
    expect(await journalsCollection(mongo.db).countDocuments({ locks: key })).toBe(2);
    // The other process's claim runs out (it died): the next recovery takes over, in order.
    await recoverJournals(mongo.db, loader, later + 120_000);
    expect((await readRollups(mongo.db, [key])).get(key)).toMatchObject({ sum: 101, count: 2 });
    expect(await journalsCollection(mongo.db).countDocuments({ locks: key })).toBe(0);
  });
});
