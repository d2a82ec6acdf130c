// Messages of the webhook delivery workflow, shared by the workflow, the API and the runbook
// (docs/runbook-webhooks.md): its id, the `resend` signal, the `state` query, the StoreId search
// attribute and the input.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { VersionedInput } from '../lib/input-version';
import type { WebhookDeliveryState } from '../../resources/webhook-delivery';

export const WEBHOOK_DELIVERY_WORKFLOW = 'webhookDeliveryWorkflow';

/** `webhook-delivery/<delivery uuid>`. */
export function webhookDeliveryWorkflowId(deliveryId: string): string {
  return `webhook-delivery/${deliveryId}`;
}

/** Back to pending with attempts reset, first attempt at once (`temporal workflow signal --name resend`). */
export const resendSignal = defineSignal('resend');

export const stateQuery = defineQuery<WebhookDeliveryState>('state');

export { StoreIdKey as storeIdSearchAttribute } from '../search-attributes';

/**
 * After a delivery ends (succeeded, exhausted, endpoint disabled) its workflow stays open this long
 * waiting for a `resend` signal, so support staff can resend from the CLI; later resends go through
 * the API, which starts a new run under the same id.
 */
export const RESEND_WINDOW_MS = 72 * 60 * 60 * 1000;

export interface WebhookDeliveryInput extends VersionedInput {
  deliveryId: string;
  storeId: string;
  endpointId?: string;
  /** Start with a resend (a run started by signal-with-start, or continued after a resend). */
  resend?: boolean;
  /** The attempt to make first (a run continued mid-schedule); 1 unless stated. */
  attempt?: number;
}

/** What the workflow knows of its delivery: the webhook_delivery resource's own description of it. */
export type { WebhookDeliveryState } from '../../resources/webhook-delivery';
