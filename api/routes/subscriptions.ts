// /v1/subscriptions: list (customer, status), retrieve, update (client_reference_id, metadata,
// scheduling cancellation), cancel now, pause, resume, reactivate, change_offer. Every action is a
// Temporal update on the subscription's workflow, so actions on one subscription are serialized and
// the answer is the already-updated subscription; a state refusal is 400 provider_error.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { UpdateDefinition } from '@temporalio/client';
import { findOfferByIdOrSlug } from '../../store/offers';
import { runSubscriptionAction } from '../../services/subscriptions/subscriptions';
import { findSubscription, listSubscriptions, updateSubscriptionReference, type SubscriptionDoc } from '../../store/subscriptions';
import { ApiError, invalid, notFound } from '../../domain/errors';
import { boundedKey, ID_LENGTH_MAX } from '../../domain/bounded-keys';
import { encodeMetadata, normalizeMetadata } from '../../domain/metadata';
import { CANCELLATION_REASONS, SUBSCRIPTION_STATUSES, type CancellationReason } from '../../domain/subscriptions';
import {
  cancelUpdate,
  changeOfferUpdate,
  pauseUpdate,
  reactivateUpdate,
  resumeUpdate,
  scheduleCancellationUpdate,
} from '../../workflows/subscription/messages';
import type { Database } from '../../store/database';
import { authOf, eventRequestOf, type RouteApp } from '../context';
import { listEnvelope, paginate, PaginationQuery } from '../pagination';
import { Nullable } from '../../resources/common';
import { IdParams, MetadataInput, withErrors } from '../http-schemas';
import { subscriptionObject, type SubscriptionObject } from '../../resources/subscription';

const NullableText = Nullable(Type.String());
const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));

const SubscriptionRef = Type.Ref('Subscription');

const ListQuery = Type.Object(
  {
    customer: Type.Optional(Type.String()),
    status: Type.Optional(literals(SUBSCRIPTION_STATUSES)),
    ...PaginationQuery,
  },
  { additionalProperties: false },
);

// Reasons outside the spec's list are accepted and ignored (kept null), as the spec says.
const CancellationDetailsInput = Type.Object(
  {
    reason: Type.Optional(NullableText),
    comment: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  },
  { additionalProperties: false },
);

const UpdateBody = Type.Object(
  {
    client_reference_id: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    metadata: Type.Optional(MetadataInput),
    cancel_at_period_end: Type.Optional(
      Type.Boolean({ description: 'true schedules cancellation at current_period_end; false is refused (use reactivate).' }),
    ),
    cancellation_details: Type.Optional(CancellationDetailsInput),
  },
  { additionalProperties: false },
);

const DeleteQuery = Type.Object(
  { cancellation_details: Type.Optional(Type.Object({ reason: Type.Optional(NullableText) }, { additionalProperties: false })) },
  { additionalProperties: false },
);

const PauseBody = Type.Object({ reason: Type.Optional(Nullable(Type.String({ maxLength: 200 }))) }, { additionalProperties: false });
const NoBody = Type.Object({}, { additionalProperties: false });
const ChangeOfferBody = Type.Object(
  { offer: Type.String({ description: 'ofr_ id of the new offer (a slug is not accepted).' }) },
  { additionalProperties: false },
);

function reasonOf(value: string | null | undefined): CancellationReason | null {
  return value && (CANCELLATION_REASONS as readonly string[]).includes(value) ? (value as CancellationReason) : null;
}

/** Actions without a body may be sent with none at all. */
async function emptyBodyAsObject(request: FastifyRequest) {
  if (request.body === undefined || request.body === null) request.body = {};
}

const subscriptionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  readSubscriptionRoutes(app);
  updateSubscriptionRoute(app);
  cancelSubscriptionRoute(app);
  pauseResumeRoutes(app);
  reactivateRoute(app);
  changeOfferRoute(app);
};

