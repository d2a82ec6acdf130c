// GET /billing/meters/{id}/event_summaries: a customer's events on a meter (attached or not) summed
// per hour, per UTC day or over the whole range (any two instants), from the day rollups (one read
// per day) and, for a range's partial hours, the events themselves.
import type { Database } from '../../store/database';
import { invalid, notFound } from '../../domain/errors';
import { DAY, dayRollupKey, HOUR, windowStart } from '../../domain/usage-periods';
import { findMeter, type MeterDoc } from '../../store/meters';
import { encodeLast, quantityOf, readRollups, type RollupTotals } from '../../store/usage-rollups';
import { meterEventsBetween } from '../../store/usage';
import { meterEventSummaryObject, type MeterEventSummaryObject } from '../../resources/meter-event-summary';
import { customerExists } from './shared';

export interface SummaryQuery {
  customer: string;
  start_time: number;
  end_time: number;
  value_grouping_window?: 'hour' | 'day';
}

/** "up to one year": the same date a calendar year later (UTC), 365 or 366 days. */
export function oneYearAfter(seconds: number): number {
  const date = new Date(seconds * 1000);
  date.setUTCFullYear(date.getUTCFullYear() + 1);
  return Math.floor(date.getTime() / 1000);
}

/** GET /billing/meters/{id}/event_summaries: sums of the customer's events (attached or not) per window. */
export async function meterEventSummaries(db: Database, storeId: string, meterId: string, query: SummaryQuery) {
  const meter = await findMeter(db, storeId, meterId);
  if (!meter) throw notFound('meter', meterId);
  const { start_time: start, end_time: end, value_grouping_window: window } = query;
  if (end <= start) throw invalid('end_time', 'end_time must be after start_time.');
  if (end > oneYearAfter(start)) throw invalid('end_time', 'The range between start_time and end_time is at most one year.');
  const size = window === 'day' ? DAY : HOUR;
  // Windows start at whole hours or days; without windows the range is any two instants.
  for (const [param, t] of window
    ? ([
        ['start_time', start],
        ['end_time', end],
      ] as const)
    : []) {
    if (t % size !== 0) {
      throw invalid(
        param,
        `${param} must be at the start of ${window === 'day' ? 'a day (UTC, a multiple of 86400)' : 'an hour (a multiple of 3600)'}.`,
      );
    }
  }
  if (!(await customerExists(db, storeId, query.customer))) throw notFound('customer', query.customer, 'customer');
  if (!window) return wholeRangeSummary(db, storeId, meter, query);

  const windows: { start: number; end: number; pieces: Piece[] }[] = [];
  for (let t = start; t < end; t += size) windows.push({ start: t, end: t + size, pieces: piecesOf(t, t + size) });
  const rollups = await readRollups(
    db,
    windows.flatMap((w) => w.pieces.map((p) => dayRollupKey(meter._id, query.customer, p.day))),
  );
  const data = [];
  for (const w of windows) {
    const parts = totalsOfPieces(rollups, meter._id, query.customer, w.pieces);
    if (parts.length > 0) data.push(meterEventSummaryObject(meter._id, query.customer, w, valueOf(meter.formula, parts)));
  }
  data.reverse();
  return list(meter._id, data);
}

const list = (meterId: string, data: MeterEventSummaryObject[]) => ({
  object: 'list' as const,
  url: `/v1/billing/meters/${meterId}/event_summaries`,
  has_more: false,
  data,
});

/** One window over the whole range: whole hours from the rollups, the partial hours at its ends from the events. */
async function wholeRangeSummary(db: Database, storeId: string, meter: MeterDoc, query: SummaryQuery) {
  const { start_time: start, end_time: end, customer } = query;
  const firstHour = Math.ceil(start / HOUR) * HOUR;
  const lastHour = Math.floor(end / HOUR) * HOUR;
  const parts: RollupTotals[] = [];
  if (firstHour >= lastHour) {
    parts.push(await eventTotals(db, storeId, meter._id, customer, start, end));
  } else {
    const pieces = piecesOf(firstHour, lastHour);
    const rollups = await readRollups(
      db,
      pieces.map((p) => dayRollupKey(meter._id, customer, p.day)),
    );
    parts.push(
      ...totalsOfPieces(rollups, meter._id, customer, pieces),
      await eventTotals(db, storeId, meter._id, customer, start, firstHour),
      await eventTotals(db, storeId, meter._id, customer, lastHour, end),
    );
  }
  const counted = parts.filter((t) => t.count > 0);
  return list(meter._id, counted.length === 0 ? [] : [meterEventSummaryObject(meter._id, customer, { start, end }, valueOf(meter.formula, counted))]);
}

/** Totals of the events in [from, to) read one by one: only ever a partial hour at a range's end. */
async function eventTotals(db: Database, storeId: string, meterId: string, customer: string, from: number, to: number): Promise<RollupTotals> {
  const totals: RollupTotals = { sum: 0, count: 0 };
  if (from >= to) return totals;
  for await (const event of meterEventsBetween(db, storeId, meterId, customer, from, to)) {
    const last = encodeLast(event.timestamp, event._id, event.value);
    totals.sum += event.value;
    totals.count += 1;
    if (totals.last === undefined || last > totals.last) totals.last = last;
  }
  return totals;
}

/** Each window is made of whole UTC days (a day rollup's totals) and hours (the hour parts kept inside the day rollup). */
type Piece = { day: number; hour: number | null };

function piecesOf(from: number, to: number): Piece[] {
  const pieces: Piece[] = [];
  for (let t = from; t < to;) {
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
}

function totalsOfPieces(
  rollups: Map<string, RollupTotals & { h?: Record<string, RollupTotals> }>,
  meterId: string,
  customer: string,
  pieces: Piece[],
): RollupTotals[] {
  return pieces
    .map((p) => {
      const doc = rollups.get(dayRollupKey(meterId, customer, p.day));
      return p.hour === null ? doc : doc?.h?.[String(p.hour)];
    })
    .filter((t): t is RollupTotals => t !== undefined && t.count > 0);
}

function valueOf(formula: MeterDoc['formula'], parts: RollupTotals[]): number {
  if (formula === 'count') return parts.reduce((s, d) => s + d.count, 0);
  if (formula === 'sum') return parts.reduce((s, d) => s + d.sum, 0);
  return quantityOf(
    parts.reduce((a, b) => ((a.last ?? '') >= (b.last ?? '') ? a : b)),
    'last',
  );
}
