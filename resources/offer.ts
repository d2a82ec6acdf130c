// The offer as the API shows it (read-only): its schema (OpenAPI component `Offer`) and its builder,
// which names the product and the offer's hosted checkout link.
import { Type, type Static } from '@sinclair/typebox';
import type { OfferDoc, ProductDoc } from '../store/collections';
import { offerLinkUrl, type StoreAddressing } from '../domain/checkout';
import { Nullable } from './common';

const NullableInt = Nullable(Type.Integer());

const Tier = Type.Object({ up_to: Nullable(Type.Number()), unit_amount: Type.Number(), flat_amount: Type.Optional(Nullable(Type.Integer())) });

export const Offer = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('offer'),
    name: Type.String(),
    slug: Nullable(Type.String()),
    type: Type.Union([Type.Literal('one_off'), Type.Literal('recurring')]),
    active: Type.Boolean(),
    product: Type.Object({ id: Type.String(), name: Nullable(Type.String()) }),
    checkout_url: Type.String(),
    // Where the thank-you page continues when the session has no success_url (before the store's default).
    success_url: Nullable(Type.String()),
    prices: Type.Array(Type.Object({ currency: Type.String(), amount: Type.Integer(), default: Type.Boolean() })),
    billing_cycle: Nullable(Type.String()),
    custom_billing_days: NullableInt,
    trial_days: NullableInt,
    cycle_limit: NullableInt,
    packs: Type.Array(Type.Integer()),
    max_installments: NullableInt,
    usage: Type.Array(
      Type.Object({
        meter: Type.String(),
        currency: Type.String(),
        unit_amount: Type.Number(),
        included_units: Type.Number(),
        tiers: Nullable(Type.Array(Tier)),
        rounding: Type.String(),
        billing_threshold: NullableInt,
        label: Nullable(Type.String()),
      }),
    ),
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'Offer' },
);
export type OfferObject = Static<typeof Offer>;

export function offerObject(doc: OfferDoc, product: ProductDoc | null, links: { store: StoreAddressing; checkoutUrl: string }): OfferObject {
  return {
    id: doc._id,
    object: 'offer',
    name: doc.name,
    slug: doc.slug,
    type: doc.type,
    active: doc.active,
    product: product ? { id: product._id, name: product.name } : { id: doc.product_id, name: null },
    checkout_url: offerLinkUrl(links.store, doc, links.checkoutUrl),
    success_url: doc.success_url ?? null,
    prices: doc.prices,
    billing_cycle: doc.billing_cycle,
    custom_billing_days: doc.custom_billing_days,
    trial_days: doc.trial_days,
    cycle_limit: doc.cycle_limit,
    packs: doc.packs,
    max_installments: doc.max_installments,
    usage: doc.usage,
    livemode: true,
    created: doc.created,
  };
}
