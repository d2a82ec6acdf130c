// Ends the routines a worker process started on a test's task queue (they run until stopped).
import type { Client } from '@temporalio/client';
import { eventSweeperWorkflowId, usageRoutineWorkflowId } from '../../services/operations/routines';

export async function stopRoutines(client: Client, taskQueue: string): Promise<void> {
  for (const id of [eventSweeperWorkflowId(taskQueue), usageRoutineWorkflowId(taskQueue)]) {
    await client.workflow
      .getHandle(id)
      .terminate('test over')
      .catch(() => undefined);
  }
}
