// The schedule that runs the event sweeper (workflows/event-sweeper.ts) every few seconds on a task
// queue; the worker process ensures it at start (an existing schedule is left as it is).
import type { Client } from '@temporalio/client';
import { ensureIntervalSchedule } from './schedules';
import type { eventSweepWorkflow } from '../workflows/event-sweeper';

export function eventSweeperScheduleId(taskQueue: string): string {
  return `event-sweeper/${taskQueue}`;
}

export interface SweeperScheduleOptions {
  /** How often the sweeper runs. */
  everyMs?: number;
  /** Events younger than this are left to the process that wrote them. */
  olderThanMs?: number;
  limit?: number;
}

export async function ensureEventSweeperSchedule(client: Client, taskQueue: string, options: SweeperScheduleOptions = {}): Promise<string> {
  const { everyMs = 10_000, olderThanMs = 5_000, limit = 500 } = options;
  return ensureIntervalSchedule(client, {
    scheduleId: eventSweeperScheduleId(taskQueue),
    workflowType: 'eventSweepWorkflow',
    workflowId: `event-sweep/${taskQueue}`,
    taskQueue,
    everyMs,
    args: [{ olderThanMs, limit }] as Parameters<typeof eventSweepWorkflow>,
  });
}
