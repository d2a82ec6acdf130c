// The meter event as the API shows it (OpenAPI component `BillingMeterEvent`) and its builder; the
// payload is stored as pairs (its keys may hold '.' or start with '$') and shown as an object.
import { Type, type Static } from '@sinclair/typebox';
import { decodePayload, type MeterEventDoc } from '../store/usage';
import { Nullable } from './common';

export const BillingMeterEvent = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('billing.meter_event'),
    event_name: Type.String(),
    identifier: Type.String(),
    payload: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
    customer: Type.String(),
    subscription: Nullable(Type.String()),
    value: Type.Number(),
    timestamp: Type.Integer(),
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'BillingMeterEvent' },
);
export type MeterEventObject = Static<typeof BillingMeterEvent>;

export function meterEventObject(doc: MeterEventDoc): MeterEventObject {
  return {
    id: doc._id,
    object: 'billing.meter_event',
    event_name: doc.event_name,
    identifier: doc.identifier,
    payload: decodePayload(doc.payload),
    customer: doc.customer,
    subscription: doc.subscription,
    value: doc.value,
    timestamp: doc.timestamp,
    livemode: doc.livemode,
    created: doc.created,
  };
}
