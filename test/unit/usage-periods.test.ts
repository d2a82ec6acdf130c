// What this tests: the pure usage-period rules (domain/usage-periods.ts) — which period an event's
// timestamp counts in, when the workflow closes a period and why, the threshold boundary placed
// beyond the timestamp skew — and the meter event rules (domain/meter-events.ts).
import { describe, expect, test } from 'vitest';
import { ApiError } from '../../domain/errors';
import { customerIdOf, readEventShape, resolveTimestamp, valueOf } from '../../domain/meter-events';
import {
  CLOSE_GRACE_SECONDS,
  dayHourRollupKey,
  nextUsageStep,
  latePeriodFor,
  periodStartFor,
  RECOMPUTE_INTERVAL_SECONDS,
  THRESHOLD_BOUNDARY_DELAY_SECONDS,
  THRESHOLD_CLOSE_DELAY_SECONDS,
  usageChargeDescription,
  usageChargeLines,
} from '../../domain/usage-periods';

const open = { id: 'usp_1', start: 1000, end: 2000 };

describe('periodStartFor', () => {
  test('a timestamp inside the open period counts there; at or after its end, in the next one', () => {
    expect(periodStartFor(1000, open, null)).toBe(1000);
    expect(periodStartFor(1999, open, null)).toBe(1000);
    expect(periodStartFor(2000, open, null)).toBe(2000);
    expect(periodStartFor(2500, open, null)).toBe(2000);
  });

  test('before the open period (a closed one) it counts nowhere', () => {
    expect(periodStartFor(999, open, null)).toBeNull();
  });

  test('with no period open, from where the next one starts', () => {
    expect(periodStartFor(3000, null, 2000)).toBe(2000);
    expect(periodStartFor(1500, null, 2000)).toBeNull();
    expect(periodStartFor(1500, null, null)).toBeNull();
  });
});

describe('nextUsageStep', () => {
  const base = { end: 10_000, thresholdBoundary: false, chargeable: true, thresholdReached: false };

  test('waits for the next routine run, or the period end plus grace, whichever is first', () => {
    expect(nextUsageStep({ ...base, now: 1000 })).toEqual({ kind: 'wait', until: 1000 + RECOMPUTE_INTERVAL_SECONDS });
    expect(nextUsageStep({ ...base, now: 9_900 })).toEqual({ kind: 'wait', until: 10_000 + CLOSE_GRACE_SECONDS });
    expect(nextUsageStep({ ...base, now: 1000, interval: 60 })).toEqual({ kind: 'wait', until: 1060 });
  });

  test('closes at its end (after the grace) with period_end, or threshold when the end was pulled in', () => {
    expect(nextUsageStep({ ...base, now: 10_000 + CLOSE_GRACE_SECONDS })).toEqual({ kind: 'close', reason: 'period_end', end: 10_000 });
    expect(nextUsageStep({ ...base, thresholdBoundary: true, now: 10_000 + CLOSE_GRACE_SECONDS })).toEqual({
      kind: 'close',
      reason: 'threshold',
      end: 10_000,
    });
  });

  test('a subscription no longer chargeable closes now with subscription_ended (its end passed: period_end)', () => {
    expect(nextUsageStep({ ...base, chargeable: false, now: 5000 })).toEqual({ kind: 'close', reason: 'subscription_ended', end: 5000 });
    expect(nextUsageStep({ ...base, chargeable: false, now: 10_000 + CLOSE_GRACE_SECONDS })).toMatchObject({ reason: 'period_end' });
  });

  test('the threshold pulls the end in beyond the 5-minute timestamp skew, once', () => {
    expect(THRESHOLD_BOUNDARY_DELAY_SECONDS).toBeGreaterThan(5 * 60);
    expect(nextUsageStep({ ...base, thresholdReached: true, now: 1000 })).toEqual({ kind: 'move_end', end: 1000 + THRESHOLD_BOUNDARY_DELAY_SECONDS });
    expect(nextUsageStep({ ...base, thresholdReached: true, thresholdBoundary: true, now: 1000 })).toMatchObject({ kind: 'wait' });
    // Too close to the natural end: it just closes there.
    expect(nextUsageStep({ ...base, thresholdReached: true, now: 9_900 })).toMatchObject({ kind: 'wait' });
  });
});

describe('nextUsageStep with the prompt threshold close', () => {
  const base = { end: 10_000, thresholdBoundary: false, chargeable: true, thresholdReached: false, prompt: true };

  test('the threshold pulls the end in to a few seconds from now, and the period closes at it (no grace) as a threshold close', () => {
    expect(nextUsageStep({ ...base, thresholdReached: true, now: 1000 })).toEqual({ kind: 'move_end', end: 1000 + THRESHOLD_CLOSE_DELAY_SECONDS });
    expect(nextUsageStep({ ...base, thresholdBoundary: true, end: 1005, now: 1001 })).toEqual({ kind: 'wait', until: 1005 });
    expect(nextUsageStep({ ...base, thresholdBoundary: true, end: 1005, now: 1005 })).toEqual({ kind: 'close', reason: 'threshold', end: 1005 });
  });

  test('near the cycle end the end stays, and the close is still a threshold close, at the end', () => {
    expect(nextUsageStep({ ...base, thresholdReached: true, now: 9_998 })).toEqual({ kind: 'move_end', end: 10_000 });
    expect(nextUsageStep({ ...base, thresholdBoundary: true, now: 10_000 })).toEqual({ kind: 'close', reason: 'threshold', end: 10_000 });
  });

  test('without a threshold it behaves as before: period_end after the grace, subscription_ended at once', () => {
    expect(nextUsageStep({ ...base, now: 9_900 })).toEqual({ kind: 'wait', until: 10_000 + CLOSE_GRACE_SECONDS });
    expect(nextUsageStep({ ...base, now: 10_000 + CLOSE_GRACE_SECONDS })).toEqual({ kind: 'close', reason: 'period_end', end: 10_000 });
    expect(nextUsageStep({ ...base, chargeable: false, now: 5000 })).toEqual({ kind: 'close', reason: 'subscription_ended', end: 5000 });
  });
});

