// The one way to reach a subscription's usage workflow: the `recompute` signal, starting the
// workflow when it is not running (signal-with-start). Ids and messages: workflows/usage-periods/messages.ts.
import type { Client } from '@temporalio/client';
import { taskQueueFor } from '../../workflows/test-clock/messages';
import { recomputeSignal, usageWorkflowId, type UsageWorkflowInput } from '../../workflows/usage-periods/messages';
import { subscriptionSearchAttributes } from '../operations/search-attributes';
import { usageMetadata, type SubscriptionShown } from '../operations/workflow-summaries';

export function usageClient(temporal: Client, taskQueue: string) {
  return {
    async signalRecompute(sub: SubscriptionShown): Promise<void> {
      const input: UsageWorkflowInput = { storeId: sub.store_id, subscriptionId: sub._id };
      // Only when set: without a clock the input stays as recorded histories have it.
      if (sub.test_clock) input.testClock = sub.test_clock;
      await temporal.workflow.signalWithStart('usagePeriodsWorkflow', {
        workflowId: usageWorkflowId(sub._id),
        taskQueue: taskQueueFor(taskQueue, sub.test_clock),
        args: [input],
        signal: recomputeSignal,
        signalArgs: [],
        typedSearchAttributes: subscriptionSearchAttributes(sub),
        ...usageMetadata(sub),
      });
    },
  };
}
