// /v1/webhook_endpoints: CRUD (oldest first; the secret only in the create and rotate_secret answers),
// rotate_secret (the old secret signs beside the new one for 24 hours), test (a test customer.created
// to this endpoint only) and the endpoint's deliveries (status filter, cursors).
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  CURRENT_CATALOG,
  EVENT_CATALOGS,
  EVENT_PATTERN_MAX_LENGTH,
  normalizeEnabledEvents,
  unknownEventEntry,
  type EventCatalog,
} from '../../domain/event-catalogs';
import { ApiError, notFound } from '../../domain/errors';
import { newId } from '../../domain/ids';
import { confirmDispatched, recordEvent } from '../../store/events';
import {
  deleteEndpoint,
  findEndpoint,
  ENDPOINTS_PER_STORE,
  insertEndpoint,
  listEndpoints,
  releaseEndpointSlot,
  takeEndpointSlot,
  rotateEndpointSecret,
  updateEndpoint,
  type EndpointStatus,
} from '../../store/webhook-endpoints';
import { deleteDeliveriesOf, DELIVERY_STATUSES, listEndpointDeliveries, openDeliveriesOf, type DeliveryStatus } from '../../store/webhook-deliveries';
import { checkWebhookUrl, MAX_WEBHOOK_URL_LENGTH, type HostPolicy } from '../../adapters/webhooks/host-policy';
import { deliverEventTo } from '../../services/webhooks/dispatch';
import { deliveryClient } from '../../services/webhooks/delivery-client';
import type { Database } from '../../store/database';
import { authOf, eventRequestOf, type RouteApp } from '../context';
import { listEnvelope, paginate, PaginationQuery } from '../pagination';
import { Nullable } from '../../resources/common';
import { IdParams, withErrors } from '../http-schemas';
import type { CustomerObject } from '../../resources/customer';
import { deliveryObject } from '../../resources/webhook-delivery';
import { endpointObject } from '../../resources/webhook-endpoint';

const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));
const MAX_ENABLED_EVENTS = 100;
const MAX_DESCRIPTION = 200;

const fields = {
  url: Type.String({ maxLength: MAX_WEBHOOK_URL_LENGTH, description: 'https:// address of a public host, up to 2000 characters.' }),
  description: Nullable(Type.String({ maxLength: MAX_DESCRIPTION })),
  enabled_events: Type.Array(Type.String({ minLength: 1, maxLength: EVENT_PATTERN_MAX_LENGTH }), {
    maxItems: MAX_ENABLED_EVENTS,
    description: 'Up to 100 types of the catalog or patterns with *; omitted, empty or [*]: all.',
  }),
};

const CreateBody = Type.Object(
  {
    url: fields.url,
    description: Type.Optional(fields.description),
    enabled_events: Type.Optional(fields.enabled_events),
    api_version: Type.Optional(literals(EVENT_CATALOGS)),
  },
  { additionalProperties: false },
);

const UpdateBody = Type.Object(
  {
    url: Type.Optional(fields.url),
    description: Type.Optional(fields.description),
    enabled_events: Type.Optional(fields.enabled_events),
    status: Type.Optional(literals(['enabled', 'disabled'] as const)),
    api_version: Type.Optional(Type.Unknown({ description: 'Ignored: the catalog is fixed at creation.' })),
  },
  { additionalProperties: false },
);

const DeliveriesQuery = Type.Object({ status: Type.Optional(literals(DELIVERY_STATUSES)), ...PaginationQuery }, { additionalProperties: false });

const ListQuery = Type.Object({ ...PaginationQuery }, { additionalProperties: false });

const Deleted = Type.Object({ id: Type.String(), object: Type.Literal('webhook_endpoint'), deleted: Type.Literal(true) });
const WebhookTest = Type.Object({ object: Type.Literal('webhook_test'), webhook_endpoint: Type.String(), event: Type.String() });

/** enabled_events as stored, or 400 invalid_event_type naming the first entry the catalog does not know. */
export function checkEnabledEvents(catalog: EventCatalog, entries: string[] | undefined): string[] {
  // Every entry is checked before `*` absorbs the rest: a typo beside `*` is refused, not hidden.
  const unknown = unknownEventEntry(catalog, entries ?? []);
  if (unknown) {
    throw new ApiError('invalid_event_type', `'${unknown.entry}' is not an event type of catalog ${catalog}.`, {
      param: `enabled_events[${unknown.index}]`,
    });
  }
  return normalizeEnabledEvents(entries);
}

