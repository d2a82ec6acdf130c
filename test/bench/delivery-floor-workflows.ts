// bench:webhooks' floor yardstick (issue 30): one delivery as the spec requires it and nothing more. The
// activity signs the event, POSTs it through the same HTTPS client as a real attempt and records the
// outcome on the delivery's document; the workflow ends with it (no status attribute, no resend window).
// Test-only, bundled for the bench's own worker; never loaded by the billing worker.
import { proxyActivities } from '@temporalio/workflow';

export interface FloorDelivery {
  deliveryId: string;
  url: string;
  body: string;
}

export interface FloorActivities {
  deliverOnce(delivery: FloorDelivery): Promise<number | null>;
}

// The real attempt's budget and retries (workflows/webhook-delivery).
const { deliverOnce } = proxyActivities<FloorActivities>({
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 30 },
});

/** Delivers once and answers the receiver's status. */
export async function deliveryFloorWorkflow(delivery: FloorDelivery): Promise<number | null> {
  return deliverOnce(delivery);
}
