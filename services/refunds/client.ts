// The one way to reach a refund's workflow: start it (a run with its id attaches, a closed one is never
// run again) and wait a while for its answer. Ids and messages come from workflows/refund/messages.ts.
import type { Client } from '@temporalio/client';
import { plainMoney } from '../../domain/pricing';
import { INPUT_VERSION } from '../../workflows/lib/input-version';
import { BillingStatusKey, CustomerIdKey, StoreIdKey } from '../../workflows/search-attributes';
import { refundWorkflowId, type RefundWorkflowInput, type RefundWorkflowResult } from '../../workflows/refund/messages';

function isAlreadyStarted(error: unknown): boolean {
  for (let e = error as { name?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.name === 'WorkflowExecutionAlreadyStartedError') return true;
  }
  return false;
}

export function refundClient(temporal: Client, taskQueue: string) {
  /** Starts the refund's workflow; one with its id (running or closed) means the refund is already under way. */
  async function start(input: RefundWorkflowInput, customerId: string | null): Promise<void> {
    try {
      await temporal.workflow.start('refundWorkflow', {
        workflowId: refundWorkflowId(input.storeId, input.refundId),
        taskQueue,
        args: [{ ...input, version: INPUT_VERSION }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: [
          { key: StoreIdKey, value: input.storeId },
          ...(customerId ? [{ key: CustomerIdKey, value: customerId }] : []),
          { key: BillingStatusKey, value: 'refunding' },
        ],
        staticSummary: `Refund ${plainMoney(input.amount, input.currency)} of ${input.orderId}${input.madeAtProvider ? ' (made at the provider)' : ''}`,
        staticDetails: `**Store:** ${input.storeId}\n**Order:** ${input.orderId}\n**Refund:** ${input.refundId}`,
      });
    } catch (error) {
      if (!isAlreadyStarted(error)) throw error;
    }
  }

  /** The refund's answer within `waitMs`; null while it is still running (pending at the provider, or workers away). */
  async function answer(storeId: string, refundId: string, waitMs: number): Promise<RefundWorkflowResult | null> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), waitMs)));
    try {
      return await Promise.race([temporal.workflow.getHandle(refundWorkflowId(storeId, refundId)).result() as Promise<RefundWorkflowResult>, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  return { start, answer };
}
