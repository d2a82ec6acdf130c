// What this tests: usage pricing by example (domain/pricing.ts): included units, flat unit prices
// with fractions, graduated tiers with flat amounts, rounding up/nearest once per line, thresholds,
// and the validation of a price as sent.
import { describe, expect, test } from 'vitest';
import { ApiError } from '../../domain/errors';
import {
  lowestThreshold,
  normalizePrice,
  periodTotal,
  priceLine,
  quantityDecimal,
  roundDecimal,
  spreadOverTiers,
  thresholdReached,
  toDecimal,
  toNumber,
  type PriceSpec,
} from '../../domain/pricing';

const flat = (unit_amount: number, extra: Partial<PriceSpec> = {}): PriceSpec => ({
  unit_amount,
  included_units: 0,
  tiers: null,
  rounding: 'up',
  ...extra,
});

const tiered: PriceSpec = {
  unit_amount: 0,
  included_units: 0,
  rounding: 'up',
  tiers: [
    { up_to: 100, unit_amount: 10 },
    { up_to: 1000, unit_amount: 5, flat_amount: 200 },
    { up_to: null, unit_amount: 1, flat_amount: 1000 },
  ],
};

describe('exact decimals', () => {
  test('toDecimal reads the printed decimal, including exponent forms', () => {
    expect(toDecimal(0.07)).toEqual({ n: 7n, s: 2 });
    expect(toDecimal(1e-7)).toEqual({ n: 1n, s: 7 });
    expect(toDecimal(1.5e21)).toEqual({ n: 1500000000000000000000n, s: 0 });
    expect(toDecimal(-2.5)).toEqual({ n: -25n, s: 1 });
    expect(toDecimal(42)).toEqual({ n: 42n, s: 0 });
  });

  test('roundDecimal rounds up toward +infinity and nearest with halves up', () => {
    expect(roundDecimal({ n: 701n, s: 2 }, 'up')).toBe(8n);
    expect(roundDecimal({ n: 700n, s: 2 }, 'up')).toBe(7n);
    expect(roundDecimal({ n: 750n, s: 2 }, 'nearest')).toBe(8n);
    expect(roundDecimal({ n: 749n, s: 2 }, 'nearest')).toBe(7n);
    expect(roundDecimal({ n: -150n, s: 2 }, 'up')).toBe(-1n);
    expect(roundDecimal({ n: -150n, s: 2 }, 'nearest')).toBe(-1n);
  });

  test('quantityDecimal drops the float noise of a database sum beyond 9 decimals', () => {
    expect(toNumber(quantityDecimal(0.1 + 0.2))).toBe(0.3);
    expect(toNumber(quantityDecimal(2.5))).toBe(2.5);
  });
});

describe('flat unit price', () => {
  test('100 units at 0.07 is exactly 7 (a double product would round up to 8)', () => {
    expect(0.07 * 100).not.toBe(7);
    expect(priceLine(100, flat(0.07)).amount).toBe(7);
  });

  test('fractional totals round up by default', () => {
    expect(priceLine(3, flat(2.5)).amount).toBe(8); // 7.5 -> 8
    expect(priceLine(1, flat(0.001)).amount).toBe(1);
  });

  test('nearest rounds halves up and lower fractions down', () => {
    expect(priceLine(3, flat(2.5, { rounding: 'nearest' })).amount).toBe(8); // 7.5
    expect(priceLine(1, flat(2.4, { rounding: 'nearest' })).amount).toBe(2);
    expect(priceLine(1, flat(2.6, { rounding: 'nearest' })).amount).toBe(3);
  });

  test('included units are never billed: billable is quantity minus included, not below zero', () => {
    const line = priceLine(1500, flat(2.5, { included_units: 1000 }));
    expect(line).toMatchObject({ quantity: 1500, included: 1000, billable: 500, amount: 1250, unit_amount: 2.5 });
    expect(priceLine(999, flat(2.5, { included_units: 1000 })).amount).toBe(0);
    expect(priceLine(1000, flat(2.5, { included_units: 1000 })).billable).toBe(0);
  });

  test('a zero quantity, or a negative sum, costs nothing', () => {
    expect(priceLine(0, flat(5)).amount).toBe(0);
    expect(priceLine(-20, flat(5)).amount).toBe(0);
  });

  test('a deactivated meter keeps its quantity with a zero price', () => {
    const line = priceLine(1500, flat(2.5, { included_units: 1000 }), false);
    expect(line).toMatchObject({ quantity: 1500, included: 1000, billable: 500, unit_amount: 0, amount: 0 });
  });
});

