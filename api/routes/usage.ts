// /v1/subscriptions/{id}/usage_items (set, list, delete the price of a meter on a subscription) and
// /v1/subscriptions/{id}/usage (the 12 most recent usage periods, the open one computed now).
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { TIERS_MAX, TIERS_MIN } from '../../domain/pricing';
import { findUsageState } from '../../store/usage';
import { listSubscriptionUsageItems, putUsageItem, removeUsageItem } from '../../services/usage/items';
import { subscriptionUsage } from '../../services/usage/periods';
import { authOf } from '../context';
import { listEnvelope } from '../pagination';
import { Nullable } from '../../resources/common';
import { IdParams, withErrors } from '../http-schemas';
import { usageItemObject } from '../../resources/usage-item';
import { subscriptionMustExist } from './subscriptions';

const TierInput = Type.Object(
  {
    // null first: with type coercion on, a number branch tried first would turn null into 0.
    up_to: Type.Optional(Type.Union([Type.Null(), Type.Number({ exclusiveMinimum: 0 }), Type.Literal('inf')])),
    unit_amount: Type.Number({ minimum: 0 }),
    flat_amount: Type.Optional(Type.Union([Type.Null(), Type.Integer({ minimum: 0 })])),
  },
  { additionalProperties: false },
);

const ItemBody = Type.Object(
  {
    meter: Type.String({ description: 'mtr_ of the store.' }),
    unit_amount: Type.Optional(
      Type.Number({
        minimum: 0,
        description: 'Minor unit, fractions allowed; required unless tiers are sent; beside tiers it is kept but not part of the calculation.',
      }),
    ),
    included_units: Type.Optional(Type.Number({ minimum: 0, description: 'Default 0.' })),
    tiers: Type.Optional(
      Nullable(
        Type.Array(TierInput, { minItems: TIERS_MIN, maxItems: TIERS_MAX, description: 'Ascending up_to; the last has up_to null (or inf).' }),
      ),
    ),
    rounding: Type.Optional(Type.Union([Type.Literal('up'), Type.Literal('nearest')], { description: 'Default up.' })),
    billing_threshold: Type.Optional(Nullable(Type.Integer({ description: 'Minor unit; the lowest among the items closes the period.' }))),
    label: Type.Optional(Nullable(Type.String({ maxLength: 120 }))),
    currency: Type.Optional(Type.String({ description: "Always the subscription's; another is 400 currency_mismatch." })),
  },
  { additionalProperties: false },
);

const ItemParams = Type.Object({ id: Type.String(), itemId: Type.String() });

const Deleted = Type.Object({ id: Type.String(), object: Type.Literal('usage_item'), deleted: Type.Literal(true) });

const usageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, config, temporal } = app.deps;
  const deps = { db, temporal, taskQueue: config.taskQueue, config };

  app.post(
    '/subscriptions/:id/usage_items',
    {
      preValidation: subscriptionMustExist(db),
      schema: {
        tags: ['usage'],
        summary: 'Set the price of a meter on a subscription (the same meter again replaces the item)',
        params: IdParams,
        body: ItemBody,
        response: withErrors({ 200: Type.Ref('UsageItem'), 201: Type.Ref('UsageItem') }),
      },
    },
    async (request, reply) => {
      const { store } = authOf(request);
      const body = request.body;
      const tiers = body.tiers?.map((t) => ({ ...t, up_to: t.up_to === 'inf' ? null : t.up_to }));
      const { item, created } = await putUsageItem(deps, store._id, request.params.id, { ...body, tiers });
      reply.status(created ? 201 : 200);
      return usageItemObject(item);
    },
  );

  app.get(
    '/subscriptions/:id/usage_items',
    {
      schema: {
        tags: ['usage'],
        summary: "List the subscription's usage items (all of them, newest first)",
        params: IdParams,
        response: withErrors({ 200: listEnvelope(Type.Ref('UsageItem')) }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const items = await listSubscriptionUsageItems(db, store._id, request.params.id);
      return {
        object: 'list' as const,
        url: `/v1/subscriptions/${request.params.id}/usage_items`,
        has_more: false,
        data: items.map(usageItemObject),
      };
    },
  );

  app.delete(
    '/subscriptions/:id/usage_items/:itemId',
    {
      schema: {
        tags: ['usage'],
        summary: 'Remove a usage item',
        // Named here: the derived name would keep the path parameter's capital letter.
        operationId: 'delete_subscriptions_by_id_usage_items_by_item_id',
        params: ItemParams,
        response: withErrors({ 200: Deleted }),
      },
    },
    async (request) => removeUsageItem(deps, authOf(request).store._id, request.params.id, request.params.itemId),
  );

  app.get(
    '/subscriptions/:id/usage',
    {
      schema: {
        tags: ['usage'],
        summary: 'The 12 most recent usage periods, newest first (the open one computed now)',
        params: IdParams,
        response: withErrors({ 200: listEnvelope(Type.Ref('UsagePeriod')) }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const periods = await subscriptionUsage(db, store._id, request.params.id);
      const state = await findUsageState(db, store._id, request.params.id);
      return {
        object: 'list' as const,
        url: `/v1/subscriptions/${request.params.id}/usage`,
        has_more: (state?.periods.length ?? 0) > periods.length,
        data: periods,
      };
    },
  );
};

export default usageRoutes;
