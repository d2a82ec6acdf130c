// What this tests: period arithmetic per billing cycle (calendar months clamped to the anchor day)
// and the dunning retry schedule, as pure functions.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addMonths, anchorDayOf, BILLING_CYCLES, nextRetryAt, periodEnd } from '../../domain/billing-periods';

const at = (iso: string) => Date.parse(iso) / 1000;
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
const DAY = 86_400;

describe('periodEnd', () => {
  it('adds 1 day, 14 days and N custom days for daily, biweekly and custom', () => {
    const start = at('2026-03-10T12:00:00Z');
    expect(periodEnd(start, 'daily')).toBe(start + DAY);
    expect(periodEnd(start, 'biweekly')).toBe(start + 14 * DAY);
    expect(periodEnd(start, 'custom', 45)).toBe(start + 45 * DAY);
  });

  it('adds calendar months for monthly, quarterly, half_yearly and yearly, keeping the time of day', () => {
    const start = at('2026-01-15T08:30:00Z');
    expect(iso(periodEnd(start, 'monthly'))).toBe('2026-02-15T08:30:00.000Z');
    expect(iso(periodEnd(start, 'quarterly'))).toBe('2026-04-15T08:30:00.000Z');
    expect(iso(periodEnd(start, 'half_yearly'))).toBe('2026-07-15T08:30:00.000Z');
    expect(iso(periodEnd(start, 'yearly'))).toBe('2027-01-15T08:30:00.000Z');
  });

  it('clamps the 31st to the last day of shorter months and returns to the 31st afterwards', () => {
    const anchor = anchorDayOf(at('2026-01-31T00:00:00Z'));
    let t = at('2026-01-31T00:00:00Z');
    const ends: string[] = [];
    for (let i = 0; i < 4; i++) {
      t = periodEnd(t, 'monthly', null, anchor);
      ends.push(iso(t).slice(0, 10));
    }
    expect(ends).toEqual(['2026-02-28', '2026-03-31', '2026-04-30', '2026-05-31']);
  });

  it('moves 29 February to 28 February on a yearly cycle in a common year', () => {
    expect(iso(periodEnd(at('2028-02-29T00:00:00Z'), 'yearly')).slice(0, 10)).toBe('2029-02-28');
  });

  it('refuses custom without a positive whole number of days', () => {
    expect(() => periodEnd(0, 'custom', null)).toThrow();
    expect(() => periodEnd(0, 'custom', 0)).toThrow();
  });

  it('always ends after it starts, for every cycle and any start within 2000..2100', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: at('2000-01-01T00:00:00Z'), max: at('2100-01-01T00:00:00Z') }),
        fc.constantFrom(...BILLING_CYCLES),
        fc.integer({ min: 1, max: 400 }),
        (start, cycle, days) => {
          const end = periodEnd(start, cycle, days);
          expect(end).toBeGreaterThan(start);
          if (cycle === 'monthly') expect(end - start).toBeLessThanOrEqual(31 * DAY);
        },
      ),
    );
  });

  it('twelve monthly periods anchored on any day add up to exactly one year', () => {
    fc.assert(
      fc.property(fc.integer({ min: at('2000-01-01T00:00:00Z'), max: at('2099-01-01T00:00:00Z') }), (start) => {
        const anchor = anchorDayOf(start);
        let t = start;
        for (let i = 0; i < 12; i++) t = periodEnd(t, 'monthly', null, anchor);
        expect(t).toBe(addMonths(start, 12));
      }),
    );
  });
});

describe('nextRetryAt', () => {
  it('retries 1, 3 and 5 days after the first failure, then stops', () => {
    const since = at('2026-05-01T00:00:00Z');
    expect(nextRetryAt(since, 1)).toBe(since + DAY);
    expect(nextRetryAt(since, 2)).toBe(since + 3 * DAY);
    expect(nextRetryAt(since, 3)).toBe(since + 5 * DAY);
    expect(nextRetryAt(since, 4)).toBeNull();
  });
});
