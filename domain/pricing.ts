// Usage pricing as pure functions: included units, graduated tiers with flat amounts, fractional unit
// prices, rounding once per line to whole minor units, and the lowest billing threshold over a period.
// Arithmetic is exact: every number is read as the decimal it prints as (0.07 is 7/100, not the
// binary double near it) and multiplied as big integers, so a line never gains or loses a minor unit
// to floating point; the only rounding is the one the rule names, once, on the line's total.
import { ApiError, invalid } from './errors';

export type Rounding = 'up' | 'nearest';

export interface Tier {
  /** Upper bound of the tier in billable units; null only on the last tier. */
  up_to: number | null;
  /** Price of one unit inside the tier, minor unit, fractions allowed. */
  unit_amount: number;
  /** Charged once when any unit falls in the tier, minor unit. */
  flat_amount?: number | null;
}

export interface PriceSpec {
  unit_amount: number;
  included_units: number;
  tiers: Tier[] | null;
  rounding: Rounding;
}

export const TIERS_MIN = 1;
export const TIERS_MAX = 20;
/** Quantities are summed as doubles by the database; they are read to this many decimals. */
export const QUANTITY_DECIMALS = 9;

// ---------------------------------------------------------------------------------------------
// Exact decimals: value = n / 10^s with n a bigint.

export interface Decimal {
  n: bigint;
  s: number;
}

const TEN = 10n;
const pow10 = (k: number): bigint => TEN ** BigInt(k);

/** The decimal a finite number prints as (its shortest round-trip form). */
export function toDecimal(x: number): Decimal {
  if (!Number.isFinite(x)) throw new RangeError(`not a finite number: ${x}`);
  const text = String(x);
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(text);
  if (!m) throw new RangeError(`unreadable number: ${text}`);
  const [, sign, whole, frac = '', exp = '0'] = m;
  const digits = BigInt(`${whole}${frac}`) * (sign === '-' ? -1n : 1n);
  const scale = frac.length - Number(exp);
  return scale >= 0 ? { n: digits, s: scale } : { n: digits * pow10(-scale), s: 0 };
}

function align(a: Decimal, b: Decimal): [bigint, bigint, number] {
  if (a.s === b.s) return [a.n, b.n, a.s];
  if (a.s > b.s) return [a.n, b.n * pow10(a.s - b.s), a.s];
  return [a.n * pow10(b.s - a.s), b.n, b.s];
}

export const ZERO: Decimal = { n: 0n, s: 0 };
export const add = (a: Decimal, b: Decimal): Decimal => {
  const [x, y, s] = align(a, b);
  return { n: x + y, s };
};
export const sub = (a: Decimal, b: Decimal): Decimal => {
  const [x, y, s] = align(a, b);
  return { n: x - y, s };
};
export const mul = (a: Decimal, b: Decimal): Decimal => ({ n: a.n * b.n, s: a.s + b.s });
export const cmp = (a: Decimal, b: Decimal): number => {
  const [x, y] = align(a, b);
  return x === y ? 0 : x < y ? -1 : 1;
};
export const dmin = (a: Decimal, b: Decimal): Decimal => (cmp(a, b) <= 0 ? a : b);
export const dmax = (a: Decimal, b: Decimal): Decimal => (cmp(a, b) >= 0 ? a : b);
export const isPositive = (a: Decimal): boolean => a.n > 0n;

/** Nearest double (for display only: money never goes through this). */
export function toNumber(a: Decimal): number {
  return Number(`${a.n}e-${a.s}`);
}

/** Rounds to a whole number: `up` toward +infinity, `nearest` with halves going up. */
export function roundDecimal(a: Decimal, rounding: Rounding): bigint {
  const unit = pow10(a.s);
  const floor = a.n >= 0n ? a.n / unit : -((-a.n + unit - 1n) / unit);
  const rest = a.n - floor * unit; // 0 <= rest < unit
  if (rest === 0n) return floor;
  if (rounding === 'up') return floor + 1n;
  return 2n * rest >= unit ? floor + 1n : floor;
}

/** A quantity as the database summed it, read to QUANTITY_DECIMALS decimals (float noise dropped). */
export function quantityDecimal(quantity: number): Decimal {
  const scaled = toDecimal(quantity);
  if (scaled.s <= QUANTITY_DECIMALS) return scaled;
  // Reading n / 10^(s-9) as a whole number and rounding it keeps exactly 9 decimals.
  return { n: roundDecimal({ n: scaled.n, s: scaled.s - QUANTITY_DECIMALS }, 'nearest'), s: QUANTITY_DECIMALS };
}

