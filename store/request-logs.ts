// The request log: which key made each call (method, path, status, request id, time), kept 30 days.
// The API buffers entries and writes them in batches; each carries `expires_at` (a Date) for the TTL
// index, and expired entries are also swept as a fallback where the TTL index is unavailable.
import type { Db } from 'mongodb';
import { collections, type RequestLogDoc } from './collections';
import { insertManyOnce } from './insert-once';

export const REQUEST_LOG_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export async function writeRequestLogs(db: Db, entries: RequestLogDoc[]): Promise<void> {
  if (entries.length === 0) return;
  const expiring = entries.map((entry) => ({ ...entry, expires_at: new Date(entry.created * 1000 + REQUEST_LOG_RETENTION_MS) }));
  // A batch retried after a partial write only repeats ids that are already stored.
  await insertManyOnce(collections(db).requestLogs, expiring);
}

/** Deletes entries past their retention; returns how many went. */
export async function sweepRequestLogs(db: Db, now = Date.now()): Promise<number> {
  const result = await collections(db).requestLogs.deleteMany({ expires_at: { $lte: new Date(now) } });
  return result.deletedCount;
}

/** A store's log, newest first, of one key when given (the admin CLI). */
export function listRequestLogs(db: Db, storeId: string, apiKey: string | undefined, limit: number): Promise<RequestLogDoc[]> {
  const filter: Record<string, unknown> = { store_id: storeId };
  if (apiKey) filter.api_key = apiKey;
  return collections(db).requestLogs.find(filter).sort({ created: -1, _id: -1 }).limit(limit).toArray();
}
