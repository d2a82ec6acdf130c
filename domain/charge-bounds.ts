// A currency's magnitudes for charges (issue 38, point 8): its minor unit, its minimum, the default bound
// of one charge that refuses no ordinary payment in any ISO 4217 currency, Stripe's own maximum per
// currency, and the bound a charge is held to (the store's `max_charge_amount` or the default, never
// above the payment connection's own maximum).
//
// The default rule: a power of ten of the currency's major units worth at least USD 1,000,000 (and less
// than USD 10,000,000), never below a million units: 10^(6 + m) units, where 10^m is the smallest power
// of ten (m >= 0) at least the currency's units per US dollar, times 10^decimals for the minor unit.
// Examples: usd 10^6 dollars = 100,000,000 cents; brl (about 5.5 a dollar) 10^7 reais = 1,000,000,000
// centavos; vnd (about 25,000 a dollar, no minor unit) 10^11 dong; kwd (3 decimals) 10^6 dinars =
// 1,000,000,000 fils. The magnitudes below are rough: a rate moving within its power of ten changes
// nothing. A code not in the table gets the table's largest bound: an unknown code is never refused an
// ordinary amount.

/** ISO 4217 currencies without minor units (as Stripe counts them): their smallest charge is 1. */
const ZERO_DECIMAL = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);
const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/** Decimals of the currency's minor unit as amounts count it: 0 for jpy, 3 for kwd, else 2 (usd, brl, huf, isk...). */
export function currencyDecimals(currency: string): number {
  const code = currency.toLowerCase();
  if (ZERO_DECIMAL.has(code)) return 0;
  if (THREE_DECIMAL.has(code)) return 3;
  return 2;
}

/** One unit of the currency in its minor unit (100 for brl or usd). */
export function minimumCharge(currency: string): number {
  return 10 ** currencyDecimals(currency);
}

/**
 * Rough units of each currency per US dollar (late 2026), active ISO 4217 codes, grouped by the power
 * of ten they fall in (only that power is used). A currency worth more than a dollar counts as 1.
 */
// prettier-ignore
const UNITS_PER_USD: Readonly<Record<string, number>> = {
  // At most 1 a dollar: 10^6 units.
  usd: 1, eur: 1, gbp: 1, chf: 1, bhd: 1, kwd: 1, omr: 1, jod: 1, kyd: 1, gip: 1, fkp: 1, shp: 1, bsd: 1, bmd: 1,
  pab: 1, cuc: 1,
  // At most 10 a dollar: 10^7 units.
  cad: 1.4, aud: 1.5, nzd: 1.7, sgd: 1.3, bnd: 1.3, azn: 1.7, tnd: 3.1, lyd: 5.5, brl: 5.5, pen: 3.7, ils: 3.7,
  aed: 3.7, sar: 3.8, qar: 3.6, pln: 4, ron: 4.6, myr: 4.5, gel: 2.7, byn: 3.3, bgn: 1.8, bam: 1.8, xcd: 2.7,
  bbd: 2, bzd: 2, awg: 1.8, ang: 1.8, xcg: 1.8, fjd: 2.3, wst: 2.8, pgk: 4, tmt: 3.5, top: 2.4, gtq: 7.7,
  cny: 7.2, hkd: 7.8, dkk: 6.9, mop: 8, ttd: 6.8, sbd: 8.4, svc: 8.8, bob: 6.9, mad: 10,
  // At most 100 a dollar: 10^8 units.
  sek: 10.5, nok: 10.8, tjs: 11, bwp: 13.5, mvr: 15.4, ghs: 12, ern: 15, srd: 36, zmw: 27, zwg: 27, mxn: 19,
  zar: 18, nad: 18, lsl: 18, szl: 18, try: 42, czk: 23, egp: 50, inr: 88, rub: 90, uah: 41, twd: 32, thb: 35,
  php: 58, uyu: 40, hnl: 26, nio: 37, dop: 62, mur: 46, scr: 14, afn: 70, btn: 88, mkd: 55, mdl: 17, kgs: 87,
  mru: 40, gmd: 72, mzn: 64, sle: 23, stn: 23, cup: 24, cve: 100,
  // At most 1,000 a dollar: 10^9 units.
  jpy: 150, isk: 138, huf: 360, kzt: 520, amd: 390, all: 92, rsd: 105, kes: 130, etb: 150, htg: 132, jmd: 160,
  bdt: 122, npr: 140, lkr: 300, pkr: 280, dzd: 135, sdg: 600, yer: 250, xaf: 600, xof: 600, xpf: 110, kmf: 450,
  djf: 178, vuv: 120, aoa: 920, kpw: 900, lrd: 200, sos: 570, clp: 950, crc: 510, gyd: 209,
  // At most 10,000 a dollar: 10^10 units.
  krw: 1400, ars: 1500, ves: 2000, rwf: 1450, bif: 2950, mga: 4500, mwk: 1750, ngn: 1550, cdf: 2850, mnt: 3600,
  cop: 4100, tzs: 2600, ugx: 3700, pyg: 7800, khr: 4100, mmk: 2100, gnf: 8700, iqd: 1310, ssp: 4600,
  // At most 100,000 a dollar: 10^11 units.
  vnd: 26_000, idr: 16_500, lak: 21_700, lbp: 89_500, syp: 13_000, uzs: 12_700, sll: 22_500, std: 22_500,
  zwl: 30_000,
  // At most 1,000,000 a dollar: 10^12 units.
  irr: 1_000_000,
};

