// GET /v1/account: the store the key belongs to, and the key itself.
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf } from '../context';
import { NoQuery, Nullable, withErrors } from '../schemas/common';

export const Account = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('account'),
    name: Type.String(),
    slug: Nullable(Type.String()),
    country: Type.String(),
    currency: Type.String(),
    timezone: Type.String(),
    api_key: Type.Object({
      id: Type.String(),
      name: Type.String(),
      scopes: Type.Array(Type.Union([Type.Literal('read'), Type.Literal('write')])),
      default_version: Type.String(),
    }),
    api_version: Type.String(),
    livemode: Type.Boolean(),
  },
  { $id: 'Account' },
);
export type Account = Static<typeof Account>;

const accountRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/account',
    { schema: { tags: ['account'], summary: 'Retrieve the account', querystring: NoQuery, response: withErrors({ 200: Account }) } },
    async (request) => {
      const { store, apiKey, apiVersion } = authOf(request);
      return {
        id: store._id,
        object: 'account' as const,
        name: store.name,
        slug: store.slug,
        country: store.country,
        currency: store.currency,
        timezone: store.timezone,
        api_key: { id: apiKey._id, name: apiKey.name, scopes: apiKey.scopes, default_version: apiKey.version },
        api_version: apiVersion,
        livemode: true,
      };
    },
  );
};

export default accountRoutes;
