// Emitting an event once per fact, however often the activity emitting it is retried. Without a key
// (one execution emits the fact) a retry first looks for the event it may have written before dying;
// with a key (several executions may try, even at once) the first claim document fixes the fact's
// time, the event ids derive from key and time, and the unique _id lets only one writer's events in;
// the claim's `created` Date lets a TTL index drop it once no retry can come.
import { Context } from '@temporalio/activity';
import type { Database } from '../../store/database';
import { claimEmission, completeEmission, recentEventsOfType } from '../../store/event-emissions';
import { emitEvent, type EmitEventInput, type EventDeps } from './events';
import { CURRENT_EVENT_CATALOG } from '../../store/events';

/** The running activity's attempt and first scheduling time; attempt 1 outside an activity. */
function currentAttempt(): { attempt: number; scheduledMs: number } {
  try {
    const { attempt, scheduledTimestampMs } = Context.current().info;
    return { attempt, scheduledMs: scheduledTimestampMs };
  } catch {
    return { attempt: 1, scheduledMs: Date.now() };
  }
}

/** Unix seconds one second before `at`, to be safe with the events' second rounding. */
const secondsBefore = (at: Date) => Math.floor(at.getTime() / 1000) - 1;

/** The id of an event of this type about this object written since `sinceSeconds`, if any. */
async function findEmitted(db: Database, input: EmitEventInput, sinceSeconds: number): Promise<string | null> {
  const objectId = input.object.id;
  const candidates = await recentEventsOfType(db, input.storeId, input.type, sinceSeconds);
  for (const event of candidates) {
    if (event.api_version !== CURRENT_EVENT_CATALOG) continue;
    try {
      if ((JSON.parse(event.data_json) as { object?: { id?: unknown } }).object?.id === objectId) return event._id;
    } catch {
      // Not ours.
    }
  }
  return null;
}

async function emitKeyed(deps: EventDeps, key: string, input: EmitEventInput): Promise<void> {
  const id = `${input.storeId}:${key}`;
  const claim = await claimEmission(deps.db, id, input.storeId);
  if (!claim || claim.state === 'done') return;
  const event = await emitEvent(deps, { ...input, fact: { key: id, ms: claim.created.getTime() } });
  await completeEmission(deps.db, id, event._id);
}

export async function emitEventOnce(deps: EventDeps, input: EmitEventInput): Promise<void>;
export async function emitEventOnce(deps: EventDeps, key: string, input: EmitEventInput): Promise<void>;
export async function emitEventOnce(deps: EventDeps, keyOrInput: string | EmitEventInput, keyed?: EmitEventInput): Promise<void> {
  if (typeof keyOrInput === 'string') return emitKeyed(deps, keyOrInput, keyed!);
  const input = keyOrInput;
  const { attempt, scheduledMs } = currentAttempt();
  if (attempt > 1 && (await findEmitted(deps.db, input, secondsBefore(new Date(scheduledMs))))) return;
  await emitEvent(deps, input);
}