/** The least bound: a million units of the currency (the bound before per-currency magnitudes). */
const MIN_POWER = 6;

/** m for the smallest power of ten 10^m (m >= 0) at least `units` (integer steps: no log rounding). */
function powerOfTenAtLeast(units: number): number {
  let m = 0;
  while (10 ** m < units) m += 1;
  return m;
}

const LARGEST_POWER = Math.max(...Object.values(UNITS_PER_USD).map(powerOfTenAtLeast));

/** The currencies of the table (lowercase ISO 4217 codes). */
export const BOUND_CURRENCIES: readonly string[] = Object.keys(UNITS_PER_USD);

/** Rough units of the currency per US dollar; null when the code is not in the table. */
export function unitsPerUsd(currency: string): number | null {
  const code = currency.toLowerCase();
  return Object.hasOwn(UNITS_PER_USD, code) ? UNITS_PER_USD[code] : null;
}

/** The default bound of one charge in minor units (the rule at the top of this module). */
export function defaultChargeBound(currency: string): number {
  const rate = unitsPerUsd(currency);
  const power = MIN_POWER + (rate === null ? LARGEST_POWER : powerOfTenAtLeast(rate));
  return 10 ** (power + currencyDecimals(currency));
}

/**
 * Stripe's maximum amount of one charge, in minor units. Stripe documents amounts "up to twelve digits
 * for IDR (for example, a value of 999999999999 for a charge of 9,999,999,999.99 IDR), and up to eight
 * digits for all other currencies (for example, a value of 99999999 for a charge of 999,999.99 USD)"
 * (docs.stripe.com/currencies#minimum-and-maximum-charge-amounts, as quoted in signalapp/Signal-iOS's
 * Stripe.isAmountTooLarge); stripe-node 23.1.0's PaymentIntent `amount` says the same ("supports up to
 * eight digits"). A zero-decimal currency counts whole units: at most 99,999,999 VND or JPY.
 */
export function stripeMaxCharge(currency: string): number {
  return currency.toLowerCase() === 'idr' ? 999_999_999_999 : 99_999_999;
}

/**
 * The bound a charge is held to: the store's own (admin CLI `stores set --max-charge-amount`) or the
 * currency's default, never above the connection's own maximum (null or absent: it has none).
 */
export function chargeBound(input: { storeMax?: number | null; currency: string; connectionMax?: number | null }): number {
  const own = input.storeMax ?? defaultChargeBound(input.currency);
  return input.connectionMax === null || input.connectionMax === undefined ? own : Math.min(own, input.connectionMax);
}
