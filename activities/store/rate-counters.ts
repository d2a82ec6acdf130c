// Fixed-window request counters kept in MongoDB so every API process shares them:
// one atomic upsert-and-increment per request. Old windows are swept, since FerretDB has no TTL index.
import type { Db } from 'mongodb';
import { collections } from './collections';

export interface WindowHit {
  count: number;
  /** Unix seconds when the window ends. */
  resetAt: number;
}

export async function hitWindow(db: Db, subject: string, windowMs: number, now = Date.now()): Promise<WindowHit> {
  const windowIndex = Math.floor(now / windowMs);
  const windowEnd = (windowIndex + 1) * windowMs;
  const doc = await collections(db).rateCounters.findOneAndUpdate(
    { _id: `${subject}:${windowIndex}` },
    { $inc: { count: 1 }, $setOnInsert: { expires_at: windowEnd } },
    { upsert: true, returnDocument: 'after' },
  );
  return { count: doc?.count ?? 1, resetAt: Math.ceil(windowEnd / 1000) };
}

export async function sweepExpiredWindows(db: Db, now = Date.now()): Promise<number> {
  const result = await collections(db).rateCounters.deleteMany({ expires_at: { $lt: now } });
  return result.deletedCount;
}
