// Periodic routines as Temporal schedules: one place that creates "start this workflow every N ms"
// idempotently (an existing schedule is left as it is), with the policies every routine shares.
import { ScheduleAlreadyRunning, type Client } from '@temporalio/client';

export interface IntervalSchedule {
  scheduleId: string;
  workflowType: string;
  workflowId: string;
  taskQueue: string;
  everyMs: number;
  args: unknown[];
}

export async function ensureIntervalSchedule(client: Client, schedule: IntervalSchedule): Promise<string> {
  try {
    await client.schedule.create({
      scheduleId: schedule.scheduleId,
      spec: { intervals: [{ every: schedule.everyMs }] },
      action: {
        type: 'startWorkflow',
        workflowType: schedule.workflowType,
        workflowId: schedule.workflowId,
        taskQueue: schedule.taskQueue,
        args: schedule.args,
        // A run the worker never picks up (worker down) gives way to a later one.
        workflowRunTimeout: '5 minutes',
      },
      // A routine still running when the next is due is not doubled; missed runs are not replayed.
      policies: { overlap: 'SKIP', catchupWindow: '1 minute' },
    });
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  return schedule.scheduleId;
}
