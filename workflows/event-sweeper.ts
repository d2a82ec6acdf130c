// The event sweeper: one run re-drives events whose deliveries were never created (the process that
// wrote them died before dispatching). A Temporal schedule, `event-sweeper/<task queue>`, starts it
// every few seconds (services/event-sweeper-schedule.ts); dispatching is idempotent.
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
