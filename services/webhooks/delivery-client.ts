// The one way to reach a webhook delivery's workflow: start it once (a delivery runs once unless
// resent) and resend (signal the running workflow, or start a new run when it has closed). Ids and
// messages come from workflows/webhook-delivery/messages.ts.
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { WebhookDeliveryDoc } from '../../store/webhook-deliveries';
import {
  resendSignal,
  WEBHOOK_DELIVERY_WORKFLOW,
  webhookDeliveryWorkflowId,
  type WebhookDeliveryInput,
} from '../../workflows/webhook-delivery/messages';
import { deliveryMetadata, deliverySearchAttributes } from '../operations/workflow-summaries';
import { INPUT_VERSION } from '../../workflows/lib/input-version';

/** A delivery; with its event's id and type when the caller has them (they name the Web UI row). */
export type DeliveryRef = Pick<WebhookDeliveryDoc, '_id' | 'store_id' | 'webhook_endpoint'> & { event?: string; event_type?: string };

function deliveryStart(delivery: DeliveryRef, taskQueue: string) {
  const input: WebhookDeliveryInput = {
    deliveryId: delivery._id,
    storeId: delivery.store_id,
    endpointId: delivery.webhook_endpoint,
    resend: false,
    version: INPUT_VERSION,
  };
  return {
    workflowId: webhookDeliveryWorkflowId(delivery._id),
    taskQueue,
    args: [input],
    typedSearchAttributes: deliverySearchAttributes(delivery.store_id, delivery.webhook_endpoint),
    ...deliveryMetadata(delivery),
  };
}

export function deliveryClient(temporal: Client, taskQueue: string) {
  return {
    /** Starts the delivery's workflow unless its id is running or has run. */
    async start(delivery: DeliveryRef): Promise<void> {
      try {
        await temporal.workflow.start(WEBHOOK_DELIVERY_WORKFLOW, {
          ...deliveryStart(delivery, taskQueue),
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
        });
      } catch (error) {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
    },

    /** Resend: signals the running workflow, or starts a new run (with the signal) when it has closed. */
    async resend(delivery: DeliveryRef): Promise<void> {
      await temporal.workflow.signalWithStart(WEBHOOK_DELIVERY_WORKFLOW, {
        ...deliveryStart(delivery, taskQueue),
        signal: resendSignal,
        signalArgs: [],
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      });
    },

    /** Stops a delivery still to be tried (its endpoint was deleted); one already gone is fine. */
    async cancel(deliveryId: string): Promise<void> {
      await temporal.workflow
        .getHandle(webhookDeliveryWorkflowId(deliveryId))
        .cancel()
        .catch((error: unknown) => {
          if (!(error instanceof WorkflowNotFoundError)) throw error;
        });
    },
  };
}
