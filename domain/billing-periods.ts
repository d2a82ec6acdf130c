// Billing period arithmetic: where a period that starts at a moment ends, per billing cycle.
// Pure and deterministic (the subscription workflow imports it): times are Unix seconds, months are
// calendar months in UTC, clamped to the month's last day and pinned to an anchor day so a
// subscription started on the 31st bills on the 31st, the 30th, the 28th/29th... never drifting.

export const BILLING_CYCLES = ['daily', 'biweekly', 'monthly', 'quarterly', 'half_yearly', 'yearly', 'custom'] as const;
export type BillingCycle = (typeof BILLING_CYCLES)[number];

const DAY = 24 * 60 * 60;

const MONTHS: Partial<Record<BillingCycle, number>> = { monthly: 1, quarterly: 3, half_yearly: 6, yearly: 12 };
const DAYS: Partial<Record<BillingCycle, number>> = { daily: 1, biweekly: 14 };

export function isBillingCycle(value: unknown): value is BillingCycle {
  return typeof value === 'string' && (BILLING_CYCLES as readonly string[]).includes(value);
}

function daysInMonth(year: number, monthIndex: number): number {
  return new Date(Date.UTC(year, monthIndex + 1, 0)).getUTCDate();
}

/** Day of the month (1..31, UTC) a period starting at `start` is anchored to. */
export function anchorDayOf(start: number): number {
  return new Date(start * 1000).getUTCDate();
}

/** `start` moved by whole calendar months, on `anchorDay` clamped to the target month's length. */
export function addMonths(start: number, months: number, anchorDay = anchorDayOf(start)): number {
  const d = new Date(start * 1000);
  const target = d.getUTCMonth() + months;
  const year = d.getUTCFullYear() + Math.floor(target / 12);
  const month = ((target % 12) + 12) % 12;
  const day = Math.min(anchorDay, daysInMonth(year, month));
  return Math.floor(Date.UTC(year, month, day, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()) / 1000);
}

/**
 * End of the period that starts at `start` (Unix seconds). `customDays` is required with
 * `custom`; `anchorDay` keeps month-based cycles on the subscription's original day.
 */
export function periodEnd(start: number, cycle: BillingCycle, customDays: number | null = null, anchorDay?: number): number {
  const months = MONTHS[cycle];
  if (months !== undefined) return addMonths(start, months, anchorDay);
  const days = cycle === 'custom' ? customDays : DAYS[cycle];
  if (!days || !Number.isInteger(days) || days < 1) throw new Error(`billing cycle ${cycle} needs a positive whole number of days`);
  return start + days * DAY;
}

/** The moments a dunning retry happens after the first failed charge: 1, 3 and 5 days later. */
export const DUNNING_RETRY_DAYS = [1, 3, 5] as const;

/**
 * When the next retry of a failed charge happens, given when the first attempt failed and how many
 * attempts failed so far (1 = only the original charge); null after the last retry failed.
 */
export function nextRetryAt(since: number, failedAttempts: number): number | null {
  const offset = DUNNING_RETRY_DAYS[failedAttempts - 1];
  return offset === undefined ? null : since + offset * DAY;
}
