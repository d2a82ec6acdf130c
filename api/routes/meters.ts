// /v1/billing/meters: create (event_name unique per store), list (status filter), retrieve, rename
// (display_name only), deactivate (no way back), and event summaries per hour or day window.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../domain/errors';
import { DISPLAY_NAME_MAX, validatePayloadKey } from '../../domain/meter-events';
import { createMeter, deactivateMeter, listMeters, renameMeter, requireMeter, type MeterDoc } from '../../store/meters';
import { meterEventSummaries } from '../../services/usage/summaries';
import { authOf, type RouteApp } from '../context';
import { listEnvelope, paginate, PaginationQuery } from '../pagination';
import { IdParams, withErrors } from '../http-schemas';
import { MeterFormula, meterObject } from '../../resources/meter';

const DisplayName = Type.String({
  minLength: 1,
  maxLength: DISPLAY_NAME_MAX,
  description: `1 to ${DISPLAY_NAME_MAX} characters; shown on the buyer's order line.`,
});

const CreateBody = Type.Object(
  {
    display_name: DisplayName,
    event_name: Type.String({ maxLength: 100, description: 'a-z, 0-9, _, . and -; up to 100 characters; unique in the store; immutable.' }),
    default_aggregation: Type.Optional(Type.Object({ formula: Type.Optional(MeterFormula) }, { additionalProperties: false })),
    customer_mapping: Type.Optional(
      Type.Object(
        {
          type: Type.Optional(Type.String({ description: 'Only by_id.' })),
          event_payload_key: Type.Optional(Type.String({ description: 'Default customer_id (stripe_customer_id is also accepted in payloads).' })),
        },
        { additionalProperties: false },
      ),
    ),
    value_settings: Type.Optional(
      Type.Object({ event_payload_key: Type.Optional(Type.String({ description: 'Default value.' })) }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
);

const UpdateBody = Type.Object({ display_name: Type.Optional(DisplayName) }, { additionalProperties: false });

const ListQuery = Type.Object(
  { status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('inactive')])), ...PaginationQuery },
  { additionalProperties: false },
);

const SummaryQuery = Type.Object(
  {
    customer: Type.String({ description: 'cust_ of the store.' }),
    start_time: Type.Integer({ description: 'Unix seconds, inclusive; at the start of an hour (of a UTC day with the day window).' }),
    end_time: Type.Integer({ description: 'Unix seconds, exclusive; at most one year after start_time.' }),
    value_grouping_window: Type.Optional(Type.Union([Type.Literal('hour'), Type.Literal('day')])),
  },
  { additionalProperties: false },
);

const MeterRef = Type.Ref('BillingMeter');

const meterRoutes: FastifyPluginAsyncTypebox = async (app) => {
  createMeterRoute(app);
  readMeterRoutes(app);
  changeMeterRoutes(app);
  eventSummaryRoute(app);
};

/** POST /billing/meters: customer_mapping by id only; payload keys checked before the write. */
function createMeterRoute(app: RouteApp): void {
  const { db } = app.deps;
  app.post(
    '/billing/meters',
    { schema: { tags: ['billing.meters'], summary: 'Create a meter', body: CreateBody, response: withErrors({ 201: MeterRef }) } },
    async (request, reply) => {
      const { store } = authOf(request);
      const body = request.body;
      const mappingType = body.customer_mapping?.type;
      if (mappingType !== undefined && mappingType !== 'by_id') {
        throw new ApiError('parameter_invalid', "customer_mapping[type] accepts only 'by_id'.", { param: 'customer_mapping.type' });
      }
      const customerKey = body.customer_mapping?.event_payload_key;
      if (customerKey !== undefined) validatePayloadKey(customerKey, 'customer_mapping.event_payload_key');
      const valueKey = body.value_settings?.event_payload_key;
      if (valueKey !== undefined) validatePayloadKey(valueKey, 'value_settings.event_payload_key');
      const meter = await createMeter(db, {
        storeId: store._id,
        displayName: body.display_name,
        eventName: body.event_name,
        formula: body.default_aggregation?.formula,
        customerPayloadKey: customerKey,
        valuePayloadKey: valueKey,
      });
      reply.status(201);
      return meterObject(meter);
    },
  );
}

/** GET the list (status filter) and one meter. */
function readMeterRoutes(app: RouteApp): void {
  const { db } = app.deps;
  app.get(
    '/billing/meters',
    { schema: { tags: ['billing.meters'], summary: 'List meters', querystring: ListQuery, response: withErrors({ 200: listEnvelope(MeterRef) }) } },
    async (request) => {
      const { store } = authOf(request);
      const { status, ...page } = request.query;
      return paginate((window) => listMeters(db, store._id, { status }, window), {
        query: page,
        url: '/v1/billing/meters',
        toApi: (doc: MeterDoc) => meterObject(doc),
      });
    },
  );

  app.get(
    '/billing/meters/:id',
    { schema: { tags: ['billing.meters'], summary: 'Retrieve a meter', params: IdParams, response: withErrors({ 200: MeterRef }) } },
    async (request) => meterObject(await requireMeter(db, authOf(request).store._id, request.params.id)),
  );
}

/** POST a new display_name, or deactivate (no way back). */
function changeMeterRoutes(app: RouteApp): void {
  const { db } = app.deps;
  app.post(
    '/billing/meters/:id',
    {
      schema: {
        tags: ['billing.meters'],
        summary: 'Update a meter (display_name only)',
        params: IdParams,
        body: UpdateBody,
        response: withErrors({ 200: MeterRef }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const name = request.body?.display_name;
      if (name === undefined) return meterObject(await requireMeter(db, store._id, request.params.id));
      return meterObject(await renameMeter(db, store._id, request.params.id, name));
    },
  );

  app.post(
    '/billing/meters/:id/deactivate',
    {
      schema: {
        tags: ['billing.meters'],
        summary: 'Deactivate a meter (there is no reactivation)',
        params: IdParams,
        response: withErrors({ 200: MeterRef }),
      },
    },
    async (request) => meterObject(await deactivateMeter(db, authOf(request).store._id, request.params.id)),
  );
}

/** GET a customer's sums per hour or day window. */
function eventSummaryRoute(app: RouteApp): void {
  const { db } = app.deps;
  app.get(
    '/billing/meters/:id/event_summaries',
    {
      schema: {
        tags: ['billing.meters'],
        summary: "Sums of a customer's events on the meter (attached or not), per window that has events",
        params: IdParams,
        querystring: SummaryQuery,
        response: withErrors({ 200: listEnvelope(Type.Ref('BillingMeterEventSummary')) }),
      },
    },
    async (request) => meterEventSummaries(db, authOf(request).store._id, request.params.id, request.query),
  );
}

export default meterRoutes;
