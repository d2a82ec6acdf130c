// What this tests: properties of usage pricing over random prices and quantities (fast-check):
// the period total is the sum of the rounded lines, tiers cover every billable unit exactly once,
// included units are never billed, and rounding moves a line by less than one minor unit.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  add,
  billableOf,
  cmp,
  mul,
  periodTotal,
  priceLine,
  quantityDecimal,
  spreadOverTiers,
  sub,
  toDecimal,
  ZERO,
  type PriceSpec,
  type Tier,
} from '../../domain/pricing';

// Prices with up to 4 decimals, as merchants write them (0.0025 per unit, 12.5, ...).
const price = fc.integer({ min: 0, max: 5_000_000 }).map((n) => n / 10_000);
const quantity = fc.oneof(
  fc.integer({ min: 0, max: 2_000_000 }),
  fc.integer({ min: 0, max: 20_000_000 }).map((n) => n / 1000),
);
const rounding = fc.constantFrom<'up' | 'nearest'>('up', 'nearest');

const tiers: fc.Arbitrary<Tier[]> = fc
  .tuple(
    fc.uniqueArray(fc.integer({ min: 1, max: 1_000_000 }), { minLength: 0, maxLength: 19 }),
    fc.array(fc.tuple(price, fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: undefined })), { minLength: 20, maxLength: 20 }),
  )
  .map(([bounds, prices]) => {
    const sorted = [...bounds].sort((a, b) => a - b);
    const ups: (number | null)[] = [...sorted, null];
    return ups.map((up_to, i) => ({ up_to, unit_amount: prices[i][0], ...(prices[i][1] !== undefined ? { flat_amount: prices[i][1] } : {}) }));
  });

const spec: fc.Arbitrary<PriceSpec> = fc
  .record({
    unit_amount: price,
    included_units: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 100_000 })),
    tiers: fc.option(tiers, { nil: null }),
    rounding,
  })
  .map((s) => (s.tiers ? { ...s, unit_amount: 0 } : s));

describe('pricing properties', () => {
  test('the period total equals the sum of the rounded line amounts, each a whole non-negative number', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(quantity, spec), { minLength: 1, maxLength: 8 }), (rows) => {
        const lines = rows.map(([q, s]) => priceLine(q, s));
        for (const line of lines) {
          expect(Number.isInteger(line.amount)).toBe(true);
          expect(line.amount).toBeGreaterThanOrEqual(0);
        }
        expect(periodTotal(lines)).toBe(lines.reduce((sum, l) => sum + l.amount, 0));
      }),
    );
  });

  test('rounding moves a line by less than one minor unit: up in [exact, exact+1), nearest within half', () => {
    fc.assert(
      fc.property(quantity, spec, (q, s) => {
        const line = priceLine(q, s);
        const amount = toDecimal(line.amount);
        const diff = sub(amount, line.exact);
        if (s.rounding === 'up') {
          expect(cmp(diff, ZERO)).toBeGreaterThanOrEqual(0);
          expect(cmp(diff, toDecimal(1))).toBeLessThan(0);
        } else {
          expect(cmp(mul(diff, toDecimal(2)), toDecimal(1))).toBeLessThanOrEqual(0);
          expect(cmp(mul(diff, toDecimal(2)), toDecimal(-1))).toBeGreaterThan(0);
        }
      }),
    );
  });

  test('tiers cover every billable unit exactly once, each tier within its bounds', () => {
    fc.assert(
      fc.property(quantity, tiers, (q, t) => {
        const billable = quantityDecimal(q);
        const uses = spreadOverTiers(billable, t);
        const covered = uses.reduce((sum, u) => add(sum, u.units), ZERO);
        expect(cmp(covered, billable)).toBe(0);
        let previousTier = -1;
        for (const use of uses) {
          expect(use.tier).toBeGreaterThan(previousTier);
          previousTier = use.tier;
          const tier = t[use.tier];
          const lower = use.tier === 0 ? 0 : (t[use.tier - 1].up_to as number);
          if (tier.up_to !== null) expect(cmp(use.units, toDecimal(tier.up_to - lower))).toBeLessThanOrEqual(0);
          expect(cmp(use.units, ZERO)).toBeGreaterThan(0);
        }
      }),
    );
  });

  test('each touched tier adds its flat amount once and untouched tiers add nothing', () => {
    fc.assert(
      fc.property(quantity, tiers, (q, t) => {
        const uses = spreadOverTiers(quantityDecimal(q), t);
        const expected = uses.reduce(
          (sum, use) => add(add(sum, mul(use.units, toDecimal(t[use.tier].unit_amount))), toDecimal(t[use.tier].flat_amount ?? 0)),
          ZERO,
        );
        const line = priceLine(q, { unit_amount: 0, included_units: 0, tiers: t, rounding: 'up' });
        expect(cmp(line.exact, expected)).toBe(0);
      }),
    );
  });

  test('included units are never billed: pricing q with k included equals pricing q-k with none', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2_000_000 }), fc.integer({ min: 0, max: 2_000_000 }), spec, (q, k, s) => {
        const withIncluded = priceLine(q, { ...s, included_units: k });
        const shifted = priceLine(Math.max(0, q - k), { ...s, included_units: 0 });
        expect(withIncluded.amount).toBe(shifted.amount);
        if (q <= k) expect(withIncluded.amount).toBe(0);
        expect(cmp(billableOf(toDecimal(q), k), toDecimal(Math.max(0, q - k)))).toBe(0);
      }),
    );
  });

  test('more usage never costs less (amounts are monotonic in the quantity)', () => {
    fc.assert(
      fc.property(quantity, quantity, spec, (a, b, s) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        expect(priceLine(hi, s).amount).toBeGreaterThanOrEqual(priceLine(lo, s).amount);
      }),
    );
  });

  test('a flat price is exactly quantity x unit price before rounding (no float drift)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000 }), price, (q, p) => {
        const line = priceLine(q, { unit_amount: p, included_units: 0, tiers: null, rounding: 'up' });
        expect(cmp(line.exact, mul(toDecimal(q), toDecimal(p)))).toBe(0);
      }),
    );
  });
});
