// What this tests: the in-process rate windows (API keys, addresses, page payments, offer links) keep
// at most their bound of subjects however many client addresses arrive, forget the least recently
// used first, and forgetting a subject never lets it past its limit (the count is the database's).
// The database is an in-memory stand-in for the one `findOneAndUpdate` the windows make.
import type { Db } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { MAX_WINDOW_SUBJECTS, SharedRateWindows } from '../../store/rate-counters';

/** Counter documents in a Map, updated as the `$inc` upsert would. */
function counterDb(): Db {
  const counts = new Map<string, number>();
  const collection = {
    async findOneAndUpdate(filter: { _id: string }, update: { $inc: { count: number } }) {
      const count = (counts.get(filter._id) ?? 0) + update.$inc.count;
      counts.set(filter._id, count);
      return { _id: filter._id, count };
    },
  };
  return { collection: () => collection } as unknown as Db;
}

const MINUTE = 60_000;
const now = 10 * MINUTE;

describe('rate windows in memory', () => {
  it('100,000 addresses in one window leave at most the bound in memory (default 10,000)', async () => {
    const windows = new SharedRateWindows(counterDb());
    for (let i = 0; i < 100_000; i++) await windows.hit(`ip:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, 10, MINUTE, now);
    expect(windows.size).toBeLessThanOrEqual(MAX_WINDOW_SUBJECTS);
    expect(windows.size).toBeGreaterThan(MAX_WINDOW_SUBJECTS / 2);
  });

  it('the least recently used subject is forgotten first; one in use is kept', async () => {
    const windows = new SharedRateWindows(counterDb(), 10);
    await windows.hit('ip:busy', 100, MINUTE, now);
    for (let i = 0; i < 30; i++) {
      await windows.hit(`ip:other-${i}`, 100, MINUTE, now);
      await windows.hit('ip:busy', 100, MINUTE, now);
    }
    expect(windows.size).toBeLessThanOrEqual(10);
    // 31 hits so far on the busy subject: were it forgotten, its count would restart from the database's batch.
    expect((await windows.hit('ip:busy', 100, MINUTE, now)).count).toBe(32);
  });

  it('a forgotten subject is still refused past its limit', async () => {
    const windows = new SharedRateWindows(counterDb(), 10);
    const allowed = async () => (await windows.hit('ip:attacker', 5, MINUTE, now)).allowed;
    const results: boolean[] = [];
    for (let round = 0; round < 4; round++) {
      results.push(await allowed(), await allowed());
      // Twenty other addresses push the attacker out of memory between rounds.
      for (let i = 0; i < 20; i++) await windows.hit(`ip:${round}-${i}`, 5, MINUTE, now);
    }
    expect(results).toEqual([true, true, true, true, true, false, false, false]);
  });

  it('ended windows are pruned before any live one is forgotten', async () => {
    const windows = new SharedRateWindows(counterDb(), 10);
    for (let i = 0; i < 9; i++) await windows.hit(`ip:old-${i}`, 5, MINUTE, now);
    await windows.hit('ip:live', 5, MINUTE, now + MINUTE);
    for (let i = 0; i < 2; i++) await windows.hit(`ip:new-${i}`, 5, MINUTE, now + MINUTE);
    expect(windows.size).toBe(3);
  });
});