// ---------------------------------------------------------------------------------------------
// One line: a meter's quantity priced by its item.

export interface TierUse {
  /** Index of the tier in the item's list. */
  tier: number;
  /** Billable units that fall in this tier. */
  units: Decimal;
  /** units x unit_amount + flat_amount, before rounding. */
  exact: Decimal;
}

export interface PricedLine {
  quantity: number;
  included: number;
  billable: number;
  /** The item's unit price; null with tiers (each tier has its own). */
  unit_amount: number | null;
  /** Whole minor units: the exact total rounded once. */
  amount: number;
  /** Before rounding (tests and explanations). */
  exact: Decimal;
  tiers: TierUse[];
}

/** billable = quantity - included units, never below zero. */
export function billableOf(quantity: Decimal, includedUnits: number): Decimal {
  return dmax(ZERO, sub(quantity, toDecimal(includedUnits)));
}

/** How the billable units spread over the tiers: each unit falls in exactly one tier. */
export function spreadOverTiers(billable: Decimal, tiers: Tier[]): TierUse[] {
  const uses: TierUse[] = [];
  let lower = ZERO;
  for (let i = 0; i < tiers.length; i++) {
    const tier = tiers[i];
    const upper = tier.up_to === null ? null : toDecimal(tier.up_to);
    const top = upper === null ? billable : dmin(billable, upper);
    const units = dmax(ZERO, sub(top, lower));
    if (isPositive(units)) {
      let exact = mul(units, toDecimal(tier.unit_amount));
      if (tier.flat_amount) exact = add(exact, toDecimal(tier.flat_amount));
      uses.push({ tier: i, units, exact });
    }
    if (upper === null) break;
    lower = upper;
  }
  return uses;
}

/**
 * Prices one line. `priced: false` (a deactivated meter) keeps quantity, included and billable
 * but the price is zero.
 */
