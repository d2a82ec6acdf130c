// /v1/offers and /v1/products: the store's catalog, read-only. Offers list alphabetically.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { findOffer, findProduct, listOffers, listProducts, productsById } from '../../store/offers';
import { notFound } from '../../domain/errors';
import { authOf } from '../context';
import { listEnvelope, paginate, PaginationQuery } from '../pagination';
import { IdParams, NoQuery, withErrors } from '../http-schemas';
import { offerObject } from '../../resources/offer';
import { productObject } from '../../resources/product';

const BooleanQuery = Type.Boolean();

const OfferListQuery = Type.Object(
  {
    type: Type.Optional(Type.Union([Type.Literal('one_off'), Type.Literal('recurring')])),
    active: Type.Optional(BooleanQuery),
    ...PaginationQuery,
  },
  { additionalProperties: false },
);

const ProductListQuery = Type.Object({ active: Type.Optional(BooleanQuery), ...PaginationQuery }, { additionalProperties: false });

const catalogRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, config } = app.deps;

  app.get(
    '/offers',
    {
      schema: {
        tags: ['offers'],
        summary: 'List offers (alphabetical)',
        querystring: OfferListQuery,
        response: withErrors({ 200: listEnvelope(Type.Ref('Offer')) }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const { type, active, ...page } = request.query;
      const list = await paginate((window) => listOffers(db, store._id, { type, active }, window), {
        query: page,
        url: '/v1/offers',
        toApi: (doc) => doc,
      });
      const byId = await productsById(
        db,
        store._id,
        list.data.map((d) => d.product_id),
      );
      return { ...list, data: list.data.map((d) => offerObject(d, byId.get(d.product_id) ?? null, { store, checkoutUrl: config.checkoutUrl })) };
    },
  );

  app.get(
    '/offers/:id',
    {
      schema: {
        tags: ['offers'],
        summary: 'Retrieve an offer',
        params: IdParams,
        querystring: NoQuery,
        response: withErrors({ 200: Type.Ref('Offer') }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const doc = await findOffer(db, store._id, request.params.id);
      if (!doc) throw notFound('offer', request.params.id);
      const product = await findProduct(db, store._id, doc.product_id);
      return offerObject(doc, product, { store, checkoutUrl: config.checkoutUrl });
    },
  );

  app.get(
    '/products',
    {
      schema: {
        tags: ['products'],
        summary: 'List products',
        querystring: ProductListQuery,
        response: withErrors({ 200: listEnvelope(Type.Ref('Product')) }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const { active, ...page } = request.query;
      return paginate((window) => listProducts(db, store._id, { active }, window), {
        query: page,
        url: '/v1/products',
        toApi: productObject,
      });
    },
  );

  app.get(
    '/products/:id',
    {
      schema: {
        tags: ['products'],
        summary: 'Retrieve a product',
        params: IdParams,
        querystring: NoQuery,
        response: withErrors({ 200: Type.Ref('Product') }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const doc = await findProduct(db, store._id, request.params.id);
      if (!doc) throw notFound('product', request.params.id);
      return productObject(doc);
    },
  );
};

export default catalogRoutes;