async function subscriptionOrNotFound(db: Database, storeId: string, id: string): Promise<SubscriptionDoc> {
  const doc = await findSubscription(db, storeId, id);
  if (!doc) throw notFound('subscription', id);
  return doc;
}

/**
 * Route hook (preValidation): an unknown subscription answers 404 before its body or query is validated, as
 * the spec orders the checks, and after the Idempotency-Key is claimed, so the 404 is kept under the key.
 */
export function subscriptionMustExist(db: Database) {
  return async (request: FastifyRequest) => {
    const { id } = request.params as { id: string };
    found.set(request, await subscriptionOrNotFound(db, authOf(request).store._id, id));
  };
}

// What subscriptionMustExist read, so the handler does not read it again; an entry lives as long as its request.
const found = new WeakMap<FastifyRequest, SubscriptionDoc>();

/** The subscription the route's subscriptionMustExist hook found (read again for a route without the hook). */
export async function subscriptionOf(db: Database, request: FastifyRequest): Promise<SubscriptionDoc> {
  return found.get(request) ?? subscriptionOrNotFound(db, authOf(request).store._id, (request.params as { id: string }).id);
}

/**
 * Updates are identified by the request's Idempotency-Key and its record's start, so a retried call is one
 * update while the same key past its 24 hours is a new action (Temporal remembers update ids for the whole run).
 */
function updateIdOf(request: FastifyRequest, name: string): string | undefined {
  const held = request.idempotency;
  return held && !held.replayed ? boundedKey(`${name}/${held.created}`, held.key, ID_LENGTH_MAX) : undefined;
}

function actionDepsOf(app: RouteApp) {
  const { db, config, temporal } = app.deps;
  return { db, temporal, taskQueue: config.taskQueue };
}

