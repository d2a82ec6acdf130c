// What this tests: the bound of one charge per currency (domain/charge-bounds.ts, issue 38 point 8), over
// every currency of the table and random codes (fast-check): worth at least USD 1,000,000 and less than
// USD 10,000,000, never below a million units (the old bound), a safe whole number of minimum charges; a
// store's own bound overrides it; with Stripe never above Stripe's documented maximum for the currency.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  BOUND_CURRENCIES,
  chargeBound,
  currencyDecimals,
  defaultChargeBound,
  minimumCharge,
  stripeMaxCharge,
  unitsPerUsd,
} from '../../domain/charge-bounds';

const listed = fc.constantFrom(...BOUND_CURRENCIES);
const anyCode = fc.oneof(
  listed,
  fc.stringMatching(/^[a-zA-Z]{3}$/),
  listed.map((c) => c.toUpperCase()),
);
const storeMax = fc.option(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), { nil: null });

/** What the bound is worth in US dollars, by the table's rough magnitude. */
const worthUsd = (currency: string) => defaultChargeBound(currency) / 10 ** currencyDecimals(currency) / unitsPerUsd(currency)!;

describe('the default bound of one charge', () => {
  test('every listed currency: worth at least USD 1,000,000 and less than USD 10,000,000', () => {
    for (const currency of BOUND_CURRENCIES) {
      expect(worthUsd(currency), currency).toBeGreaterThanOrEqual(1_000_000);
      expect(worthUsd(currency), currency).toBeLessThan(10_000_000);
    }
  });

  test('never below a million units of the currency (the bound it replaces), a safe whole number of minimum charges', () => {
    fc.assert(
      fc.property(anyCode, (currency) => {
        const bound = defaultChargeBound(currency);
        expect(Number.isSafeInteger(bound)).toBe(true);
        expect(bound).toBeGreaterThanOrEqual(1_000_000 * minimumCharge(currency));
        expect(bound % minimumCharge(currency)).toBe(0);
      }),
    );
  });

  test('ordinary payments the old bound (a million units) refused now fit: VND, IDR, KRW, CLP, COP', () => {
    expect(defaultChargeBound('vnd')).toBe(100_000_000_000);
    expect(defaultChargeBound('idr')).toBe(10_000_000_000_000);
    expect(defaultChargeBound('krw')).toBe(10_000_000_000);
    expect(defaultChargeBound('clp')).toBe(1_000_000_000);
    expect(defaultChargeBound('cop')).toBe(1_000_000_000_000);
    const ordinaries = [
      ['vnd', 13_000_000], // USD 500
      ['idr', 825_000_000], // IDR 8,250,000.00, USD 500
      ['krw', 1_400_000], // USD 1,000
      ['clp', 1_900_000], // USD 2,000
      ['cop', 205_000_000], // COP 2,050,000.00, USD 500
    ] as const;
    for (const [currency, ordinary] of ordinaries) {
      expect(ordinary).toBeGreaterThan(1_000_000 * minimumCharge(currency));
      expect(defaultChargeBound(currency)).toBeGreaterThanOrEqual(ordinary);
    }
    // The bound of usd, eur and jpy stays a million units; brl and kwd by their value.
    expect([defaultChargeBound('usd'), defaultChargeBound('eur'), defaultChargeBound('brl'), defaultChargeBound('kwd')]).toEqual([
      100_000_000, 100_000_000, 1_000_000_000, 1_000_000_000,
    ]);
  });

  test('case does not matter; a code outside the table gets the largest bound of the table', () => {
    fc.assert(
      fc.property(listed, (currency) => {
        expect(defaultChargeBound(currency.toUpperCase())).toBe(defaultChargeBound(currency));
      }),
    );
    const largestTwoDecimal = Math.max(...BOUND_CURRENCIES.filter((c) => currencyDecimals(c) === 2).map(defaultChargeBound));
    expect(defaultChargeBound('zzz')).toBe(largestTwoDecimal);
    expect(unitsPerUsd('constructor')).toBeNull();
  });
});

describe('the bound a charge is held to', () => {
  test("the store's own bound overrides the default, whatever the currency", () => {
    fc.assert(
      fc.property(anyCode, storeMax, (currency, own) => {
        expect(chargeBound({ storeMax: own, currency })).toBe(own ?? defaultChargeBound(currency));
      }),
    );
  });

  test("with Stripe never above Stripe's maximum for the currency, the store's bound included", () => {
    fc.assert(
      fc.property(anyCode, storeMax, (currency, own) => {
        const bound = chargeBound({ storeMax: own, currency, connectionMax: stripeMaxCharge(currency) });
        expect(bound).toBeLessThanOrEqual(stripeMaxCharge(currency));
        expect(bound).toBe(Math.min(own ?? defaultChargeBound(currency), stripeMaxCharge(currency)));
      }),
    );
  });

  test("Stripe's documented maximum: twelve digits in IDR, eight in every other currency", () => {
    expect([stripeMaxCharge('idr'), stripeMaxCharge('IDR')]).toEqual([999_999_999_999, 999_999_999_999]);
    fc.assert(
      fc.property(
        anyCode.filter((c) => c.toLowerCase() !== 'idr'),
        (currency) => {
          expect(stripeMaxCharge(currency)).toBe(99_999_999);
        },
      ),
    );
  });
});
