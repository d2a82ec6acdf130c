// The order as the API shows it (read-only): its schema (OpenAPI component `Order`) and its builder.
import { Type, type Static } from '@sinclair/typebox';
import { decodeMetadata } from '../domain/metadata';
import { amountRefundedOf, type OrderDoc } from '../store/orders';
import { MetadataOutput, Nullable } from './common';

const NullableText = Nullable(Type.String());
export const ORDER_STATUSES = ['pending', 'paid', 'failed', 'canceled', 'refunded', 'partially_refunded', 'charged_back'] as const;

export const Order = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('order'),
    status: Type.String(),
    paid: Type.Boolean(),
    paid_at: Nullable(Type.Integer()),
    currency: Type.String(),
    amount_subtotal: Type.Integer(),
    amount_discount: Type.Integer(),
    amount_total: Type.Integer(),
    /** Minor units given back so far (whole or partial refunds); amount_total when refunded whole. */
    amount_refunded: Type.Integer(),
    billing_reason: Type.String(),
    order_type: Type.String(),
    recurrence: Type.String(),
    subscription: NullableText,
    customer: NullableText,
    customer_email: NullableText,
    offer: NullableText,
    product: NullableText,
    items: Type.Array(
      Type.Object({ kind: Type.String(), description: Type.String(), quantity: Type.Integer(), unit_amount: Type.Integer(), amount: Type.Integer() }),
    ),
    payment_method_type: NullableText,
    installments: Nullable(Type.Integer()),
    external_order_id: NullableText,
    status_source: Type.String(),
    client_reference_id: NullableText,
    checkout_session: NullableText,
    metadata: MetadataOutput,
    /** The chargeback opened against the payment (status charged_back): its outcome once closed (won, lost). */
    dispute: Nullable(
      Type.Object({
        id: Type.String(),
        status: Type.String(),
        reason: NullableText,
        amount: Type.Integer(),
        currency: Type.String(),
        closed_at: Nullable(Type.Integer()),
      }),
    ),
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'Order' },
);
export type OrderObject = Static<typeof Order>;

export function orderObject(doc: OrderDoc): OrderObject {
  return {
    id: doc._id,
    object: 'order',
    status: doc.status,
    paid: doc.status === 'paid',
    paid_at: doc.paid_at,
    currency: doc.currency,
    amount_subtotal: doc.amount_subtotal,
    amount_discount: doc.amount_discount,
    amount_total: doc.amount_total,
    amount_refunded: amountRefundedOf(doc),
    billing_reason: doc.billing_reason,
    order_type: doc.order_type,
    recurrence: doc.recurrence,
    subscription: doc.subscription,
    customer: doc.customer,
    customer_email: doc.customer_email,
    offer: doc.offer,
    product: doc.product,
    items: doc.items,
    payment_method_type: doc.payment_method_type,
    installments: doc.installments,
    external_order_id: doc.external_order_id,
    status_source: doc.status_source,
    client_reference_id: doc.client_reference_id,
    checkout_session: doc.checkout_session,
    metadata: decodeMetadata(doc.metadata),
    dispute: doc.dispute
      ? {
          id: doc.dispute.id,
          status: doc.dispute.status,
          reason: doc.dispute.reason,
          amount: doc.dispute.amount,
          currency: doc.dispute.currency,
          closed_at: doc.dispute.closed_at,
        }
      : null,
    livemode: doc.livemode,
    created: doc.created,
  };
}
