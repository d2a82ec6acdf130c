// Card-testing counters shared by every API process: declined cards per subject (an offer, a store) in
// fixed windows, and the turns a subject past its bound hands out one per interval. Both are
// documents of rate_counters (upserting `$inc`s, deleted by its TTL index at the window's end).
import type { Db } from 'mongodb';
import { collections } from './collections';
import { retryOnDuplicateKey } from './insert-once';

/** Adds `n` to the counter `id` (created on first use); the count after the addition. */
async function addTo(db: Db, id: string, n: number, expiresAt: Date): Promise<number> {
  const add = () =>
    collections(db).rateCounters.findOneAndUpdate(
      { _id: id },
      { $inc: { count: n }, $setOnInsert: { expires_at: expiresAt } },
      { upsert: true, returnDocument: 'after' },
    );
  return (await retryOnDuplicateKey(add))!.count;
}

const windowOf = (windowMs: number, now: number) => Math.floor(now / windowMs);

/** One declined card for each subject in the current window. */
export async function recordCardDecline(db: Db, subjects: string[], windowMs: number, now = Date.now()): Promise<void> {
  const index = windowOf(windowMs, now);
  const end = new Date((index + 1) * windowMs);
  await Promise.all(subjects.map((subject) => addTo(db, `declines|${subject}|${index}`, 1, end)));
}

/** Declined cards of the subject in the current window. */
export async function cardDeclinesInWindow(db: Db, subject: string, windowMs: number, now = Date.now()): Promise<number> {
  const doc = await collections(db).rateCounters.findOne({ _id: `declines|${subject}|${windowOf(windowMs, now)}` });
  return doc?.count ?? 0;
}

/** The subject's one turn in the current interval: granted to the first asker only; `nextAt` (ms) is when the next turn opens. */
export async function claimCardTurn(db: Db, subject: string, intervalMs: number, now = Date.now()): Promise<{ granted: boolean; nextAt: number }> {
  const index = windowOf(intervalMs, now);
  const nextAt = (index + 1) * intervalMs;
  const count = await addTo(db, `card-turn|${subject}|${index}`, 1, new Date(nextAt));
  return { granted: count === 1, nextAt };
}
