// The meter as the API shows it (OpenAPI component `BillingMeter`) and its builder.
import { Type, type Static } from '@sinclair/typebox';
import type { MeterDoc } from '../store/meters';
import { Nullable } from './common';

export const MeterFormula = Type.Union([Type.Literal('sum'), Type.Literal('count'), Type.Literal('last')]);

export const BillingMeter = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('billing.meter'),
    display_name: Type.String(),
    event_name: Type.String(),
    default_aggregation: Type.Object({ formula: MeterFormula }),
    customer_mapping: Type.Object({ type: Type.Literal('by_id'), event_payload_key: Type.String() }),
    value_settings: Type.Object({ event_payload_key: Type.String() }),
    status: Type.Union([Type.Literal('active'), Type.Literal('inactive')]),
    status_transitions: Type.Object({ deactivated_at: Nullable(Type.Integer()) }),
    livemode: Type.Boolean(),
    created: Type.Integer(),
    updated: Type.Integer(),
  },
  { $id: 'BillingMeter' },
);
export type MeterObject = Static<typeof BillingMeter>;

export function meterObject(doc: MeterDoc): MeterObject {
  return {
    id: doc._id,
    object: 'billing.meter',
    display_name: doc.display_name,
    event_name: doc.event_name,
    default_aggregation: { formula: doc.formula },
    customer_mapping: { type: 'by_id', event_payload_key: doc.customer_payload_key },
    value_settings: { event_payload_key: doc.value_payload_key },
    status: doc.status,
    status_transitions: { deactivated_at: doc.deactivated_at },
    livemode: true,
    created: doc.created,
    updated: doc.updated,
  };
}
