// Waiting for a test clock to know a new object's workflows before advancing it. A subscription (or
// its usage) workflow attaches to its clock from its first workflow task, which a loaded worker runs
// seconds after the API answered; an advance signalled before then moves the clock without it, and
// the late workflow then jumps straight to the target (renewals and dunning off the clock's order).
import type { Client } from '@temporalio/client';
import { testClockStateQuery, testClockWorkflowId } from '../../workflows/test-clock/messages';
import { subscriptionWorkflowId } from '../../workflows/subscription/messages';
import { waitFor } from './env';

/** Resolves once the clock counts every one of `workflowIds` as a waiter that has seen its latest tick. */
export async function clockKnows(client: Client, clockId: string, workflowIds: string[]): Promise<void> {
  const clock = client.workflow.getHandle(testClockWorkflowId(clockId));
  await waitFor(
    async () => {
      const state = await clock.query(testClockStateQuery);
      const seen = new Map(state.waiters.map((w) => [w.workflowId, w.seq]));
      return workflowIds.every((id) => seen.get(id) === state.seq);
    },
    { description: `test clock ${clockId} to count ${workflowIds.join(', ')} among its settled waiters` },
  );
}

/** `clockKnows` for subscriptions' own workflows. */
export const clockKnowsSubscriptions = (client: Client, clockId: string, subscriptionIds: string[]) =>
  clockKnows(client, clockId, subscriptionIds.map(subscriptionWorkflowId));
