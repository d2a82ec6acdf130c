// The subscription charge as the API shows it: its schema (OpenAPI component `SubscriptionCharge`)
// and its builder; the charge workflow returns the same object to the route that started it.
import { Type, type Static } from '@sinclair/typebox';
import { decodeMetadata } from '../domain/metadata';
import type { SubscriptionChargeDoc } from '../store/subscription-charges';
import { MetadataOutput, Nullable } from './common';

const NullableText = Nullable(Type.String());
export const CHARGE_STATUSES = ['pending', 'succeeded', 'failed'] as const;

const ChargeLineOutput = Type.Object({ description: Type.String(), quantity: Type.Integer(), unit_amount: Type.Integer(), amount: Type.Integer() });

export const SubscriptionCharge = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('subscription_charge'),
    status: Type.Union(CHARGE_STATUSES.map((s) => Type.Literal(s))),
    subscription: Type.String(),
    customer: NullableText,
    amount: Type.Integer(),
    currency: Type.String(),
    description: NullableText,
    lines: Type.Array(ChargeLineOutput),
    order: NullableText,
    transaction: NullableText,
    failure_code: NullableText,
    failure_message: NullableText,
    source: Type.Union([Type.Literal('api'), Type.Literal('dashboard'), Type.Literal('usage')]),
    metadata: MetadataOutput,
    livemode: Type.Boolean(),
    created: Type.Integer(),
    settled_at: Nullable(Type.Integer()),
  },
  { $id: 'SubscriptionCharge' },
);
export type SubscriptionChargeObject = Static<typeof SubscriptionCharge>;

export function subscriptionChargeObject(doc: SubscriptionChargeDoc): SubscriptionChargeObject {
  return {
    id: doc._id,
    object: 'subscription_charge',
    status: doc.status,
    subscription: doc.subscription,
    customer: doc.customer,
    amount: doc.amount,
    currency: doc.currency,
    description: doc.description,
    lines: doc.lines,
    order: doc.order,
    transaction: doc.transaction,
    failure_code: doc.failure_code,
    failure_message: doc.failure_message,
    source: doc.source,
    metadata: decodeMetadata(doc.metadata),
    livemode: doc.livemode,
    created: doc.created,
    settled_at: doc.settled_at,
  };
}
