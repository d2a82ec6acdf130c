// The webhook delivery as the API shows it (OpenAPI component `WebhookDelivery`) and as its workflow
// knows it (query `state`, the attempt activity's result): one set of progress fields, built here.
import { Type, type Static } from '@sinclair/typebox';
import { DELIVERY_STATUSES, type WebhookDeliveryDoc } from '../store/webhook-deliveries';
import { Nullable } from './common';

export const WebhookDelivery = Type.Object(
  {
    id: Type.String({ description: 'UUID' }),
    object: Type.Literal('webhook_delivery'),
    event: Type.String(),
    webhook_endpoint: Type.String(),
    status: Type.Union(DELIVERY_STATUSES.map((s) => Type.Literal(s))),
    attempts: Type.Integer(),
    next_attempt_at: Nullable(Type.Integer()),
    last_attempt_at: Nullable(Type.Integer()),
    delivered_at: Nullable(Type.Integer()),
    last_response_status: Nullable(Type.Integer()),
    last_error: Nullable(Type.String()),
    last_duration_ms: Nullable(Type.Integer()),
    created: Type.Integer(),
  },
  { $id: 'WebhookDelivery' },
);
export type WebhookDeliveryObject = Static<typeof WebhookDelivery>;

type DeliveryProgress = Pick<
  WebhookDeliveryObject,
  'status' | 'attempts' | 'next_attempt_at' | 'last_attempt_at' | 'delivered_at' | 'last_response_status' | 'last_error' | 'last_duration_ms'
>;

/**
 * What the delivery's workflow knows of it: the webhook_delivery object after the latest step, without
 * `object` and `created`; event and endpoint are null before the first attempt or once the delivery is gone.
 */
export type WebhookDeliveryState = { id: string } & DeliveryProgress & {
    event: string | null;
    webhook_endpoint: string | null;
    /** True once the delivery no longer exists (endpoint deleted) or the workflow was cancelled. */
    stopped: boolean;
  };

/** The progress fields as stored (status and the attempts' record). */
function progressOf(doc: WebhookDeliveryDoc): DeliveryProgress {
  return {
    status: doc.status,
    attempts: doc.attempts,
    next_attempt_at: doc.next_attempt_at,
    last_attempt_at: doc.last_attempt_at,
    delivered_at: doc.delivered_at,
    last_response_status: doc.last_response_status,
    last_error: doc.last_error,
    last_duration_ms: doc.last_duration_ms,
  };
}

export function deliveryObject(doc: WebhookDeliveryDoc): WebhookDeliveryObject {
  return {
    id: doc._id,
    object: 'webhook_delivery',
    event: doc.event,
    webhook_endpoint: doc.webhook_endpoint,
    ...progressOf(doc),
    created: doc.created,
  };
}

/** The delivery as its workflow holds it; a delivery no longer stored (endpoint deleted) is exhausted and stopped. */
export function deliveryState(doc: WebhookDeliveryDoc | null, id: string): WebhookDeliveryState {
  if (!doc) return { ...notAttempted(id), status: 'exhausted', stopped: true };
  return { id: doc._id, ...progressOf(doc), event: doc.event, webhook_endpoint: doc.webhook_endpoint, stopped: false };
}

/** A delivery no attempt has touched: pending, nothing recorded (the workflow's own start is this shape too). */
function notAttempted(id: string): WebhookDeliveryState {
  return {
    id,
    status: 'pending',
    attempts: 0,
    next_attempt_at: null,
    last_attempt_at: null,
    delivered_at: null,
    last_response_status: null,
    last_error: null,
    last_duration_ms: null,
    event: null,
    webhook_endpoint: null,
    stopped: false,
  };
}
