// The usage period (one billing period's metered lines) as the API shows it (OpenAPI component
// `UsagePeriod`) and its builder; the usage workflow's state query answers the same object.
import { Type, type Static } from '@sinclair/typebox';
import type { PeriodLineDoc, UsagePeriodDoc } from '../store/usage';
import { Nullable } from './common';

export const UsagePeriod = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('usage_period'),
    subscription: Type.String(),
    status: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
    close_reason: Nullable(Type.Union([Type.Literal('period_end'), Type.Literal('threshold'), Type.Literal('subscription_ended')])),
    period_start: Type.Integer(),
    period_end: Type.Integer(),
    currency: Type.String(),
    lines: Type.Array(
      Type.Object({
        meter: Type.String(),
        event_name: Type.String(),
        quantity: Type.Number(),
        included: Type.Number(),
        billable: Type.Number(),
        unit_amount: Nullable(Type.Number({ description: 'null with tiers (each tier has its own).' })),
        amount: Type.Integer(),
        late_period: Type.Optional(
          Nullable(
            Type.Object(
              { start: Type.Integer(), end: Type.Integer() },
              { description: 'Late events: the closed period they belong to, charged here.' },
            ),
          ),
        ),
      }),
    ),
    amount_total: Type.Integer(),
    charge: Nullable(Type.String()),
    computed_at: Nullable(Type.Integer()),
    closed_at: Nullable(Type.Integer()),
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'UsagePeriod' },
);
export type UsagePeriodObject = Static<typeof UsagePeriod>;

/** A line without its display name (kept for the order line, not shown here). */
function periodLineObject(line: PeriodLineDoc): UsagePeriodObject['lines'][number] {
  const { meter, event_name, quantity, included, billable, unit_amount, amount } = line;
  return { meter, event_name, quantity, included, billable, unit_amount, amount, late_period: line.late_period ?? null };
}

export function usagePeriodObject(doc: UsagePeriodDoc): UsagePeriodObject {
  return {
    id: doc._id,
    object: 'usage_period',
    subscription: doc.subscription,
    status: doc.status,
    close_reason: doc.close_reason,
    period_start: doc.period_start,
    period_end: doc.period_end,
    currency: doc.currency,
    lines: doc.lines.map(periodLineObject),
    amount_total: doc.amount_total,
    charge: doc.charge,
    computed_at: doc.computed_at,
    closed_at: doc.closed_at,
    livemode: doc.livemode,
    created: doc.created,
  };
}
