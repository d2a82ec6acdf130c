// The usage routine (one run every 10 minutes, workflows/routines/workflow.ts): starts the usage workflow of every new
// subscription whose offer has usage rows (its first run inherits them), keeping a cursor of ids, and
// sends the error reports of the hours that are over (services/usage/error-reports.ts).
import { idTimeMs } from '../../domain/ids';
import { offerIdsWithUsage } from '../../store/offers';
import { findRoutineCursor, saveRoutineCursor } from '../../store/routine-cursors';
import { subscriptionsAfter } from '../../store/subscriptions';
import { usageClient } from './client';
import { sendErrorReports } from './error-reports';
import type { UsageDeps } from './shared';

/** The routine's walk over subscriptions (its cursor's name). */
const SUBSCRIPTIONS_WALK = 'subscriptions';

/** Subscriptions younger than this are left to the next run (their insert may still be in flight). */
const ROUTINE_LAG_MS = 60_000;

export async function runUsageRoutine(
  deps: Pick<UsageDeps, 'db' | 'temporal' | 'taskQueue'>,
  nowMs: number,
): Promise<{ started: number; reported: number }> {
  const { db } = deps;
  const reported = await sendErrorReports(deps, nowMs);
  const usage = usageClient(deps.temporal, deps.taskQueue);
  const cursor = await findRoutineCursor(db, SUBSCRIPTIONS_WALK);
  const withUsage = await offerIdsWithUsage(db);
  const subs = await subscriptionsAfter(db, cursor);
  let started = 0;
  let last = cursor;
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
  if (last !== null && last !== cursor) await saveRoutineCursor(db, SUBSCRIPTIONS_WALK, last);
  return { started, reported };
}