export function priceLine(quantity: number, spec: PriceSpec, priced = true): PricedLine {
  const q = quantityDecimal(quantity);
  const billable = billableOf(q, spec.included_units);
  const shown = {
    quantity: toNumber(q),
    included: spec.included_units,
    billable: toNumber(billable),
  };
  if (!priced) return { ...shown, unit_amount: 0, amount: 0, exact: ZERO, tiers: [] };
  let exact: Decimal;
  let tiers: TierUse[] = [];
  if (spec.tiers && spec.tiers.length > 0) {
    tiers = spreadOverTiers(billable, spec.tiers);
    exact = tiers.reduce((sum, use) => add(sum, use.exact), ZERO);
  } else {
    exact = mul(billable, toDecimal(spec.unit_amount));
  }
  const rounded = roundDecimal(exact, spec.rounding);
  if (rounded > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError('line amount beyond the safe integer range');
  return { ...shown, unit_amount: spec.tiers && spec.tiers.length > 0 ? null : spec.unit_amount, amount: Number(rounded), exact, tiers };
}

/** The period total: the sum of the rounded lines (never re-rounded). */
export function periodTotal(lines: { amount: number }[]): number {
  return lines.reduce((sum, line) => sum + line.amount, 0);
}

/** The lowest billing threshold among the items, or null when none has one. */
export function lowestThreshold(items: { billing_threshold: number | null }[]): number | null {
  let lowest: number | null = null;
  for (const item of items) {
    if (item.billing_threshold === null || item.billing_threshold === undefined) continue;
    if (lowest === null || item.billing_threshold < lowest) lowest = item.billing_threshold;
  }
  return lowest;
}

/** Whether the period total reached the threshold (a threshold of null never closes a period). */
export function thresholdReached(amountTotal: number, threshold: number | null): boolean {
  return threshold !== null && amountTotal >= threshold;
}

// ---------------------------------------------------------------------------------------------
// Validation of a price as sent (usage item body, offer usage rows).

export interface PriceInput {
  unit_amount?: number | null;
  included_units?: number | null;
  tiers?: { up_to?: number | null; unit_amount?: number | null; flat_amount?: number | null }[] | null;
  rounding?: Rounding | null;
  billing_threshold?: number | null;
}

export interface NormalizedPrice extends PriceSpec {
  billing_threshold: number | null;
}

const finiteNonNegative = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x >= 0;

/** Applies the defaults (DESIGN.md: included_units 0, tiers null, rounding up, threshold null) and the rules. */
export function normalizePrice(input: PriceInput): NormalizedPrice {
  const hasTiers = input.tiers !== undefined && input.tiers !== null;
  if (!hasTiers && (input.unit_amount === undefined || input.unit_amount === null)) {
    throw new ApiError('parameter_missing', 'unit_amount is required unless tiers are sent.', { param: 'unit_amount' });
  }
  const unitAmount = input.unit_amount ?? 0;
  if (!finiteNonNegative(unitAmount)) throw invalid('unit_amount', 'unit_amount is a number of minor units, 0 or more.');
  const included = input.included_units ?? 0;
  if (!finiteNonNegative(included)) throw invalid('included_units', 'included_units is a number, 0 or more.');
  let tiers: Tier[] | null = null;
  if (hasTiers) {
    // "With tiers, the item's unit_amount is not part of the calculation": kept as sent, ignored by priceLine.
    tiers = normalizeTiers(input.tiers!);
  }
  const threshold = input.billing_threshold ?? null;
  if (threshold !== null && !(Number.isInteger(threshold) && threshold > 0)) {
    throw invalid('billing_threshold', 'billing_threshold is a whole number of minor units above 0.');
  }
  return { unit_amount: unitAmount, included_units: included, tiers, rounding: input.rounding ?? 'up', billing_threshold: threshold };
}

export function normalizeTiers(input: NonNullable<PriceInput['tiers']>): Tier[] {
  if (!Array.isArray(input) || input.length < TIERS_MIN || input.length > TIERS_MAX) {
    throw invalid('tiers', `tiers is a list of ${TIERS_MIN} to ${TIERS_MAX} tiers.`);
  }
  const tiers: Tier[] = [];
  let previous = 0;
  input.forEach((raw, i) => {
    const last = i === input.length - 1;
    const upTo = raw.up_to ?? null;
    if (last && upTo !== null) throw invalid(`tiers[${i}].up_to`, 'The last tier has up_to null (it covers every unit above the previous tier).');
    if (!last) {
      if (upTo === null) throw invalid(`tiers[${i}].up_to`, 'Only the last tier has up_to null.');
      if (!(typeof upTo === 'number' && Number.isFinite(upTo) && upTo > previous)) {
        throw invalid(`tiers[${i}].up_to`, 'Tiers are in ascending up_to order, each above the previous one (and above 0).');
      }
      previous = upTo;
    }
    if (raw.unit_amount === undefined || raw.unit_amount === null) {
      throw new ApiError('parameter_missing', `Missing required param: tiers[${i}].unit_amount.`, { param: `tiers[${i}].unit_amount` });
    }
    if (!finiteNonNegative(raw.unit_amount)) throw invalid(`tiers[${i}].unit_amount`, 'A tier unit_amount is a number of minor units, 0 or more.');
    const flat = raw.flat_amount ?? null;
    if (flat !== null && !(Number.isInteger(flat) && flat >= 0)) {
      throw invalid(`tiers[${i}].flat_amount`, 'flat_amount is a whole number of minor units, 0 or more.');
    }
    tiers.push({ up_to: upTo, unit_amount: raw.unit_amount, ...(flat !== null ? { flat_amount: flat } : {}) });
  });
  return tiers;
}

// Intl's decimals per currency code, remembered: building a NumberFormat costs more than the rest of a
// checkout create's summary (issue 30's profile). ISO 4217 has under 200 codes; the bound only guards odd input.
export const PLAIN_DIGITS_MAX = 500;
const plainDigits = new Map<string, number>();

function plainDigitsOf(code: string): number {
  const known = plainDigits.get(code);
  if (known !== undefined) return known;
  const digits = new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits ?? 2;
  if (plainDigits.size >= PLAIN_DIGITS_MAX) plainDigits.clear();
  plainDigits.set(code, digits);
  return digits;
}

/** Currency codes whose decimals are remembered now (at most PLAIN_DIGITS_MAX). */
export const plainDigitsKnown = (): number => plainDigits.size;

/** Minor units as "49.90 BRL" (the currency's own number of decimals), for logs and operator screens. */
export function plainMoney(amount: number, currency: string): string {
  const code = currency.toUpperCase();
  const digits = plainDigitsOf(code);
  return `${(amount / 10 ** digits).toFixed(digits)} ${code}`;
}
