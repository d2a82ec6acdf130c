// GET /billing/meters/{id}/event_summaries: a customer's events on a meter (attached or not) summed
// per hour, per UTC day or over the whole range, from the day rollups (one read per day).
import type { Db } from 'mongodb';
import { invalid, notFound } from '../domain/errors';
import { DAY, dayRollupKey, HOUR, windowStart } from '../domain/usage-periods';
import { findMeter } from '../store/meters';
import { quantityOf, readRollups, type RollupTotals } from '../store/usage-rollups';
import { meterEventSummaryObject } from '../api/schemas/meter-event-summary';
import { customerExists } from './usage-shared';

export interface SummaryQuery {
  customer: string;
  start_time: number;
  end_time: number;
  value_grouping_window?: 'hour' | 'day';
}

export const SUMMARY_RANGE_MAX_SECONDS = 366 * DAY;

/** GET /billing/meters/{id}/event_summaries: sums of the customer's events (attached or not) per window. */
export async function meterEventSummaries(db: Db, storeId: string, meterId: string, query: SummaryQuery) {
  const meter = await findMeter(db, storeId, meterId);
  if (!meter) throw notFound('meter', meterId);
  const { start_time: start, end_time: end, value_grouping_window: window } = query;
  if (end <= start) throw invalid('end_time', 'end_time must be after start_time.');
  if (end - start > SUMMARY_RANGE_MAX_SECONDS) throw invalid('end_time', 'The range between start_time and end_time is at most one year.');
  const size = window === 'day' ? DAY : HOUR;
  for (const [param, t] of [['start_time', start], ['end_time', end]] as const) {
    if (t % size !== 0) {
      throw invalid(param, `${param} must be at the start of ${window === 'day' ? 'a day (UTC, a multiple of 86400)' : 'an hour (a multiple of 3600)'}.`);
    }
  }
  if (!(await customerExists(db, storeId, query.customer))) throw notFound('customer', query.customer, 'customer');

  // Each window is made of whole UTC days (a day rollup's totals) and hours (the hour parts kept
  // inside the day rollup): at most one read per day in the range.
  type Piece = { day: number; hour: number | null };
  const windows: { start: number; end: number; pieces: Piece[] }[] = [];
  const piecesOf = (from: number, to: number) => {
    const pieces: Piece[] = [];
    for (let t = from; t < to; ) {
      const day = windowStart(t, DAY);
      if (t === day && t + DAY <= to) {
        pieces.push({ day, hour: null });
        t += DAY;
      } else {
        pieces.push({ day, hour: (t - day) / HOUR });
        t += HOUR;
      }
    }
    return pieces;
  };
  if (window) {
    for (let t = start; t < end; t += size) windows.push({ start: t, end: t + size, pieces: piecesOf(t, t + size) });
  } else {
    windows.push({ start, end, pieces: piecesOf(start, end) });
  }
  const dayKey = (day: number) => dayRollupKey(meter._id, query.customer, day);
  const rollups = await readRollups(db, windows.flatMap((w) => w.pieces.map((p) => dayKey(p.day))));
  const data = [];
  for (const w of windows) {
    const parts = w.pieces
      .map((p) => {
        const doc = rollups.get(dayKey(p.day));
        return p.hour === null ? doc : doc?.h?.[String(p.hour)];
      })
      .filter((t): t is RollupTotals => t !== undefined && t.count > 0);
    if (parts.length === 0) continue;
    let value: number;
    if (meter.formula === 'count') value = parts.reduce((s, d) => s + d.count, 0);
    else if (meter.formula === 'sum') value = parts.reduce((s, d) => s + d.sum, 0);
    else value = quantityOf(parts.reduce((a, b) => ((a.last ?? '') >= (b.last ?? '') ? a : b)), 'last');
    data.push(meterEventSummaryObject(meter._id, query.customer, w, value));
  }
  data.reverse();
  return { object: 'list' as const, url: `/v1/billing/meters/${meter._id}/event_summaries`, has_more: false, data };
}

