// billing.meter.error_report_triggered: "sent at most once per meter per hour, with reason.error_count
// unattached events in the current hour". Ingestion notes the hours that had unattached events and
// counts them in a rollup (journaled, exactly once); once an hour is over (and in-flight batches have
// landed) the usage routine sends one report per meter with the hour's full count, keyed by meter and
// hour, so a routine that dies between sending and marking sends nothing twice.
import { HOUR, unattachedRollupKey, windowStart } from '../../domain/usage-periods';
import { markHourReported, unreportedHours } from '../../store/usage';
import { quantityOf, readRollups, JOURNAL_LEASE_MS, RECOVERY_MARGIN_MS } from '../../store/usage-rollups';
import { emitEventOnce } from '../events/emit-once';
import type { EventDeps } from '../events/events';

/** An hour is reported this long after it ends: batches in flight then (or a crashed one's journal) have landed. */
export const ERROR_REPORT_DELAY_SECONDS = Math.ceil((JOURNAL_LEASE_MS + RECOVERY_MARGIN_MS) / 1000) + 60;

export function errorReportObject(meterId: string, hour: number, count: number) {
  return {
    id: meterId,
    object: 'billing.meter_error_report',
    meter: meterId,
    livemode: true,
    validation_start: hour,
    validation_end: hour + HOUR,
    developer_message_summary: `${count} meter event(s) arrived for a customer without an active, trialing or past_due subscription with a usage item for this meter; they are stored and not charged.`,
    reason: {
      error_count: count,
      error_types: [{ code: 'no_subscription_for_customer', error_count: count }],
    },
  };
}

/** Sends the reports of the hours that ended at least ERROR_REPORT_DELAY_SECONDS before `nowMs`; how many were sent. */
export async function sendErrorReports(deps: EventDeps, nowMs: number): Promise<number> {
  const lastHour = windowStart(Math.floor(nowMs / 1000) - ERROR_REPORT_DELAY_SECONDS, HOUR) - HOUR;
  const due = await unreportedHours(deps.db, lastHour);
  if (due.length === 0) return 0;
  const rollups = await readRollups(
    deps.db,
    due.map((d) => unattachedRollupKey(d.meter, d.hour)),
  );
  let sent = 0;
  for (const hour of due) {
    const count = quantityOf(rollups.get(unattachedRollupKey(hour.meter, hour.hour)), 'count');
    if (count > 0) {
      await emitEventOnce(deps, `error-report:${hour.meter}:${hour.hour}`, {
        storeId: hour.store_id,
        type: 'billing.meter.error_report_triggered',
        legacyType: null,
        request: null,
        object: errorReportObject(hour.meter, hour.hour, count),
      });
      sent++;
    }
    await markHourReported(deps.db, hour._id);
  }
  return sent;
}
