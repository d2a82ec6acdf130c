// GET /v1/account: the store the key belongs to, and the key itself.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf } from '../context';
import { Account, accountObject } from '../../resources/account';
import { NoQuery, withErrors } from '../http-schemas';

const accountRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/account',
    { schema: { tags: ['account'], summary: 'Retrieve the account', querystring: NoQuery, response: withErrors({ 200: Account }) } },
    async (request) => {
      const { store, apiKey, apiVersion } = authOf(request);
      return accountObject(store, apiKey, apiVersion);
    },
  );
};

export default accountRoutes;
