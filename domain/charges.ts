// Rules of a one-off subscription charge's body (spec, Subscription charges): the currency, the
// minimum of one currency unit, the store's upper bound, lines adding up to the amount, and the order items it becomes.
import { ApiError, invalid } from './errors';
import { boundedKey, ID_LENGTH_MAX } from './bounded-keys';
import { minimumCharge } from './charge-bounds';

export interface ChargeLineInput {
  description: string;
  quantity?: number;
  unit_amount: number;
}

export interface ChargeLine {
  description: string;
  quantity: number;
  unit_amount: number;
  amount: number;
}

export const CHARGE_DESCRIPTION_MAX = 140;
export const CHARGE_LINES_MAX = 50;
/** A line's quantity and unit_amount bounds (either sign): 50 lines of their product still add up exactly (below 2^53). */
export const CHARGE_LINE_QUANTITY_MAX = 100_000;
export const CHARGE_LINE_UNIT_AMOUNT_MAX = 1_000_000_000;

// The currency's minor unit and minimum live with the bounds (one module for a currency's magnitudes).
export { currencyDecimals, minimumCharge } from './charge-bounds';

export interface NormalizedCharge {
  amount: number;
  currency: string;
  description: string | null;
  lines: ChargeLine[];
}

/**
 * Checks, in the spec's order, what is left after the subscription checks: currency_mismatch,
 * amount_too_small, then (ours) an amount above `maxAmount`, lines_total_mismatch. Shapes and lengths
 * were checked by the schema. `maxAmount` null: no bound (usage charges are computed, not typed).
 */
export function normalizeCharge(
  input: { amount: number; currency?: string | null; description?: string | null; lines?: ChargeLineInput[] | null },
  subscriptionCurrency: string,
  maxAmount: number | null = null,
): NormalizedCharge {
  const currency = subscriptionCurrency.toLowerCase();
  if (input.currency !== undefined && input.currency !== null && input.currency.toLowerCase() !== currency) {
    throw new ApiError(
      'currency_mismatch',
      `The charge currency must be the subscription's currency, ${currency}; received ${input.currency.toLowerCase()}.`,
      { param: 'currency' },
    );
  }
  const minimum = minimumCharge(currency);
  if (input.amount < minimum) {
    throw new ApiError('amount_too_small', `The amount must be at least one unit of ${currency} (${minimum}); received ${input.amount}.`, {
      param: 'amount',
    });
  }
  if (maxAmount !== null && input.amount > maxAmount) {
    // A typo of a few digits must not take a fortune from a saved card.
    throw invalid(
      'amount',
      `The amount must be at most ${maxAmount} in the minor unit of ${currency} (the bound of one charge: the store's max_charge_amount, else the currency's default, never above the payment connection's own maximum); received ${input.amount}.`,
    );
  }
  const lines = (input.lines ?? []).map((line) => {
    const quantity = line.quantity ?? 1;
    return { description: line.description, quantity, unit_amount: line.unit_amount, amount: quantity * line.unit_amount };
  });
  if (lines.length > 0) {
    const total = lines.reduce((sum, line) => sum + line.amount, 0);
    if (total !== input.amount) {
      throw new ApiError(
        'lines_total_mismatch',
        `The lines add up to ${total} but the amount is ${input.amount}: the sum of quantity times unit_amount must equal amount.`,
        { param: 'lines' },
      );
    }
  }
  const description = input.description ?? lines[0]?.description ?? null;
  return { amount: input.amount, currency, description, lines };
}

/** The order items a charge becomes: its lines, or one item named by the description. */
export function chargeOrderItems(charge: { amount: number; description: string | null; lines: ChargeLine[] }) {
  if (charge.lines.length > 0) return charge.lines.map((line) => ({ kind: 'charge', ...line }));
  return [{ kind: 'charge', description: charge.description ?? 'Charge', quantity: 1, unit_amount: charge.amount, amount: charge.amount }];
}

/** A charge's workflow id, `charge/<store id (25 characters)>/<key>`, stays within Temporal's 255 (keys that fit are kept). */
const CHARGE_KEY_MAX = ID_LENGTH_MAX - 'charge/'.length - 26;

/**
 * The namespaced keys one-off charges are filed under (charge document, `charge/<store>/<key>`
 * workflow, provider key): a merchant's Idempotency-Key always lands under `api/` (`api#/` with a digest
 * when long), so it can never equal a usage charge's key or any internal one (`renewal/`, `reactivation/`, `checkout/`).
 */
export const merchantChargeKey = (idempotencyKey: string) => boundedKey('api', idempotencyKey, CHARGE_KEY_MAX);
export const usageChargeKey = (periodId: string) => `usage/${periodId}`;
/** What a usage charge shows as its Idempotency-Key (spec: `usage:<period id>`). */
export const usageIdempotencyKey = (periodId: string) => `usage:${periodId}`;
