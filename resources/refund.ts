// A refund as the operator CLI (and later the dashboard) shows it: its schema and its builder from the
// refund workflow's answer. Refunds live on their order (amount_refunded) and in their workflow.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from './common';

export const Refund = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('refund'),
    /** succeeded: the money is back and counted on the order; pending: still at the provider; failed: nothing went back. */
    status: Type.Union([Type.Literal('succeeded'), Type.Literal('pending'), Type.Literal('failed')]),
    amount: Type.Integer(),
    currency: Type.String(),
    order: Type.String(),
    reason: Nullable(Type.String()),
    provider_refund: Nullable(Type.String()),
    failure_code: Nullable(Type.String()),
    failure_message: Nullable(Type.String()),
    /** The order after this refund (refunded, partially_refunded), once counted. */
    order_status: Nullable(Type.String()),
    order_amount_refunded: Nullable(Type.Integer()),
    subscription_canceled: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'Refund' },
);
export type RefundObject = Static<typeof Refund>;
