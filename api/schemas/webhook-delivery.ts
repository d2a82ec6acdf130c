// The webhook delivery as the API shows it (OpenAPI component `WebhookDelivery`) and its builder.
import { Type, type Static } from '@sinclair/typebox';
import { DELIVERY_STATUSES, type WebhookDeliveryDoc } from '../../store/webhook-deliveries';
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

export function deliveryObject(doc: WebhookDeliveryDoc): WebhookDeliveryObject {
  return {
    id: doc._id,
    object: 'webhook_delivery',
    event: doc.event,
    webhook_endpoint: doc.webhook_endpoint,
    status: doc.status,
    attempts: doc.attempts,
    next_attempt_at: doc.next_attempt_at,
    last_attempt_at: doc.last_attempt_at,
    delivered_at: doc.delivered_at,
    last_response_status: doc.last_response_status,
    last_error: doc.last_error,
    last_duration_ms: doc.last_duration_ms,
    created: doc.created,
  };
}