/** GET the list (customer and status filters) and one subscription. */
function readSubscriptionRoutes(app: RouteApp): void {
  const { db } = app.deps;
  app.get(
    '/subscriptions',
    {
      schema: {
        tags: ['subscriptions'],
        summary: 'List subscriptions',
        querystring: ListQuery,
        response: withErrors({ 200: listEnvelope(SubscriptionRef) }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const { customer, status, ...page } = request.query;
      return paginate((window) => listSubscriptions(db, store._id, { customer, status }, window), {
        query: page,
        url: '/v1/subscriptions',
        toApi: subscriptionObject,
      });
    },
  );

  app.get(
    '/subscriptions/:id',
    { schema: { tags: ['subscriptions'], summary: 'Retrieve a subscription', params: IdParams, response: withErrors({ 200: SubscriptionRef }) } },
    async (request) => {
      const { store } = authOf(request);
      return subscriptionObject(await subscriptionOrNotFound(db, store._id, request.params.id));
    },
  );
}

/** POST reference and metadata (saved first), then a scheduled cancellation through the workflow. */
function updateSubscriptionRoute(app: RouteApp): void {
  const { db } = app.deps;
  const actionDeps = actionDepsOf(app);
  app.post(
    '/subscriptions/:id',
    {
      preValidation: subscriptionMustExist(db),
      schema: {
        tags: ['subscriptions'],
        summary: 'Update a subscription (reference, metadata, scheduled cancellation)',
        params: IdParams,
        body: UpdateBody,
        response: withErrors({ 200: SubscriptionRef }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const body = request.body;
      if (body.cancel_at_period_end === false) {
        throw invalid(
          'cancel_at_period_end',
          'cancel_at_period_end false is not accepted: use POST /v1/subscriptions/{id}/reactivate to undo a scheduled cancellation.',
        );
      }
      const metadata = body.metadata !== undefined ? encodeMetadata(normalizeMetadata(body.metadata)) : undefined;
      const current = await subscriptionOf(db, request);
      // The reference and metadata are saved first and stay saved if the scheduling is refused.
      const set: { client_reference_id?: string | null; metadata?: typeof metadata } = {};
      if (body.client_reference_id !== undefined) set.client_reference_id = body.client_reference_id;
      if (metadata !== undefined) set.metadata = metadata;
      const saved = (await updateSubscriptionReference(db, store._id, current._id, set)) ?? current;
      if (body.cancel_at_period_end !== true) return subscriptionObject(saved);
      return runSubscriptionAction(
        actionDeps,
        saved,
        scheduleCancellationUpdate,
        {
          reason: reasonOf(body.cancellation_details?.reason),
          comment: body.cancellation_details?.comment ?? null,
          request: eventRequestOf(request),
        },
        updateIdOf(request, 'schedule_cancellation'),
      );
    },
  );
}

/** The schema every action shares: the id in the path, the subscription as the action left it. */
function actionSchema<S extends object>(summary: string, input: S) {
  return { tags: ['subscriptions'], summary, params: IdParams, ...input, response: withErrors({ 200: SubscriptionRef }) };
}

/** Runs `update` on the subscription the route's hook found, as the one update of the request's Idempotency-Key. */
async function act<A>(app: RouteApp, request: FastifyRequest, update: UpdateDefinition<SubscriptionObject, [A]>, arg: A, name: string) {
  const doc = await subscriptionOf(app.deps.db, request);
  return runSubscriptionAction(actionDepsOf(app), doc, update, arg, updateIdOf(request, name));
}

/** DELETE: cancel now, through the workflow. */
function cancelSubscriptionRoute(app: RouteApp): void {
  app.delete(
    '/subscriptions/:id',
    { preValidation: subscriptionMustExist(app.deps.db), schema: actionSchema('Cancel a subscription now', { querystring: DeleteQuery }) },
    async (request) => {
      const reason = reasonOf(request.query.cancellation_details?.reason);
      return act(app, request, cancelUpdate, { reason, comment: null, request: eventRequestOf(request) }, 'cancel');
    },
  );
}

/** POST pause and resume, through the workflow. */
function pauseResumeRoutes(app: RouteApp): void {
  const preValidation = [subscriptionMustExist(app.deps.db), emptyBodyAsObject];
  app.post('/subscriptions/:id/pause', { preValidation, schema: actionSchema('Pause a subscription', { body: PauseBody }) }, async (request) =>
    act(app, request, pauseUpdate, { reason: request.body.reason ?? null, request: eventRequestOf(request) }, 'pause'),
  );
  app.post('/subscriptions/:id/resume', { preValidation, schema: actionSchema('Resume a paused subscription', { body: NoBody }) }, async (request) =>
    act(app, request, resumeUpdate, { request: eventRequestOf(request) }, 'resume'),
  );
}

/** POST reactivate: undo a scheduled cancellation, or charge a new cycle for an ended subscription. */
function reactivateRoute(app: RouteApp): void {
  app.post(
    '/subscriptions/:id/reactivate',
    {
      preValidation: [subscriptionMustExist(app.deps.db), emptyBodyAsObject],
      schema: actionSchema('Undo a scheduled cancellation, or reactivate a canceled or expired subscription', { body: NoBody }),
    },
    async (request) => act(app, request, reactivateUpdate, { request: eventRequestOf(request) }, 'reactivate'),
  );
}

/** POST change_offer: another offer (by ofr_ id only) from the next renewal. */
function changeOfferRoute(app: RouteApp): void {
  const { db } = app.deps;
  app.post(
    '/subscriptions/:id/change_offer',
    {
      preValidation: subscriptionMustExist(db),
      schema: actionSchema('Move a subscription to another offer of the same product or product family', { body: ChangeOfferBody }),
    },
    async (request) => {
      const offerId = request.body.offer;
      // Only an ofr_ id: a slug (or anything else) is an unknown offer.
      const offer = offerId.startsWith('ofr_') ? await findOfferByIdOrSlug(db, authOf(request).store._id, offerId) : null;
      if (!offer) throw new ApiError('resource_missing', `No such offer: '${offerId}'`, { param: 'offer' });
      return act(app, request, changeOfferUpdate, { offer: offer._id, request: eventRequestOf(request) }, 'change_offer');
    },
  );
}

export default subscriptionRoutes;