describe('graduated tiers', () => {
  test('units inside the first tier only touch it (no flat amount of later tiers)', () => {
    const line = priceLine(50, tiered);
    expect(line.amount).toBe(500);
    expect(line.tiers.map((t) => t.tier)).toEqual([0]);
    expect(line.unit_amount).toBeNull();
  });

  test('a tier boundary belongs to the lower tier: exactly 100 units do not touch tier 2', () => {
    expect(priceLine(100, tiered).amount).toBe(1000);
    expect(priceLine(100, tiered).tiers).toHaveLength(1);
  });

  test('one unit into tier 2 adds its unit price and its flat amount once', () => {
    expect(priceLine(101, tiered).amount).toBe(1000 + 5 + 200);
  });

  test('every tier touched: each unit priced in its own tier, each flat amount once', () => {
    // 100 x 10 + 900 x 5 + 200 + 500 x 1 + 1000
    expect(priceLine(1500, tiered).amount).toBe(1000 + 4500 + 200 + 500 + 1000);
  });

  test('tiers count from the billable quantity, after the included units', () => {
    const withIncluded = { ...tiered, included_units: 1000 };
    expect(priceLine(1050, withIncluded).amount).toBe(500);
    expect(priceLine(1101, withIncluded).amount).toBe(1000 + 5 + 200);
    expect(priceLine(1000, withIncluded).amount).toBe(0);
  });

  test('a fraction of a unit in a tier touches it', () => {
    const line = priceLine(100.5, tiered);
    expect(line.tiers.map((t) => t.tier)).toEqual([0, 1]);
    expect(line.amount).toBe(1203); // 1000 + 0.5 x 5 + 200 = 1202.5, rounded up once
  });

  test('rounding happens once on the line total, not per tier', () => {
    const spec: PriceSpec = {
      unit_amount: 0,
      included_units: 0,
      rounding: 'up',
      tiers: [
        { up_to: 1, unit_amount: 0.4 },
        { up_to: null, unit_amount: 0.4 },
      ],
    };
    // Per tier: ceil(0.4) + ceil(0.4) = 2; once on the line: ceil(0.8) = 1.
    expect(priceLine(2, spec).amount).toBe(1);
  });

  test('spreadOverTiers puts every billable unit in exactly one tier', () => {
    const uses = spreadOverTiers(toDecimal(1500), tiered.tiers!);
    expect(uses.map((u) => toNumber(u.units))).toEqual([100, 900, 500]);
  });
});

describe('period total and threshold', () => {
  test('the total is the sum of the rounded lines', () => {
    const lines = [priceLine(3, flat(2.5)), priceLine(3, flat(2.5))];
    expect(periodTotal(lines)).toBe(16); // not ceil(15) = 15
  });

  test('the lowest threshold among the items applies; items without one are ignored', () => {
    expect(lowestThreshold([{ billing_threshold: null }, { billing_threshold: 5000 }, { billing_threshold: 2000 }])).toBe(2000);
    expect(lowestThreshold([{ billing_threshold: null }])).toBeNull();
    expect(lowestThreshold([])).toBeNull();
  });

  test('the threshold is reached at equality, never without a threshold', () => {
    expect(thresholdReached(2000, 2000)).toBe(true);
    expect(thresholdReached(1999, 2000)).toBe(false);
    expect(thresholdReached(10 ** 9, null)).toBe(false);
  });
});

