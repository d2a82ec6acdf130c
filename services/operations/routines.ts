// Starts the worker's routines (workflows/routines/workflow.ts) on a task queue, once: a running one is left as
// it is. Replaces the schedules that started a workflow per run (8,640 rows a day for the sweeper),
// which an upgrade deletes here. Each routine's Web UI row says what it does.
import { ScheduleNotFoundError, WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import {
  EVENT_SWEEPER_WORKFLOW,
  routineStateQuery,
  runNowSignal,
  USAGE_ROUTINE_WORKFLOW,
  type EventSweeperInput,
  type RoutineInput,
  type RoutineState,
} from '../../workflows/routines/messages';

export const eventSweeperWorkflowId = (taskQueue: string) => `event-sweeper/${taskQueue}`;
export const usageRoutineWorkflowId = (taskQueue: string) => `usage-routine/${taskQueue}`;

export interface RoutineOptions {
  /** How often the sweeper runs (10 s). */
  sweepEveryMs?: number;
  /** Events younger than this are left to the process that wrote them (5 s). */
  sweepOlderThanMs?: number;
  sweepLimit?: number;
  /** How often the usage routine runs (10 minutes). */
  usageEveryMs?: number;
}

export async function ensureRoutines(client: Client, taskQueue: string, options: RoutineOptions = {}): Promise<void> {
  await Promise.all([ensureEventSweeper(client, taskQueue, options), ensureUsageRoutine(client, taskQueue, options)]);
  await deleteOldSchedules(client, taskQueue);
}

export async function ensureEventSweeper(client: Client, taskQueue: string, options: RoutineOptions = {}): Promise<void> {
  const { sweepEveryMs = 10_000, sweepOlderThanMs = 5_000, sweepLimit = 500 } = options;
  await startOnce(() =>
    client.workflow.start(EVENT_SWEEPER_WORKFLOW, {
      workflowId: eventSweeperWorkflowId(taskQueue),
      taskQueue,
      args: [{ everyMs: sweepEveryMs, olderThanMs: sweepOlderThanMs, limit: sweepLimit } satisfies EventSweeperInput],
      staticSummary: `Event sweeper: re-drives events whose deliveries never started, every ${sweepEveryMs / 1000} s`,
      staticDetails: `Events older than ${sweepOlderThanMs / 1000} s without deliveries, at most ${sweepLimit} a run. Query \`state\`; signal \`run_now\`.`,
    }),
  );
}

export async function ensureUsageRoutine(client: Client, taskQueue: string, options: RoutineOptions = {}): Promise<void> {
  const { usageEveryMs = 10 * 60_000 } = options;
  await startOnce(() =>
    client.workflow.start(USAGE_ROUTINE_WORKFLOW, {
      workflowId: usageRoutineWorkflowId(taskQueue),
      taskQueue,
      args: [{ everyMs: usageEveryMs } satisfies RoutineInput],
      staticSummary: `Usage routine: starts usage for new subscriptions of metered offers, every ${usageEveryMs / 60_000} min`,
      staticDetails: 'Query `state`; signal `run_now`.',
    }),
  );
}

/** The routine's counts (runs, last run, found), through its `state` query. */
export function routineState(client: Client, workflowId: string): Promise<RoutineState> {
  return client.workflow.getHandle(workflowId).query(routineStateQuery);
}

export async function runRoutineNow(client: Client, workflowId: string): Promise<void> {
  await client.workflow.getHandle(workflowId).signal(runNowSignal);
}

async function startOnce(start: () => Promise<unknown>): Promise<void> {
  try {
    await start();
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/** The schedules of earlier releases (same ids as the workflows, in the schedules' own id space). */
async function deleteOldSchedules(client: Client, taskQueue: string): Promise<void> {
  for (const scheduleId of [eventSweeperWorkflowId(taskQueue), usageRoutineWorkflowId(taskQueue)]) {
    await client.schedule
      .getHandle(scheduleId)
      .delete()
      .catch((error: unknown) => {
        if (!(error instanceof ScheduleNotFoundError)) throw error;
      });
  }
}
