// The event as the API and webhook receivers see it (OpenAPI component `Event`). Its bytes are
// rendered once from the stored document (store/events.ts renderEventBody) and never re-serialized,
// so what a receiver got and what GET /v1/events answers are the same text.
import { Type, type Static } from '@sinclair/typebox';
import { EVENT_CATALOGS } from '../domain/event-catalogs';
import { Nullable } from './common';

export const Event = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('event'),
    type: Type.String(),
    api_version: Type.Union(EVENT_CATALOGS.map((c) => Type.Literal(c))),
    created: Type.Integer(),
    livemode: Type.Boolean(),
    test: Type.Optional(Type.Literal(true, { description: 'Only on webhook endpoint test events.' })),
    pending_webhooks: Type.Optional(Type.Integer({ description: 'Catalog 2026-11-01 only: deliveries not yet succeeded, computed now.' })),
    request: Type.Optional(
      Type.Object({ id: Nullable(Type.String()), idempotency_key: Nullable(Type.String()) }, { description: 'Catalog 2026-11-01 only.' }),
    ),
    data: Type.Object({ object: Type.Object({}, { additionalProperties: true }) }),
  },
  { $id: 'Event' },
);
export type EventObject = Static<typeof Event>;
