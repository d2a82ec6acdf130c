// Hourly quotas of buyer e-mails, shared by every worker: one counter per subject (a store, a recipient
// address) and clock hour in rate_counters, taken with an upserting `$inc` (deleted by its TTL index).
import type { Db } from 'mongodb';
import { collections } from './collections';
import { retryOnDuplicateKey } from './insert-once';

const HOUR_MS = 60 * 60_000;

/** Takes one of the subject's `limit` e-mails of this hour; false when the hour's are spent. */
export async function takeHourlyMailSlot(db: Db, subject: string, limit: number, now = Date.now()): Promise<boolean> {
  const hour = Math.floor(now / HOUR_MS);
  const take = () =>
    collections(db).rateCounters.findOneAndUpdate(
      { _id: `mail|${subject}|${hour}` },
      { $inc: { count: 1 }, $setOnInsert: { expires_at: new Date((hour + 1) * HOUR_MS) } },
      { upsert: true, returnDocument: 'after' },
    );
  return (await retryOnDuplicateKey(take))!.count <= limit;
}
