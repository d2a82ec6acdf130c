// /v1/orders: read-only; filters customer, subscription, status and created ranges.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { orderObject, ordersCollection } from '../../store/orders';
import { findOwnedById } from '../../store/owned';
import { notFound } from '../../domain/errors';
import { authOf } from '../context';
import { createdFilter, CreatedRangeQuery, listEnvelope, paginate, PaginationQuery } from '../pagination';
import { IdParams, NoQuery, MetadataOutput, Nullable, withErrors } from '../schemas/common';

const NullableText = Nullable(Type.String());
export const ORDER_STATUSES = ['pending', 'paid', 'failed', 'canceled', 'refunded', 'partially_refunded', 'charged_back'] as const;

export const Order = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('order'),
    status: Type.String(),
    paid: Type.Boolean(),
    paid_at: Nullable(Type.Integer()),
    currency: Type.String(),
    amount_subtotal: Type.Integer(),
    amount_discount: Type.Integer(),
    amount_total: Type.Integer(),
    billing_reason: Type.String(),
    order_type: Type.String(),
    recurrence: Type.String(),
    subscription: NullableText,
    customer: NullableText,
    customer_email: NullableText,
    offer: NullableText,
    product: NullableText,
    items: Type.Array(
      Type.Object({ kind: Type.String(), description: Type.String(), quantity: Type.Integer(), unit_amount: Type.Integer(), amount: Type.Integer() }),
    ),
    payment_method_type: NullableText,
    installments: Nullable(Type.Integer()),
    external_order_id: NullableText,
    status_source: Type.String(),
    client_reference_id: NullableText,
    checkout_session: NullableText,
    metadata: MetadataOutput,
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'Order' },
);

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
      const filter: Record<string, unknown> = { ...createdFilter(created) };
      if (customer !== undefined) filter.customer = customer;
      if (subscription !== undefined) filter.subscription = subscription;
      if (status !== undefined) filter.status = status;
      return paginate(ordersCollection(db), { storeId: store._id, filter, query: page, url: '/v1/orders', toApi: orderObject });
    },
  );

  app.get(
    '/orders/:id',
    { schema: { tags: ['orders'], summary: 'Retrieve an order', params: IdParams, querystring: NoQuery, response: withErrors({ 200: Type.Ref('Order') }) } },
    async (request) => {
      const { store } = authOf(request);
      const doc = await findOwnedById(ordersCollection(db), store._id, request.params.id);
      if (!doc) throw notFound('order', request.params.id);
      return orderObject(doc);
    },
  );
};

export default orderRoutes;
