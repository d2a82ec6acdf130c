// The request log: which key made each call (method, path, status, request id, time), kept 30 days.
// The API buffers entries and writes them in batches; expired entries are swept (FerretDB has no TTL).
import type { Db } from 'mongodb';
import { collections, registerIndexes, type RequestLogDoc } from './collections';

export const REQUEST_LOG_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

registerIndexes((db) => collections(db).requestLogs.createIndex({ created: 1 }));

export async function writeRequestLogs(db: Db, entries: RequestLogDoc[]): Promise<void> {
  if (entries.length === 0) return;
  try {
    await collections(db).requestLogs.insertMany(entries, { ordered: false });
  } catch (error) {
    // A batch retried after a partial write only repeats ids that are already stored.
    if ((error as { code?: number }).code !== 11000) throw error;
  }
}

/** Deletes entries older than the retention; returns how many went. */
export async function sweepRequestLogs(db: Db, now = Date.now()): Promise<number> {
  const cutoff = Math.floor((now - REQUEST_LOG_RETENTION_MS) / 1000);
  const result = await collections(db).requestLogs.deleteMany({ created: { $lt: cutoff } });
  return result.deletedCount;
}
