// /v1/billing_portal/sessions: a single sign-in link to the customer portal, valid 15 minutes, at
// the store's portal address (custom domain, else {portal_url}/{slug}).
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { findCustomer } from '../../store/customers';
import { createPortalLink } from '../../store/portal-sessions';
import { portalAddress } from '../../domain/checkout';
import { ApiError, notFound } from '../../domain/errors';
import { authOf } from '../context';
import { portalLinkObject } from '../../resources/billing-portal-session';
import { Nullable } from '../../resources/common';
import { withErrors } from '../http-schemas';

const CreateBody = Type.Object(
  {
    customer: Type.String({ maxLength: 100, description: 'cust_ of a store customer.' }),
    return_url: Type.Optional(Nullable(Type.String({ maxLength: 2000, description: 'Accepted and echoed.' }))),
  },
  { additionalProperties: false },
);

const billingPortalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, config } = app.deps;

  app.post(
    '/billing_portal/sessions',
    {
      // The answer carries the sign-in URL (a credential for 15 minutes): a replay copy is kept sealed.
      config: { secretResponse: true },
      schema: {
        tags: ['billing_portal'],
        summary: 'Create a customer portal sign-in link',
        body: CreateBody,
        response: withErrors({ 200: Type.Ref('BillingPortalSession') }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const { customer: customerId, return_url } = request.body;
      const customer = await findCustomer(db, store._id, customerId);
      if (!customer) throw notFound('customer', customerId, 'customer');
      if (!store.portal_enabled) throw new ApiError('portal_disabled', 'The customer portal is turned off in the store settings.');
      const address = portalAddress(store, config.portalUrl);
      if (!address) {
        throw new ApiError('portal_unavailable', 'The store has no portal address: it needs a slug or an active custom domain.');
      }
      const link = await createPortalLink(db, { storeId: store._id, customer: customer._id, address, returnUrl: return_url ?? null });
      return portalLinkObject(link.doc, link.url);
    },
  );
};

export default billingPortalRoutes;