const EndpointRef = Type.Ref('WebhookEndpoint');

const webhookEndpointRoutes: FastifyPluginAsyncTypebox = async (app) => {
  endpointListRoutes(app);
  endpointRoutes(app);
  deleteEndpointRoute(app);
  rotateSecretRoute(app);
  sendTestEventRoute(app);
  listDeliveriesRoute(app);
};

function hostPolicyOf(app: RouteApp): HostPolicy {
  const { config } = app.deps;
  return { allowedHosts: config.webhookAllowedHosts ?? [], resolver: config.webhookResolver };
}

async function endpointOrNotFound(db: Database, storeId: string, id: string) {
  const endpoint = await findEndpoint(db, storeId, id);
  if (!endpoint) throw notFound('webhook endpoint', id);
  return endpoint;
}

/** GET the endpoints (oldest first) and POST a new one (its URL checked against the host policy). */
function endpointListRoutes(app: RouteApp): void {
  const { db } = app.deps;
  app.get(
    '/webhook_endpoints',
    {
      schema: {
        tags: ['webhook_endpoints'],
        summary: 'List webhook endpoints (oldest first)',
        querystring: ListQuery,
        response: withErrors({ 200: listEnvelope(EndpointRef) }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      return paginate((window) => listEndpoints(db, store._id, window), {
        query: request.query,
        url: '/v1/webhook_endpoints',
        toApi: (doc) => endpointObject(doc),
      });
    },
  );

  app.post(
    '/webhook_endpoints',
    // The answer carries the signing secret: a replay copy is kept sealed.
    {
      config: { secretResponse: true },
      schema: { tags: ['webhook_endpoints'], summary: 'Create a webhook endpoint', body: CreateBody, response: withErrors({ 201: EndpointRef }) },
    },
    async (request, reply) => {
      const { store } = authOf(request);
      const body = request.body;
      const catalog = (body.api_version as EventCatalog | undefined) ?? CURRENT_CATALOG;
      const enabledEvents = checkEnabledEvents(catalog, body.enabled_events);
      const url = await checkWebhookUrl(body.url, hostPolicyOf(app));
      if (!(await takeEndpointSlot(db, store._id))) {
        throw new ApiError(
          'parameter_invalid',
          `A store can have at most ${ENDPOINTS_PER_STORE} webhook endpoints; delete one before adding another.`,
        );
      }
      let doc;
      try {
        doc = await insertEndpoint(db, { storeId: store._id, url, description: body.description ?? null, enabledEvents, apiVersion: catalog });
      } catch (error) {
        await releaseEndpointSlot(db, store._id);
        throw error;
      }
      reply.status(201);
      return endpointObject(doc, { withSecret: true });
    },
  );
}

/** GET one endpoint and POST changes to the fields sent. */
function endpointRoutes(app: RouteApp): void {
  const { db } = app.deps;
  app.get(
    '/webhook_endpoints/:id',
    { schema: { tags: ['webhook_endpoints'], summary: 'Retrieve a webhook endpoint', params: IdParams, response: withErrors({ 200: EndpointRef }) } },
    async (request) => {
      const { store } = authOf(request);
      return endpointObject(await endpointOrNotFound(db, store._id, request.params.id));
    },
  );

  app.post(
    '/webhook_endpoints/:id',
    {
      schema: {
        tags: ['webhook_endpoints'],
        summary: 'Update a webhook endpoint (only the fields sent change)',
        params: IdParams,
        body: UpdateBody,
        response: withErrors({ 200: EndpointRef }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const current = await endpointOrNotFound(db, store._id, request.params.id);
      const body = request.body;
      const enabledEvents = body.enabled_events !== undefined ? checkEnabledEvents(current.api_version, body.enabled_events) : undefined;
      const url = body.url !== undefined ? await checkWebhookUrl(body.url, hostPolicyOf(app)) : undefined;
      const updated = await updateEndpoint(db, store._id, current._id, {
        url,
        description: body.description,
        enabledEvents,
        status: body.status as EndpointStatus | undefined,
      });
      if (!updated) throw notFound('webhook endpoint', request.params.id);
      return endpointObject(updated);
    },
  );
}

/** DELETE an endpoint, its secret and deliveries (open ones cancelled first). */
function deleteEndpointRoute(app: RouteApp): void {
  const { db } = app.deps;
  app.delete(
    '/webhook_endpoints/:id',
    {
      schema: {
        tags: ['webhook_endpoints'],
        summary: 'Delete a webhook endpoint, its secret and deliveries',
        params: IdParams,
        response: withErrors({ 200: Deleted }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const endpoint = await endpointOrNotFound(db, store._id, request.params.id);
      await deleteEndpoint(db, store._id, endpoint._id);
      // Deliveries still to be tried stop now rather than at their next attempt.
      const open = await openDeliveriesOf(db, store._id, endpoint._id);
      const deliveries = deliveryClient(app.deps.temporal, app.deps.config.taskQueue);
      await Promise.all(open.map((delivery) => deliveries.cancel(delivery._id)));
      await deleteDeliveriesOf(db, store._id, endpoint._id);
      return { id: endpoint._id, object: 'webhook_endpoint' as const, deleted: true as const };
    },
  );
}

/** POST rotate_secret: the old secret signs for 24 more hours. */
function rotateSecretRoute(app: RouteApp): void {
  const { db } = app.deps;
  app.post(
    '/webhook_endpoints/:id/rotate_secret',
    {
      config: { secretResponse: true },
      schema: {
        tags: ['webhook_endpoints'],
        summary: 'Rotate the signing secret (the old one signs for 24 more hours)',
        params: IdParams,
        response: withErrors({ 200: EndpointRef }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      await endpointOrNotFound(db, store._id, request.params.id);
      const rotated = await rotateEndpointSecret(db, store._id, request.params.id);
      if (!rotated) throw new ApiError('parameter_invalid', 'The secret was rotated by another request at the same time; retry.', { param: 'id' });
      return endpointObject(rotated, { withSecret: true });
    },
  );
}

/** POST test: a test customer.created event to this endpoint only. */
function sendTestEventRoute(app: RouteApp): void {
  const { db } = app.deps;
  app.post(
    '/webhook_endpoints/:id/test',
    {
      schema: {
        tags: ['webhook_endpoints'],
        summary: 'Send a test customer.created event to this endpoint only',
        params: IdParams,
        response: withErrors({ 200: WebhookTest }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const endpoint = await endpointOrNotFound(db, store._id, request.params.id);
      const now = Date.now();
      const event = await recordEvent(
        db,
        {
          storeId: store._id,
          type: 'customer.created',
          apiVersion: endpoint.api_version,
          object: sampleCustomer(store.country, now),
          request: eventRequestOf(request),
          targets: [endpoint._id],
          test: true,
        },
        now,
      );
      // Straight to this endpoint, enabled or not: a disabled one closes the delivery with `endpoint disabled`.
      await deliverEventTo(app.deps, event, endpoint._id);
      await confirmDispatched(db, [event._id]);
      return { object: 'webhook_test' as const, webhook_endpoint: endpoint._id, event: event._id };
    },
  );
}

/** GET an endpoint's deliveries (newest first, status filter). */
function listDeliveriesRoute(app: RouteApp): void {
  const { db } = app.deps;
  app.get(
    '/webhook_endpoints/:id/deliveries',
    {
      schema: {
        tags: ['webhook_endpoints'],
        summary: "List an endpoint's deliveries (newest first)",
        params: IdParams,
        querystring: DeliveriesQuery,
        response: withErrors({ 200: listEnvelope(Type.Ref('WebhookDelivery')) }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const endpoint = await endpointOrNotFound(db, store._id, request.params.id);
      const { status, ...page } = request.query;
      const filter = { status: status as DeliveryStatus | undefined };
      return paginate((window) => listEndpointDeliveries(db, store._id, endpoint._id, filter, window), {
        query: page,
        url: `/v1/webhook_endpoints/${endpoint._id}/deliveries`,
        toApi: deliveryObject,
      });
    },
  );
}

/** The customer a test event carries: shaped like a real one, marked as a test. */
function sampleCustomer(country: string, now: number): CustomerObject {
  return {
    id: newId('cust', now),
    object: 'customer',
    email: 'test.customer@example.com',
    name: 'Test Customer',
    phone: null,
    document: null,
    address: null,
    country,
    locale: null,
    metadata: {},
    test_clock: null,
    livemode: false,
    created: Math.floor(now / 1000),
  };
}

export default webhookEndpointRoutes;
