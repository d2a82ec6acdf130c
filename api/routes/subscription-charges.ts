// /v1/subscriptions/{id}/charges and /v1/subscription_charges/{id}: one-off charges on the saved
// card. The Idempotency-Key is mandatory and permanent: refusals replay through the common
// idempotency layer, and a charge, found by its namespaced key, answers every later request as it is now.
// The request that starts a charge never gets 409: past its wait it answers the charge as it stands (pending).
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { startCharge, type StartChargeResult } from '../../services/charges/charges';
import { findCharge, listSubscriptionCharges } from '../../store/subscription-charges';
import {
  CHARGE_DESCRIPTION_MAX,
  CHARGE_LINE_QUANTITY_MAX,
  CHARGE_LINE_UNIT_AMOUNT_MAX,
  CHARGE_LINES_MAX,
  merchantChargeKey,
} from '../../domain/charges';
import { ApiError, notFound } from '../../domain/errors';
import { authOf, type RouteApp } from '../context';
import { listEnvelope, paginate, PaginationQuery } from '../pagination';
import { readIdempotencyKey, requestFingerprint } from '../plugins/idempotency';
import { Nullable } from '../../resources/common';
import { IdParams, MetadataInput, withErrors } from '../http-schemas';
import { CHARGE_STATUSES, subscriptionChargeObject } from '../../resources/subscription-charge';
import { subscriptionMustExist, subscriptionOf } from './subscriptions';

const ChargeRef = Type.Ref('SubscriptionCharge');

const ChargeBody = Type.Object(
  {
    amount: Type.Integer({ description: 'Total in the minor unit; at least one unit of the currency.' }),
    currency: Type.Optional(Type.String({ description: "Must equal the subscription's currency." })),
    description: Type.Optional(Nullable(Type.String({ maxLength: CHARGE_DESCRIPTION_MAX }))),
    lines: Type.Optional(
      Type.Array(
        Type.Object(
          {
            description: Type.String({ minLength: 1, maxLength: CHARGE_DESCRIPTION_MAX }),
            // As the spec types them: any integers (a negative unit_amount is a discount line); the sum is what is checked.
            quantity: Type.Optional(Type.Integer({ default: 1, minimum: -CHARGE_LINE_QUANTITY_MAX, maximum: CHARGE_LINE_QUANTITY_MAX })),
            unit_amount: Type.Integer({ minimum: -CHARGE_LINE_UNIT_AMOUNT_MAX, maximum: CHARGE_LINE_UNIT_AMOUNT_MAX }),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: CHARGE_LINES_MAX },
      ),
    ),
    metadata: Type.Optional(MetadataInput),
  },
  { additionalProperties: false },
);

const ListQuery = Type.Object(
  { status: Type.Optional(Type.Union(CHARGE_STATUSES.map((s) => Type.Literal(s)))), ...PaginationQuery },
  { additionalProperties: false },
);

/** The HTTP answer of a charge, first time or replayed: 201/200 (pending while undecided), 402 for a decline, 400 for a refusal. */
function answer(reply: FastifyReply, result: StartChargeResult) {
  const headers: Record<string, string> = {};
  if (result.replayed) {
    headers['Idempotent-Replayed'] = 'true';
    if (result.originalRequestId) headers['Original-Request-Id'] = result.originalRequestId;
  }
  const { charge } = result;
  if (result.outcome === 'declined') {
    throw new ApiError(charge.failure_code ?? 'declined', charge.failure_message ?? 'The card was declined.', {
      status: 402,
      type: 'card_error',
      extra: { subscription_charge: charge },
      headers,
    });
  }
  if (result.outcome === 'refused') {
    throw new ApiError(charge.failure_code ?? 'provider_error', charge.failure_message ?? 'The provider refused the charge.', {
      extra: { subscription_charge: charge },
      headers,
    });
  }
  reply.headers(headers);
  reply.status(result.replayed ? 200 : 201);
  return charge;
}

const subscriptionChargeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  createChargeRoute(app);
  readChargeRoutes(app);
};

/** POST a charge of the saved card under the caller's Idempotency-Key (required). */
function createChargeRoute(app: RouteApp): void {
  const { db, config, temporal, provider, testProvider } = app.deps;
  app.post(
    '/subscriptions/:id/charges',
    {
      config: { permanentIdempotency: true },
      // Rule 1: the key is checked before anything else, the body and its content type included (parsing comes after).
      preParsing: async (request) => {
        if (readIdempotencyKey(request.headers) === null) {
          throw new ApiError('idempotency_key_required', 'Subscription charges need an Idempotency-Key header.', { param: 'Idempotency-Key' });
        }
      },
      // Then, the key claimed, an unknown subscription is 404 (kept under the key) before the body is validated.
      preValidation: subscriptionMustExist(db),
      schema: {
        tags: ['subscription charges'],
        summary: "Charge the subscription's saved card now, outside the cycle",
        params: IdParams,
        body: ChargeBody,
        response: withErrors({ 200: ChargeRef, 201: ChargeRef, 402: Type.Ref('Error') }),
      },
    },
    async (request, reply) => {
      const { store } = authOf(request);
      const key = readIdempotencyKey(request.headers)!;
      const body = request.body;
      const result = await startCharge(
        // The connections: an amount above the connection's own maximum is refused here, before any request.
        { db, temporal, taskQueue: config.taskQueue, provider, testProvider },
        {
          storeId: store._id,
          subscriptionId: request.params.id,
          key: merchantChargeKey(key),
          amount: body.amount,
          currency: body.currency,
          description: body.description,
          lines: body.lines,
          metadata: body.metadata,
          source: 'api',
          billingReason: 'manual',
          fingerprint: requestFingerprint(request.method, request.url, request.body),
          request: { id: request.id, idempotency_key: key },
          store,
          subscription: await subscriptionOf(db, request),
          // Below the server's request timeout: a charge still running past it answers pending and goes on.
          maxWaitMs: config.chargeWaitMs,
        },
      );
      return answer(reply, result);
    },
  );
}

/** GET a subscription's charges, and one charge. */
function readChargeRoutes(app: RouteApp): void {
  const { db } = app.deps;
  app.get(
    '/subscriptions/:id/charges',
    {
      preValidation: subscriptionMustExist(db),
      schema: {
        tags: ['subscription charges'],
        summary: "List a subscription's charges",
        params: IdParams,
        querystring: ListQuery,
        response: withErrors({ 200: listEnvelope(ChargeRef) }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const { status, ...page } = request.query;
      return paginate((window) => listSubscriptionCharges(db, store._id, request.params.id, { status }, window), {
        query: page,
        url: `/v1/subscriptions/${request.params.id}/charges`,
        toApi: subscriptionChargeObject,
      });
    },
  );

  app.get(
    '/subscription_charges/:id',
    {
      schema: {
        tags: ['subscription charges'],
        summary: 'Retrieve a subscription charge',
        params: IdParams,
        response: withErrors({ 200: ChargeRef }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const doc = await findCharge(db, store._id, request.params.id);
      if (!doc) throw notFound('subscription_charge', request.params.id);
      return subscriptionChargeObject(doc);
    },
  );
}

export default subscriptionChargeRoutes;