describe('latePeriodFor', () => {
  const starts = [1000, 2000, 3000];
  test('an event in a closed period counts in the open one, naming the closed period it belongs to', () => {
    expect(latePeriodFor(2500, starts, { id: 'usp', start: 3000, end: 4000 }, null)).toEqual({ start: 3000, from: 2000 });
    expect(latePeriodFor(1000, starts, { id: 'usp', start: 3000, end: 4000 }, null)).toEqual({ start: 3000, from: 1000 });
  });
  test('with no open period it waits in the next one; an on-time event or one before every period is not late', () => {
    expect(latePeriodFor(2500, [1000, 2000], null, 3000)).toEqual({ start: 3000, from: 2000 });
    expect(latePeriodFor(3500, starts, { id: 'usp', start: 3000, end: 4000 }, null)).toBeNull();
    expect(latePeriodFor(500, starts, { id: 'usp', start: 3000, end: 4000 }, null)).toBeNull();
    expect(latePeriodFor(2500, starts, null, null)).toBeNull();
  });
});

describe('usage charge text and keys', () => {
  test('the description names both dates; lines are the meters with an amount, by display_name', () => {
    expect(usageChargeDescription(Date.UTC(2026, 0, 15) / 1000, Date.UTC(2026, 1, 15) / 1000)).toBe('Metered usage 2026-01-15 to 2026-02-15');
    expect(
      usageChargeLines([
        { display_name: 'Images', amount: 1343 },
        { display_name: 'Idle', amount: 0 },
        { display_name: 'x'.repeat(300), amount: 5 },
      ]),
    ).toEqual([
      { description: 'Images', quantity: 1, unit_amount: 1343 },
      { description: 'x'.repeat(140), quantity: 1, unit_amount: 5 },
    ]);
  });

  test('an event adds to its UTC day and the hour inside it', () => {
    const t = Date.UTC(2026, 2, 3, 13, 45) / 1000;
    expect(dayHourRollupKey('mtr_1', 'cust_1', t)).toBe(`d|mtr_1|cust_1|${Date.UTC(2026, 2, 3) / 1000}@13`);
  });
});

describe('meter event rules', () => {
  const meter = { formula: 'sum' as const, customer_payload_key: 'customer_id', value_payload_key: 'value' };
  const codeOf = (fn: () => unknown) => {
    try {
      fn();
      return null;
    } catch (error) {
      return error instanceof ApiError ? [error.code, error.param] : error;
    }
  };

  test('timestamps: default now; 35 days back and 5 minutes ahead are the limits', () => {
    const now = 10_000_000;
    expect(resolveTimestamp(null, now)).toBe(now);
    expect(resolveTimestamp(now - 35 * 86400, now)).toBe(now - 35 * 86400);
    expect(resolveTimestamp(now + 300, now)).toBe(now + 300);
    expect(codeOf(() => resolveTimestamp(now - 35 * 86400 - 1, now))).toEqual(['timestamp_out_of_range', 'timestamp']);
    expect(codeOf(() => resolveTimestamp(now + 301, now))).toEqual(['timestamp_out_of_range', 'timestamp']);
  });

  test('values: numbers or numeric text on sum/last meters; a count meter counts 1', () => {
    expect(valueOf({ value: 2.5 }, meter)).toBe(2.5);
    expect(valueOf({ value: '42' }, meter)).toBe(42);
    expect(valueOf({ value: '-1.5e2' }, meter)).toBe(-150);
    expect(valueOf({}, { ...meter, formula: 'count' })).toBe(1);
    expect(codeOf(() => valueOf({ value: '12abc' }, meter))).toEqual(['invalid_payload', 'payload.value']);
    expect(codeOf(() => valueOf({ value: true }, meter))).toEqual(['invalid_payload', 'payload.value']);
  });

  test('customer: the meter key first, then the stripe_customer_id alias', () => {
    expect(customerIdOf({ customer_id: 'cust_a', stripe_customer_id: 'cust_b' }, meter)).toBe('cust_a');
    expect(customerIdOf({ stripe_customer_id: 'cust_b' }, meter)).toBe('cust_b');
    expect(codeOf(() => customerIdOf({}, meter))).toEqual(['invalid_payload', 'payload.customer_id']);
  });

  test('shape: form-encoded timestamps are read as integers; unknown fields are refused', () => {
    expect(readEventShape({ event_name: 'a', payload: {}, timestamp: '123' }).timestamp).toBe(123);
    expect(codeOf(() => readEventShape({ event_name: 'a', payload: {}, timestamp: '12.5' }))).toEqual(['parameter_invalid', 'timestamp']);
    expect(codeOf(() => readEventShape({ event_name: 'a', payload: {}, color: 'red' }))).toEqual(['parameter_invalid', 'color']);
    expect(codeOf(() => readEventShape('nope'))).toEqual(['parameter_invalid', 'event']);
  });
});
