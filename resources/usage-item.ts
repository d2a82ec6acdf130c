// The usage item (the price of a meter on a subscription) as the API shows it (OpenAPI component
// `UsageItem`) and its builder.
import { Type, type Static } from '@sinclair/typebox';
import type { UsageItemDoc } from '../store/usage';
import { Nullable } from './common';

export const TierOutput = Type.Object({
  up_to: Nullable(Type.Number()),
  unit_amount: Type.Number(),
  flat_amount: Type.Optional(Nullable(Type.Integer())),
});

export const UsageItem = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('usage_item'),
    meter: Type.String(),
    subscription: Type.String(),
    offer: Nullable(Type.String()),
    currency: Type.String(),
    unit_amount: Type.Number(),
    included_units: Type.Number(),
    tiers: Nullable(Type.Array(TierOutput)),
    rounding: Type.Union([Type.Literal('up'), Type.Literal('nearest')]),
    billing_threshold: Nullable(Type.Integer()),
    label: Nullable(Type.String()),
    source: Type.String({ description: 'api for items set through the API; offer for items inherited from the offer.' }),
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'UsageItem' },
);
export type UsageItemObject = Static<typeof UsageItem>;

export function usageItemObject(doc: UsageItemDoc): UsageItemObject {
  return {
    id: doc._id,
    object: 'usage_item',
    meter: doc.meter,
    subscription: doc.subscription,
    offer: doc.offer,
    currency: doc.currency,
    unit_amount: doc.unit_amount,
    included_units: doc.included_units,
    tiers: doc.tiers,
    rounding: doc.rounding,
    billing_threshold: doc.billing_threshold,
    label: doc.label,
    source: doc.source,
    livemode: true,
    created: doc.created,
  };
}
