// The one way to reach a subscription's usage workflow: the `recompute` signal, starting the
// workflow when it is not running (signal-with-start). Ids and messages: workflows/usage-periods-messages.ts.
import type { Client } from '@temporalio/client';
import type { SubscriptionDoc } from '../store/subscriptions';
import { recomputeSignal, usageWorkflowId, type UsageWorkflowInput } from '../workflows/usage-periods-messages';
import { subscriptionSearchAttributes } from './search-attributes';

export function usageClient(temporal: Client, taskQueue: string) {
  return {
    async signalRecompute(sub: Pick<SubscriptionDoc, '_id' | 'store_id' | 'customer'>): Promise<void> {
      const input: UsageWorkflowInput = { storeId: sub.store_id, subscriptionId: sub._id };
      await temporal.workflow.signalWithStart('usagePeriodsWorkflow', {
        workflowId: usageWorkflowId(sub._id),
        taskQueue,
        args: [input],
        signal: recomputeSignal,
        signalArgs: [],
        typedSearchAttributes: subscriptionSearchAttributes(sub),
      });
    },
  };
}
