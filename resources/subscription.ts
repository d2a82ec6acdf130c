// The one description of a subscription: its lifecycle as the subscription's workflow holds it
// (subscriptionLife) and the object the API shows (schema: OpenAPI component `Subscription`), built on
// that lifecycle; the same object answers actions, fills events and is returned by workflow updates.
import { Type, type Static } from '@sinclair/typebox';
import { decodeMetadata } from '../domain/metadata';
import { SUBSCRIPTION_STATUSES, type SubscriptionLife } from '../domain/subscriptions';
import { BILLING_CYCLES } from '../domain/billing-periods';
import type { SubscriptionDoc } from '../store/subscriptions';
import { MetadataOutput, Nullable } from './common';

const NullableText = Nullable(Type.String());
const NullableInt = Nullable(Type.Integer());
const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));

export const Subscription = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('subscription'),
    status: literals(SUBSCRIPTION_STATUSES),
    customer: NullableText,
    customer_email: NullableText,
    offer: Nullable(Type.Object({ id: Type.String(), name: Type.String() })),
    product: Nullable(Type.Object({ id: Type.String(), name: Type.String() })),
    billing_cycle: Nullable(literals(BILLING_CYCLES)),
    custom_billing_days: NullableInt,
    currency: NullableText,
    amount: NullableInt,
    current_period_start: NullableInt,
    current_period_end: NullableInt,
    next_billing_at: NullableInt,
    trial_start: NullableInt,
    trial_end: NullableInt,
    cycles_completed: Type.Integer(),
    cycle_limit: NullableInt,
    cancel_at_period_end: Type.Boolean(),
    canceled_at: NullableInt,
    ended_at: NullableInt,
    cancellation_details: Nullable(Type.Object({ reason: NullableText, comment: NullableText, source: Type.String() })),
    default_payment_method: Nullable(Type.Object({ id: Type.String(), type: Type.Literal('card') })),
    installments: NullableInt,
    past_due_details: Nullable(
      Type.Object({
        attempts: Type.Integer(),
        next_retry_at: NullableInt,
        since: Type.Integer(),
        /** The last failed attempt's decline code; `authentication_required`: the buyer was asked to confirm the payment. */
        failure_code: NullableText,
      }),
    ),
    checkout_session: NullableText,
    client_reference_id: NullableText,
    metadata: MetadataOutput,
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'Subscription' },
);
export type SubscriptionObject = Static<typeof Subscription>;

/** The lifecycle fields of a stored subscription, as its workflow (their one writer) holds them. */
export function subscriptionLife(doc: SubscriptionDoc): SubscriptionLife {
  return {
    status: doc.status,
    offer: doc.offer,
    product: doc.product,
    product_family: doc.product_family,
    billing_cycle: doc.billing_cycle,
    custom_billing_days: doc.custom_billing_days,
    currency: doc.currency,
    amount: doc.amount,
    current_period_start: doc.current_period_start,
    current_period_end: doc.current_period_end,
    next_billing_at: doc.next_billing_at,
    trial_start: doc.trial_start,
    trial_end: doc.trial_end,
    cycles_completed: doc.cycles_completed,
    cycle_limit: doc.cycle_limit,
    cancel_at_period_end: doc.cancel_at_period_end,
    canceled_at: doc.canceled_at,
    ended_at: doc.ended_at,
    cancellation_details: doc.cancellation_details,
    default_payment_method: doc.default_payment_method,
    past_due_details: doc.past_due_details,
    billing_anchor_day: doc.billing_anchor_day,
    paused_from: doc.paused_from ?? null,
  };
}

/** past_due_details shows only while past due. */
function pastDueDetails(life: SubscriptionLife): SubscriptionObject['past_due_details'] {
  if (life.status !== 'past_due' || !life.past_due_details) return null;
  const { attempts, next_retry_at, since, failure_code } = life.past_due_details;
  return { attempts, next_retry_at, since, failure_code: failure_code ?? null };
}

/** The API object: the lifecycle as shown (no family or anchor day, card by id and type) and the document's own fields. */
export function subscriptionObject(doc: SubscriptionDoc): SubscriptionObject {
  const life = subscriptionLife(doc);
  return {
    id: doc._id,
    object: 'subscription',
    status: life.status,
    customer: doc.customer,
    customer_email: doc.customer_email,
    offer: life.offer ? { id: life.offer.id, name: life.offer.name } : null,
    product: life.product ? { id: life.product.id, name: life.product.name } : null,
    billing_cycle: life.billing_cycle,
    custom_billing_days: life.custom_billing_days,
    currency: life.currency,
    amount: life.amount,
    current_period_start: life.current_period_start,
    current_period_end: life.current_period_end,
    next_billing_at: life.next_billing_at,
    trial_start: life.trial_start,
    trial_end: life.trial_end,
    cycles_completed: life.cycles_completed,
    cycle_limit: life.cycle_limit,
    cancel_at_period_end: life.cancel_at_period_end,
    canceled_at: life.canceled_at,
    ended_at: life.ended_at,
    cancellation_details: life.cancellation_details
      ? { reason: life.cancellation_details.reason, comment: life.cancellation_details.comment, source: life.cancellation_details.source }
      : null,
    default_payment_method: life.default_payment_method ? { id: life.default_payment_method.id, type: life.default_payment_method.type } : null,
    installments: doc.installments,
    past_due_details: pastDueDetails(life),
    checkout_session: doc.checkout_session,
    client_reference_id: doc.client_reference_id,
    metadata: decodeMetadata(doc.metadata),
    livemode: doc.livemode,
    created: doc.created,
  };
}
