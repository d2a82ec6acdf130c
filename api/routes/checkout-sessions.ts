// /v1/checkout/sessions: create (every parameter of the spec's table), list (customer,
// client_reference_id, status, payment_status), retrieve, and expire (through the session workflow).
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { createCheckoutSession, expireCheckoutSession } from '../../services/checkout/sessions';
import { findCheckoutSession, listCheckoutSessions } from '../../store/checkout-sessions';
import { CHECKOUT_LOCALES, PAYMENT_STATUSES, SESSION_STATUSES, type SessionStatus } from '../../domain/checkout';
import { notFound } from '../../domain/errors';
import { authOf, checkoutDepsOf } from '../context';
import { listEnvelope, paginate, PaginationQuery } from '../pagination';
import { checkoutSessionObject, checkoutSessionReadObject } from '../../resources/checkout-session';
import { IdParams, MetadataInput, withErrors } from '../http-schemas';

const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));

const CreateBody = Type.Object(
  {
    offer: Type.Optional(Type.String({ maxLength: 200, description: 'ofr_ id or the checkout link slug. Required unless line_items is sent.' })),
    line_items: Type.Optional(
      Type.Array(
        Type.Object(
          {
            price: Type.Optional(Type.String({ maxLength: 200, description: 'Alias of offer.' })),
            quantity: Type.Optional(
              Type.Integer({ minimum: 1, maximum: 999, description: "Alias of pack, with its rules: one of the offer's packs." }),
            ),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: 1, description: 'One item only; offer and pack take precedence.' },
      ),
    ),
    pack: Type.Optional(Type.Integer({ minimum: 1, maximum: 999, description: 'Units; the offer must have this pack.' })),
    currency: Type.Optional(Type.String({ maxLength: 10, description: "ISO 4217; one of the offer's prices." })),
    customer: Type.Optional(Type.String({ maxLength: 100, description: 'cust_ of a store customer.' })),
    customer_email: Type.Optional(Type.String({ maxLength: 254 })),
    customer_name: Type.Optional(Type.String({ minLength: 2, maxLength: 120 })),
    client_reference_id: Type.Optional(Type.String({ maxLength: 200 })),
    metadata: Type.Optional(MetadataInput),
    subscription_data: Type.Optional(Type.Object({ metadata: Type.Optional(MetadataInput) }, { additionalProperties: false })),
    discounts: Type.Optional(
      Type.Array(Type.Object({ coupon: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false }), { maxItems: 1 }),
    ),
    success_url: Type.Optional(Type.String({ maxLength: 2000, description: 'https://; {CHECKOUT_SESSION_ID} is replaced when redirecting.' })),
    cancel_url: Type.Optional(Type.String({ maxLength: 2000 })),
    redirect_delay: Type.Optional(Type.Integer({ minimum: 0, maximum: 30, description: 'Seconds, default 5.' })),
    expires_at: Type.Optional(Type.Integer({ description: 'Unix seconds, 30 minutes to 24 hours from now; default 24 hours.' })),
    locale: Type.Optional(literals(CHECKOUT_LOCALES)),
    // Any other text is the offer's mismatch (400 mode_mismatch), not a malformed parameter.
    mode: Type.Optional(
      Type.String({
        description: 'payment or subscription; derived from the offer when omitted; any other value: 400 mode_mismatch.',
        examples: ['payment'],
      }),
    ),
    allow_promotion_codes: Type.Optional(Type.Boolean({ description: 'Accepted and ignored.' })),
  },
  { additionalProperties: false },
);

const ListQuery = Type.Object(
  {
    customer: Type.Optional(Type.String()),
    client_reference_id: Type.Optional(Type.String()),
    status: Type.Optional(literals(SESSION_STATUSES)),
    payment_status: Type.Optional(literals(PAYMENT_STATUSES)),
    ...PaginationQuery,
  },
  { additionalProperties: false },
);

const SessionRef = Type.Ref('CheckoutSession');
const nowSeconds = () => Math.floor(Date.now() / 1000);

const checkoutSessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps;
  const deps = checkoutDepsOf(app.deps);

  app.post(
    '/checkout/sessions',
    {
      schema: {
        tags: ['checkout'],
        summary: 'Create a checkout session',
        body: CreateBody,
        response: withErrors({ 201: SessionRef }),
      },
    },
    async (request, reply) => {
      const { store } = authOf(request);
      const doc = await createCheckoutSession(deps, store, request.body);
      reply.status(201);
      return checkoutSessionObject(doc);
    },
  );

  app.get(
    '/checkout/sessions',
    {
      schema: {
        tags: ['checkout'],
        summary: 'List checkout sessions',
        querystring: ListQuery,
        response: withErrors({ 200: listEnvelope(SessionRef) }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const { customer, client_reference_id, status, payment_status, ...page } = request.query;
      const now = nowSeconds();
      // By the status the caller sees: an overdue session not yet marked counts as expired.
      const filter = { customer, client_reference_id, status: status as SessionStatus | undefined, payment_status };
      return paginate((window) => listCheckoutSessions(db, store._id, filter, now, window), {
        query: page,
        url: '/v1/checkout/sessions',
        toApi: (doc) => checkoutSessionReadObject(doc, now),
      });
    },
  );

  app.get(
    '/checkout/sessions/:id',
    { schema: { tags: ['checkout'], summary: 'Retrieve a checkout session', params: IdParams, response: withErrors({ 200: SessionRef }) } },
    async (request) => {
      const { store } = authOf(request);
      const doc = await findCheckoutSession(db, store._id, request.params.id);
      if (!doc) throw notFound('checkout session', request.params.id);
      return checkoutSessionReadObject(doc, nowSeconds());
    },
  );

  app.post(
    '/checkout/sessions/:id/expire',
    {
      schema: {
        tags: ['checkout'],
        summary: 'Expire an open checkout session',
        params: IdParams,
        response: withErrors({ 200: SessionRef }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      return expireCheckoutSession(deps, store, request.params.id);
    },
  );
};

export default checkoutSessionRoutes;
