// Usage periods as pure rules (spec, usage rules 3 and 5; States, Usage period): which period an
// event's timestamp counts in, the rollup keys ingestion adds to, when the workflow closes a period
// and why, and the usage charge's description and lines. The usage-period workflow imports this
// module, so it stays free of I/O, clocks and Node modules.
import { TIMESTAMP_FUTURE_SECONDS } from './meter-events';

/** The routine's period (spec: the metered-usage routine runs every 10 minutes). */
export const RECOMPUTE_INTERVAL_SECONDS = 10 * 60;
/**
 * A usage workflow run continues as new past this many history events (about 8 per recompute: some
 * 40 hours of 10-minute recomputes), far below Temporal's 50k limit and cheap to replay.
 */
export const USAGE_HISTORY_EVENTS_LIMIT = 2_000;
/**
 * A period is read for good this long after its end, so ingestion requests already past their
 * checks when the period ended land first (and journals of a crashed process are recovered).
 */
export const CLOSE_GRACE_SECONDS = 2 * 60;
/**
 * A threshold close ends the period this long after it was detected. Events carry timestamps up to
 * 5 minutes ahead of their arrival, so every event that read the old boundary has a timestamp before
 * the new one: no event is counted in a period its timestamp is not in.
 */
export const THRESHOLD_BOUNDARY_DELAY_SECONDS = TIMESTAMP_FUTURE_SECONDS + 60;
/**
 * The prompt threshold close (runs since the patch `usage-threshold-close-prompt`): the end is pulled in
 * to this long after detection, enough for every API process's one-second copy of the usage state to see
 * the new end, and the period closes at it, with no grace: closing waits for the batches in flight itself.
 * An event already counted with a timestamp past the new end (clients may stamp up to 5 minutes ahead)
 * stays in the period that counted it.
 */
export const THRESHOLD_CLOSE_DELAY_SECONDS = 5;

export type CloseReason = 'period_end' | 'threshold' | 'subscription_ended';

/** The open period as ingestion sees it (subscription_usage.open). */
export interface OpenPeriodRef {
  id: string;
  start: number;
  end: number;
}

/**
 * Start of the period an event at `timestamp` counts in: the open period when the timestamp is in
 * it, the next one (starting where the open one ends, or where the last closed one ended) when it
 * is at or after that, and null for a timestamp in a period already closed (kept, not charged).
 */
export function periodStartFor(timestamp: number, open: OpenPeriodRef | null, nextStart: number | null): number | null {
  if (open && timestamp >= open.start && timestamp < open.end) return open.start;
  const next = open ? open.end : nextStart;
  if (next !== null && timestamp >= next) return next;
  return null;
}

/**
 * A late event: its timestamp falls in a period already closed (timestamps may be 35 days old). It is
 * counted in the period now open (or the next to open) and charged there on a line of its own; `from`
 * is the start of the closed period it belongs to. Null when it is not late, or precedes every period.
 */
export function latePeriodFor(
  timestamp: number,
  periodStarts: readonly number[],
  open: OpenPeriodRef | null,
  nextStart: number | null,
): { start: number; from: number } | null {
  const target = open ? open.start : nextStart;
  if (target === null || timestamp >= target) return null;
  const from = periodStarts.filter((start) => start <= timestamp && start < target).reduce((a, b) => Math.max(a, b), -Infinity);
  return Number.isFinite(from) ? { start: target, from } : null;
}

// Rollup keys: ingestion adds each event to its period's total and to its UTC day (which keeps a
// total per hour inside it, `<day key>@<hour 0-23>` when adding).
export const periodRollupKey = (subscriptionId: string, start: number, meterId: string) => `p|${subscriptionId}|${start}|${meterId}`;
/** Late events counted in the period starting at `start`, by the closed period (`from`) they belong to. */
export const lateRollupKey = (subscriptionId: string, start: number, meterId: string, from: number) =>
  `p|${subscriptionId}|${start}|${meterId}|late|${from}`;
/** Unattached events of a meter that arrived in an hour: what that hour's error report counts. */
export const unattachedRollupKey = (meterId: string, hourStart: number) => `u|${meterId}|${hourStart}`;
export const dayRollupKey = (meterId: string, customerId: string, dayStart: number) => `d|${meterId}|${customerId}|${dayStart}`;
/** The day key with the hour the timestamp falls in: adds to the day and to that hour. */
export const dayHourRollupKey = (meterId: string, customerId: string, timestamp: number) => {
  const day = windowStart(timestamp, DAY);
  return `${dayRollupKey(meterId, customerId, day)}@${Math.floor((timestamp - day) / HOUR)}`;
};