describe('normalizePrice', () => {
  const codeOf = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      if (error instanceof ApiError) return { code: error.code, param: error.param };
      throw error;
    }
    return null;
  };

  test('applies the defaults: included 0, tiers null, rounding up, threshold null', () => {
    expect(normalizePrice({ unit_amount: 2.5 })).toEqual({
      unit_amount: 2.5,
      included_units: 0,
      tiers: null,
      rounding: 'up',
      billing_threshold: null,
    });
  });

  test('unit_amount is required without tiers and defaults to 0 with them', () => {
    expect(codeOf(() => normalizePrice({}))).toEqual({ code: 'parameter_missing', param: 'unit_amount' });
    expect(normalizePrice({ tiers: [{ up_to: null, unit_amount: 1 }] }).unit_amount).toBe(0);
  });

  test('a non-zero unit_amount beside tiers is kept as sent and takes no part in the price', () => {
    const spec = normalizePrice({ unit_amount: 3, tiers: [{ up_to: null, unit_amount: 1 }] });
    expect(spec.unit_amount).toBe(3);
    expect(priceLine(10, spec)).toMatchObject({ amount: 10, unit_amount: null });
  });

  test('tier rules: 1 to 20, ascending, only the last open-ended, whole flat amounts', () => {
    const t = (tiers: unknown) => codeOf(() => normalizePrice({ tiers: tiers as never }));
    expect(t([])).toEqual({ code: 'parameter_invalid', param: 'tiers' });
    expect(t(Array.from({ length: 21 }, (_, i) => ({ up_to: i === 20 ? null : i + 1, unit_amount: 1 })))).toEqual({
      code: 'parameter_invalid',
      param: 'tiers',
    });
    expect(t([{ up_to: 10, unit_amount: 1 }])).toEqual({ code: 'parameter_invalid', param: 'tiers[0].up_to' });
    expect(
      t([
        { up_to: null, unit_amount: 1 },
        { up_to: null, unit_amount: 1 },
      ]),
    ).toEqual({ code: 'parameter_invalid', param: 'tiers[0].up_to' });
    expect(
      t([
        { up_to: 10, unit_amount: 1 },
        { up_to: 10, unit_amount: 1 },
        { up_to: null, unit_amount: 1 },
      ]),
    ).toEqual({
      code: 'parameter_invalid',
      param: 'tiers[1].up_to',
    });
    expect(
      t([
        { up_to: 0, unit_amount: 1 },
        { up_to: null, unit_amount: 1 },
      ]),
    ).toEqual({ code: 'parameter_invalid', param: 'tiers[0].up_to' });
    expect(t([{ up_to: null, unit_amount: 1, flat_amount: 2.5 }])).toEqual({ code: 'parameter_invalid', param: 'tiers[0].flat_amount' });
    expect(t([{ up_to: null }])).toEqual({ code: 'parameter_missing', param: 'tiers[0].unit_amount' });
    expect(t([{ up_to: null, unit_amount: -1 }])).toEqual({ code: 'parameter_invalid', param: 'tiers[0].unit_amount' });
    expect(t(Array.from({ length: 20 }, (_, i) => ({ up_to: i === 19 ? null : (i + 1) * 10, unit_amount: 1 })))).toBeNull();
  });

  test('negative amounts and fractional thresholds are refused with their param', () => {
    expect(codeOf(() => normalizePrice({ unit_amount: -1 }))).toEqual({ code: 'parameter_invalid', param: 'unit_amount' });
    expect(codeOf(() => normalizePrice({ unit_amount: 1, included_units: -5 }))).toEqual({ code: 'parameter_invalid', param: 'included_units' });
    expect(codeOf(() => normalizePrice({ unit_amount: 1, billing_threshold: 10.5 }))).toEqual({
      code: 'parameter_invalid',
      param: 'billing_threshold',
    });
    expect(codeOf(() => normalizePrice({ unit_amount: 1, billing_threshold: 0 }))).toEqual({ code: 'parameter_invalid', param: 'billing_threshold' });
  });
});
