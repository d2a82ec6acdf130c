// The usage routine (one run every 10 minutes, workflows/routines.ts): starts the usage workflow of every new
// subscription whose offer has usage rows (its first run inherits them), keeping a cursor of ids, and
// sends the error reports of the hours that are over (services/usage-error-reports.ts).
import type { Database } from '../store/database';
import { idTimeMs } from '../domain/ids';
import { collections } from '../store/collections';
import { subscriptionsCollection } from '../store/subscriptions';
import { usageClient } from './usage-client';
import { sendErrorReports } from './usage-error-reports';
import type { UsageDeps } from './usage-shared';

const routineCursors = (db: Database) => db.collection<{ _id: string; last: string }>('usage_routine');

/** Subscriptions younger than this are left to the next run (their insert may still be in flight). */
const ROUTINE_LAG_MS = 60_000;

async function offersWithUsage(db: Database): Promise<Set<string>> {
  const offers = await collections(db).offers.find({}, { projection: { _id: 1, usage: 1 } }).toArray();
  return new Set(offers.filter((o) => (o.usage ?? []).length > 0).map((o) => o._id));
}

export async function runUsageRoutine(deps: Pick<UsageDeps, 'db' | 'temporal' | 'taskQueue'>, nowMs: number): Promise<{ started: number; reported: number }> {
  const { db } = deps;
  const reported = await sendErrorReports(deps, nowMs);
  const usage = usageClient(deps.temporal, deps.taskQueue);
  const cursor = await routineCursors(db).findOne({ _id: 'subscriptions' });
  const withUsage = await offersWithUsage(db);
  const subs = await subscriptionsCollection(db)
    .find(cursor ? { _id: { $gt: cursor.last } } : {})
    .sort({ _id: 1 })
    .toArray();
  let started = 0;
  let last = cursor?.last ?? null;
  for (const sub of subs) {
    // On a test clock `created` is the clock's time: the id's is the real one the cursor follows.
    const createdMs = sub.test_clock ? idTimeMs(sub._id) : sub.created * 1000;
    if (createdMs > nowMs - ROUTINE_LAG_MS) break;
    if (sub.offer && withUsage.has(sub.offer.id)) {
      await usage.signalRecompute(sub);
      started++;
    }
    last = sub._id;
  }
  if (last !== null && last !== cursor?.last) {
    await routineCursors(db).updateOne({ _id: 'subscriptions' }, { $set: { last } }, { upsert: true });
  }
  return { started, reported };
}
