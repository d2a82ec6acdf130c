// One window of a customer's events on a meter (OpenAPI component `BillingMeterEventSummary`) and its
// builder; the id follows from meter, customer and window, so the same window keeps its id.
import { Type, type Static } from '@sinclair/typebox';
import { hashedId } from '../domain/ids';

export const BillingMeterEventSummary = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('billing.meter_event_summary'),
    meter: Type.String(),
    customer: Type.String(),
    aggregated_value: Type.Number(),
    start_time: Type.Integer(),
    end_time: Type.Integer(),
    livemode: Type.Boolean(),
  },
  { $id: 'BillingMeterEventSummary' },
);
export type MeterEventSummaryObject = Static<typeof BillingMeterEventSummary>;

export function meterEventSummaryObject(
  meter: string,
  customer: string,
  window: { start: number; end: number },
  value: number,
): MeterEventSummaryObject {
  return {
    id: hashedId('mes', `${meter}|${customer}|${window.start}|${window.end}`),
    object: 'billing.meter_event_summary',
    meter,
    customer,
    aggregated_value: value,
    start_time: window.start,
    end_time: window.end,
    livemode: true,
  };
}
