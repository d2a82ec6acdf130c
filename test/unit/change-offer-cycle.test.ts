// What this tests: the next charge after change_offer (domain/subscriptions.ts newCycleBillingAt and
// changeOffer): the new cycle counts from the current period's start, and its first boundary not before the
// paid end is the next charge, for longer, shorter, equal and day-based cycles; unpatched runs keep the paid end.
import { describe, expect, it } from 'vitest';
import * as rules from '../../domain/subscriptions';
import { addMonths } from '../../domain/billing-periods';

const DAY = 86_400;
const jan1 = Date.UTC(2026, 0, 1) / 1000;
const feb1 = Date.UTC(2026, 1, 1) / 1000;

const life = (over: Partial<rules.SubscriptionLife> = {}): rules.SubscriptionLife => ({
  status: 'active',
  offer: { id: 'ofr_a', name: 'A' },
  product: { id: 'prd_a', name: 'A' },
  product_family: null,
  billing_cycle: 'monthly',
  custom_billing_days: null,
  currency: 'brl',
  amount: 1000,
  current_period_start: jan1,
  current_period_end: feb1,
  next_billing_at: feb1,
  trial_start: null,
  trial_end: null,
  cycles_completed: 1,
  cycle_limit: null,
  cancel_at_period_end: false,
  canceled_at: null,
  ended_at: null,
  cancellation_details: null,
  default_payment_method: null,
  past_due_details: null,
  billing_anchor_day: 1,
  ...over,
});

const terms = (billing_cycle: rules.OfferTerms['billing_cycle'], custom_billing_days: number | null = null): rules.OfferTerms => ({
  offer: { id: 'ofr_b', name: 'B' },
  product: { id: 'prd_a', name: 'A' },
  product_family: null,
  amount: 2000,
  billing_cycle,
  custom_billing_days,
  cycle_limit: null,
});

const nextAfterChange = (to: rules.OfferTerms, over: Partial<rules.SubscriptionLife> = {}, patched = true) => {
  const result = rules.changeOffer(life(over), to, patched);
  if (!result.ok) throw new Error(result.reason);
  return result.change.next_billing_at;
};

describe('change_offer next_billing_at', () => {
  it('a longer cycle bills one new cycle after the period start; a shorter one at its first boundary from the paid end on', () => {
    expect(nextAfterChange(terms('yearly'))).toBe(addMonths(jan1, 12));
    expect(nextAfterChange(terms('quarterly'))).toBe(addMonths(jan1, 3));
    expect(nextAfterChange(terms('custom', 9))).toBe(jan1 + 36 * DAY);
    expect(nextAfterChange(terms('daily'))).toBe(feb1);
    expect(nextAfterChange(terms('monthly'))).toBe(feb1);
  });

  it('a yearly period paid, then monthly: the twelfth month from its start, its end; a daily cycle is counted within the bound', () => {
    const yearPaid = { billing_cycle: 'yearly' as const, current_period_end: addMonths(jan1, 12), next_billing_at: addMonths(jan1, 12) };
    expect(nextAfterChange(terms('monthly'), yearPaid)).toBe(addMonths(jan1, 12));
    expect(nextAfterChange(terms('daily'), yearPaid)).toBe(addMonths(jan1, 12));
  });

  it('unpatched runs, trials and scheduled cancellations keep what they had', () => {
    expect(nextAfterChange(terms('yearly'), {}, false)).toBe(undefined);
    expect(nextAfterChange(terms('yearly'), { status: 'trialing', current_period_start: null, current_period_end: null, trial_end: feb1 })).toBe(
      undefined,
    );
    expect(nextAfterChange(terms('yearly'), { cancel_at_period_end: true, next_billing_at: null })).toBe(undefined);
  });
});
