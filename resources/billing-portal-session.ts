// The customer portal sign-in link as the API shows it: its schema (OpenAPI component
// `BillingPortalSession`) and its builder.
import { Type, type Static } from '@sinclair/typebox';
import type { PortalLinkDoc } from '../store/portal-sessions';
import { Nullable } from './common';

export const BillingPortalSession = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('billing_portal.session'),
    url: Type.String({ description: 'Sign-in link: valid 15 minutes, works once.' }),
    customer: Type.String(),
    return_url: Nullable(Type.String()),
    expires_at: Type.Integer(),
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'BillingPortalSession' },
);
export type BillingPortalSessionObject = Static<typeof BillingPortalSession>;

/** `url` carries the token, which is not stored: the object can be built only when the link is created. */
export function portalLinkObject(doc: PortalLinkDoc, url: string): BillingPortalSessionObject {
  return {
    id: doc._id,
    object: 'billing_portal.session',
    url,
    customer: doc.customer,
    return_url: doc.return_url,
    expires_at: doc.expires_at,
    livemode: doc.livemode,
    created: doc.created,
  };
}