export const HOUR = 60 * 60;
export const DAY = 24 * HOUR;
export const windowStart = (timestamp: number, size: number) => timestamp - (((timestamp % size) + size) % size);

/** The paid cycle of a subscription: its current period, else its trial; null before either exists. */
export function cycleOf(sub: {
  current_period_start: number | null;
  current_period_end: number | null;
  trial_start: number | null;
  trial_end: number | null;
}): { start: number; end: number } | null {
  if (sub.current_period_start !== null && sub.current_period_end !== null) return { start: sub.current_period_start, end: sub.current_period_end };
  if (sub.trial_start !== null && sub.trial_end !== null) return { start: sub.trial_start, end: sub.trial_end };
  return null;
}

export type UsageStep = { kind: 'close'; reason: CloseReason; end: number } | { kind: 'move_end'; end: number } | { kind: 'wait'; until: number };

/**
 * What the workflow does after recomputing the open period at `now`: close it (its end passed,
 * or the subscription stopped being chargeable), pull its end in (the threshold was reached), or
 * wait for the next routine run (or the period's end, whichever comes first).
 */
export function nextUsageStep(input: {
  now: number;
  end: number;
  /** The end was pulled in by a threshold. */
  thresholdBoundary: boolean;
  chargeable: boolean;
  thresholdReached: boolean;
  /** Seconds between routine recomputes (the spec's 10 minutes unless configured). */
  interval?: number;
  /** The prompt threshold close (THRESHOLD_CLOSE_DELAY_SECONDS); runs recorded before it keep the 8-minute one. */
  prompt?: boolean;
}): UsageStep {
  if (input.prompt) return nextPromptStep(input);
  const { now, end } = input;
  const closeAt = end + CLOSE_GRACE_SECONDS;
  if (now >= closeAt) return { kind: 'close', reason: input.thresholdBoundary ? 'threshold' : 'period_end', end };
  if (!input.chargeable) return { kind: 'close', reason: 'subscription_ended', end: Math.min(end, now) };
  if (input.thresholdReached && !input.thresholdBoundary) {
    const boundary = now + THRESHOLD_BOUNDARY_DELAY_SECONDS;
    if (boundary < end) return { kind: 'move_end', end: boundary };
  }
  return { kind: 'wait', until: Math.min(now + (input.interval ?? RECOMPUTE_INTERVAL_SECONDS), closeAt) };
}

/** nextUsageStep with the prompt threshold close: closes at the pulled-in end, reason threshold even near the cycle's end. */
function nextPromptStep(input: Parameters<typeof nextUsageStep>[0]): UsageStep {
  const { now, end } = input;
  const closeAt = input.thresholdBoundary ? end : end + CLOSE_GRACE_SECONDS;
  if (now >= closeAt) return { kind: 'close', reason: input.thresholdBoundary ? 'threshold' : 'period_end', end };
  if (!input.chargeable) return { kind: 'close', reason: 'subscription_ended', end: Math.min(end, now) };
  // Near the cycle's end the end stays where it is, but the period still closes as a threshold close.
  if (input.thresholdReached && !input.thresholdBoundary) return { kind: 'move_end', end: Math.min(now + THRESHOLD_CLOSE_DELAY_SECONDS, end) };
  return { kind: 'wait', until: Math.min(now + (input.interval ?? RECOMPUTE_INTERVAL_SECONDS), closeAt) };
}

/** YYYY-MM-DD in UTC. */
export function isoDate(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 10);
}

export const CHARGE_TEXT_MAX = 140;

/** The usage charge's description: it names the period's start and end dates. */
export function usageChargeDescription(start: number, end: number): string {
  return `Metered usage ${isoDate(start)} to ${isoDate(end)}`;
}

/** One charge line per meter with an amount, named by the meter's display_name. */
export function usageChargeLines(lines: { display_name: string; amount: number }[]) {
  return lines
    .filter((line) => line.amount > 0)
    .map((line) => ({ description: line.display_name.slice(0, CHARGE_TEXT_MAX), quantity: 1, unit_amount: line.amount }));
}
