// The worker's two routines, each one long-lived workflow per task queue (services/operations/routines.ts starts
// them): `event-sweeper/<task queue>` re-drives events whose deliveries were never started (the
// process that wrote them died before dispatching); `usage-routine/<task queue>` starts usage for new
// subscriptions of offers with metered rows. Both answer the `state` query and a `run_now` signal.
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { runRoutine } from '../lib/routine';
import type { EventSweeperInput, RoutineInput } from './messages';
import { WORKER_GONE_AFTER } from '../lib/timeouts';

// A sweep reads at most `limit` events and dispatches each idempotently; a failed one waits for the next turn.
const sweeps = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { maximumAttempts: 3 },
});

// Versioning AUTO_UPGRADE (workflows/versioned.ts): the routines never end: they move to the current build (and continue as new on it).
export async function eventSweeperWorkflow(input: EventSweeperInput): Promise<never> {
  const { olderThanMs, limit } = input;
  return runRoutine(input, 'events re-driven', () =>
    sweeps.sweepUndispatchedEvents.executeWithOptions({ summary: 'sweep undispatched events' }, [{ olderThanMs, limit }]),
  );
}

// Versioning AUTO_UPGRADE (workflows/versioned.ts): as the sweeper, a routine that never ends.
export async function usageRoutineLoopWorkflow(input: RoutineInput): Promise<never> {
  return runRoutine(input, 'usage workflows started', async () => {
    const { started } = await sweeps.runUsageRoutine.executeWithOptions({ summary: 'start usage for new subscriptions' }, [{}]);
    return started;
  });
}
