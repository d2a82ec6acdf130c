// Superseded by the long-lived eventSweeperWorkflow (workflows/routines.ts): one sweep per run, as
// the old `event-sweeper/<task queue>` schedule started it every 10 s. Kept one release so runs the
// schedule started before an upgrade (which deletes it) finish on the new worker.
import { defineQuery, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { WORKER_GONE_AFTER } from './lib/timeouts';

const { sweepUndispatchedEvents } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { maximumAttempts: 3 },
});

export interface EventSweepInput {
  /** Only events written at least this long ago: younger ones are still being dispatched by their writer. */
  olderThanMs: number;
  limit: number;
}

export interface EventSweepState {
  status: 'sweeping' | 'done';
  dispatched: number | null;
}

export const eventSweepStateQuery = defineQuery<EventSweepState>('state');

export async function eventSweepWorkflow(input: EventSweepInput): Promise<{ dispatched: number }> {
  let state: EventSweepState = { status: 'sweeping', dispatched: null };
  setHandler(eventSweepStateQuery, () => state);
  const dispatched = await sweepUndispatchedEvents(input);
  state = { status: 'done', dispatched };
  return { dispatched };
}
