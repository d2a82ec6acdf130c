// /v1/events: list (both catalogs merged, type exact or pattern, created ranges; test events left
// out), retrieve (the JSON the endpoint received, with pending_webhooks computed now) and resend (to
// one endpoint, or again to every endpoint that had it). Events are answered as the stored JSON text,
// never re-serialized, so the bytes match what receivers got.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../store/database';
import { CURRENT_CATALOG, EVENT_PATTERN_MAX_LENGTH, isPattern, typesMatching } from '../../domain/event-catalogs';
import { ApiError, notFound } from '../../domain/errors';
import type { EventDoc } from '../../store/collections';
import { findEvent, listEvents, renderEventBody } from '../../store/events';
import { findEndpoint } from '../../store/webhook-endpoints';
import { deliveriesOfEvent, pendingWebhookCounts } from '../../store/webhook-deliveries';
import { deliverEventTo, resendDeliveryWorkflow, taskQueueOf } from '../../services/webhooks/dispatch';
import { authOf } from '../context';
import { CreatedRangeQuery, listEnvelope, paginate, PaginationQuery } from '../pagination';
import { Nullable } from '../../resources/common';
import { IdParams, withErrors } from '../http-schemas';

const ListQuery = Type.Object(
  {
    type: Type.Optional(
      Type.String({ maxLength: EVENT_PATTERN_MAX_LENGTH, description: 'Exact type, or a pattern with * such as invoice.* (both catalogs).' }),
    ),
    created: CreatedRangeQuery,
    ...PaginationQuery,
  },
  { additionalProperties: false },
);

const ResendBody = Type.Object(
  { webhook_endpoint: Type.Optional(Type.String({ description: 'Endpoint id: only this endpoint receives the event.' })) },
  { additionalProperties: false },
);

const EventResend = Type.Object({
  object: Type.Literal('event_resend'),
  event: Type.String(),
  webhook_endpoint: Nullable(Type.String()),
  deliveries: Type.Integer({ description: 'Deliveries queued.' }),
});

/** pending_webhooks as of now for the 2026-11-01 events among `events`. */
async function pendingWebhooks(db: Database, storeId: string, events: EventDoc[]): Promise<Map<string, number>> {
  return pendingWebhookCounts(
    db,
    storeId,
    events.filter((e) => e.api_version === CURRENT_CATALOG),
  );
}

const JSON_TYPE = 'application/json; charset=utf-8';

const eventRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps;

  app.get(
    '/events',
    {
      schema: {
        tags: ['events'],
        summary: 'List events (both catalogs, newest first)',
        querystring: ListQuery,
        response: withErrors({ 200: listEnvelope(Type.Ref('Event')) }),
      },
    },
    async (request, reply) => {
      const { store } = authOf(request);
      const { type, created, ...page } = request.query;
      const filter = { type: type !== undefined && isPattern(type) ? typesMatching(type) : type, created };
      const list = await paginate((window) => listEvents(db, store._id, filter, window), { query: page, url: '/v1/events', toApi: (doc) => doc });
      const pending = await pendingWebhooks(db, store._id, list.data);
      const items = list.data.map((doc) => renderEventBody(doc, pending.get(doc._id) ?? 0));
      return reply
        .type(JSON_TYPE)
        .send(`{"object":"list","url":${JSON.stringify(list.url)},"has_more":${list.has_more},"data":[${items.join(',')}]}`);
    },
  );

  app.get(
    '/events/:id',
    {
      schema: {
        tags: ['events'],
        summary: 'Retrieve an event (the JSON its endpoints received)',
        params: IdParams,
        response: withErrors({ 200: Type.Ref('Event') }),
      },
    },
    async (request, reply) => {
      const { store } = authOf(request);
      const event = await findEvent(db, store._id, request.params.id);
      if (!event) throw notFound('event', request.params.id);
      const pending = await pendingWebhooks(db, store._id, [event]);
      return reply.type(JSON_TYPE).send(renderEventBody(event, pending.get(event._id) ?? 0));
    },
  );

  app.post(
    '/events/:id/resend',
    {
      schema: {
        tags: ['events'],
        summary: 'Resend an event: to one endpoint, or to every endpoint that had it',
        params: IdParams,
        body: ResendBody,
        response: withErrors({ 200: EventResend }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const event = await findEvent(db, store._id, request.params.id);
      if (!event) throw notFound('event', request.params.id);
      const temporal = app.deps.temporal;
      const endpointId = request.body.webhook_endpoint;
      if (endpointId !== undefined) {
        const endpoint = await findEndpoint(db, store._id, endpointId);
        if (!endpoint) throw notFound('webhook endpoint', endpointId, 'webhook_endpoint');
        if (endpoint.api_version !== event.api_version) {
          throw new ApiError(
            'invalid_event_type',
            `Event ${event._id} belongs to catalog ${event.api_version}; endpoint ${endpoint._id} receives catalog ${endpoint.api_version}.`,
            { param: 'webhook_endpoint' },
          );
        }
        await deliverEventTo(app.deps, event, endpoint._id);
        return { object: 'event_resend' as const, event: event._id, webhook_endpoint: endpoint._id, deliveries: 1 };
      }
      const deliveries = await deliveriesOfEvent(db, store._id, event._id);
      const taskQueue = taskQueueOf(app.deps);
      await Promise.all(deliveries.map((delivery) => resendDeliveryWorkflow(temporal, taskQueue, { ...delivery, event_type: event.type })));
      return { object: 'event_resend' as const, event: event._id, webhook_endpoint: null, deliveries: deliveries.length };
    },
  );
};

export default eventRoutes;
