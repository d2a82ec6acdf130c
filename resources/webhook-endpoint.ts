// The webhook endpoint as the API shows it (OpenAPI component `WebhookEndpoint`) and its builder;
// the signing secret appears only in the create and rotate_secret answers.
import { Type, type Static } from '@sinclair/typebox';
import { EVENT_CATALOGS } from '../domain/event-catalogs';
import type { WebhookEndpointDoc } from '../store/webhook-endpoints';
import { Nullable } from './common';

const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));

export const WebhookEndpoint = Type.Object(
  {
    id: Type.String({ description: 'UUID' }),
    object: Type.Literal('webhook_endpoint'),
    url: Type.String(),
    description: Nullable(Type.String()),
    enabled_events: Type.Array(Type.String(), { description: 'Types and patterns; [*] for every event of the catalog.' }),
    api_version: literals(EVENT_CATALOGS),
    status: literals(['enabled', 'disabled'] as const),
    disabled_reason: Nullable(Type.String()),
    consecutive_failures: Type.Integer(),
    created_via: literals(['dashboard', 'api'] as const),
    secret: Type.Optional(Type.String({ description: 'whsec_ signing secret: only in the create and rotate_secret responses.' })),
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'WebhookEndpoint' },
);
export type WebhookEndpointObject = Static<typeof WebhookEndpoint>;

export function endpointObject(doc: WebhookEndpointDoc, options: { withSecret?: boolean } = {}): WebhookEndpointObject {
  return {
    id: doc._id,
    object: 'webhook_endpoint',
    url: doc.url,
    description: doc.description,
    enabled_events: doc.enabled_events,
    api_version: doc.api_version,
    status: doc.status,
    disabled_reason: doc.disabled_reason,
    consecutive_failures: doc.consecutive_failures,
    created_via: doc.created_via,
    ...(options.withSecret ? { secret: doc.secret } : {}),
    livemode: doc.livemode,
    created: doc.created,
  };
}
