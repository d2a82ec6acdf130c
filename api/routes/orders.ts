// /v1/orders: read-only; filters customer, subscription, status and created ranges.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { findOrder, listOrders } from '../../store/orders';
import { notFound } from '../../domain/errors';
import { authOf } from '../context';
import { CreatedRangeQuery, listEnvelope, paginate, PaginationQuery } from '../pagination';
import { IdParams, NoQuery, withErrors } from '../http-schemas';
import { ORDER_STATUSES, orderObject } from '../../resources/order';

const ListQuery = Type.Object(
  {
    customer: Type.Optional(Type.String()),
    subscription: Type.Optional(Type.String()),
    status: Type.Optional(Type.Union(ORDER_STATUSES.map((s) => Type.Literal(s)))),
    created: CreatedRangeQuery,
    ...PaginationQuery,
  },
  { additionalProperties: false },
);

const orderRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps;

  app.get(
    '/orders',
    { schema: { tags: ['orders'], summary: 'List orders', querystring: ListQuery, response: withErrors({ 200: listEnvelope(Type.Ref('Order')) }) } },
    async (request) => {
      const { store } = authOf(request);
      const { customer, subscription, status, created, ...page } = request.query;
      const filter = { customer, subscription, status, created };
      return paginate((window) => listOrders(db, store._id, filter, window), { query: page, url: '/v1/orders', toApi: orderObject });
    },
  );

  app.get(
    '/orders/:id',
    {
      schema: {
        tags: ['orders'],
        summary: 'Retrieve an order',
        params: IdParams,
        querystring: NoQuery,
        response: withErrors({ 200: Type.Ref('Order') }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const doc = await findOrder(db, store._id, request.params.id);
      if (!doc) throw notFound('order', request.params.id);
      return orderObject(doc);
    },
  );
};

export default orderRoutes;
