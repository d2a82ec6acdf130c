// The checkout session as the API shows it: its schema (OpenAPI component `CheckoutSession`), its
// builder, and the reading builder that shows an overdue open session as expired.
import { Type, type Static } from '@sinclair/typebox';
import { decodeMetadata } from '../domain/metadata';
import { checkoutPageUrl, effectiveStatus, PAYMENT_STATUSES, SESSION_STATUSES } from '../domain/checkout';
import type { CheckoutSessionDoc } from '../store/checkout-sessions';
import { MetadataOutput, Nullable } from './common';

const NullableText = Nullable(Type.String());
const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));

export const CheckoutSession = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('checkout.session'),
    status: literals(SESSION_STATUSES),
    payment_status: literals(PAYMENT_STATUSES),
    url: NullableText,
    mode: Nullable(literals(['payment', 'subscription'] as const)),
    offer: Type.Object({ id: Type.String(), name: Type.String() }),
    pack: Nullable(Type.Integer()),
    currency: NullableText,
    amount_total: Nullable(Type.Integer()),
    customer: NullableText,
    customer_email: NullableText,
    customer_name: NullableText,
    client_reference_id: NullableText,
    metadata: MetadataOutput,
    subscription_data: Type.Object({ metadata: MetadataOutput }),
    discounts: Type.Array(Type.Object({ coupon: Type.String() })),
    success_url: NullableText,
    cancel_url: NullableText,
    redirect_delay: Type.Integer(),
    locale: NullableText,
    order: NullableText,
    subscription: NullableText,
    expires_at: Type.Integer(),
    completed_at: Nullable(Type.Integer()),
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'CheckoutSession' },
);
export type CheckoutSessionObject = Static<typeof CheckoutSession>;

export function checkoutSessionObject(doc: CheckoutSessionDoc): CheckoutSessionObject {
  return {
    id: doc._id,
    object: 'checkout.session',
    status: doc.status,
    payment_status: doc.payment_status,
    url: doc.status === 'open' ? checkoutPageUrl(doc.checkout_base, doc._id) : null,
    mode: doc.mode,
    offer: { id: doc.offer.id, name: doc.offer.name },
    pack: doc.pack,
    currency: doc.currency,
    amount_total: doc.amount_total,
    customer: doc.customer,
    customer_email: doc.customer_email,
    customer_name: doc.customer_name,
    client_reference_id: doc.client_reference_id,
    metadata: decodeMetadata(doc.metadata),
    subscription_data: { metadata: decodeMetadata(doc.subscription_metadata) },
    discounts: doc.coupon ? [{ coupon: doc.coupon.code }] : [],
    success_url: doc.success_url,
    cancel_url: doc.cancel_url,
    redirect_delay: doc.redirect_delay,
    locale: doc.locale,
    order: doc.order,
    subscription: doc.subscription,
    expires_at: doc.expires_at,
    completed_at: doc.completed_at,
    livemode: doc.livemode,
    created: doc.created,
  };
}

/** The API's reads: an open session past its deadline is expired (url null) before the workflow marks it. */
export function checkoutSessionReadObject(doc: CheckoutSessionDoc, nowSeconds: number): CheckoutSessionObject {
  const status = effectiveStatus(doc, nowSeconds);
  return checkoutSessionObject(status === doc.status ? doc : { ...doc, status });
}
