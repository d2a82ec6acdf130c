// What this tests: the webhook retry jitter is a pure function of delivery id and attempt (no random
// numbers in the workflow), within [0, 10%), and spread across deliveries.
import { describe, expect, it } from 'vitest';
import { jitterFor, MAX_JITTER, retryDelayAfter, RETRY_DELAYS_MS } from '../../domain/webhook-retry';

describe('jitterFor', () => {
  const ids = Array.from({ length: 2000 }, (_, i) => `0190${String(i).padStart(4, '0')}-7abc-8def-0123-456789abcdef`);

  it('is the same for the same delivery and attempt, and differs between attempts', () => {
    expect(jitterFor(ids[0], 3)).toBe(jitterFor(ids[0], 3));
    expect(new Set([1, 2, 3, 4, 5, 6, 7].map((attempt) => jitterFor(ids[0], attempt))).size).toBe(7);
  });

  it('stays within [0, MAX_JITTER) and spreads deliveries over the whole range', () => {
    const values = ids.map((id) => jitterFor(id, 1));
    expect(Math.min(...values)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...values)).toBeLessThan(MAX_JITTER);
    // Ten equal buckets of the range: each gets a fair share (200 expected of 2000).
    const buckets = Array.from({ length: 10 }, () => 0);
    for (const value of values) buckets[Math.floor((value / MAX_JITTER) * 10)] += 1;
    for (const count of buckets) expect(count).toBeGreaterThan(120);
  });

  it('stretches each delay of the schedule by at most 10%', () => {
    RETRY_DELAYS_MS.forEach((base, i) => {
      const delay = retryDelayAfter(i + 1, jitterFor(ids[1], i + 1))!;
      expect(delay).toBeGreaterThanOrEqual(base);
      expect(delay).toBeLessThanOrEqual(Math.round(base * 1.1));
    });
  });
});
