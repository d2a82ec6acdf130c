// What this tests: the subscription state table (domain/subscriptions.ts) and the charge body rules
// (domain/charges.ts) as pure functions: next steps, action refusals, dunning, and the order of checks.
import { describe, expect, it } from 'vitest';
import * as rules from '../../domain/subscriptions';
import { chargeOrderItems, minimumCharge, normalizeCharge } from '../../domain/charges';
import { ApiError } from '../../domain/errors';

const DAY = 86_400;
const t0 = Date.parse('2026-01-31T10:00:00Z') / 1000;

function life(overrides: Partial<rules.SubscriptionLife> = {}): rules.SubscriptionLife {
  return {
    status: 'active',
    offer: { id: 'ofr_a', name: 'A' },
    product: { id: 'prd_a', name: 'Product A' },
    product_family: 'fam',
    billing_cycle: 'monthly',
    custom_billing_days: null,
    currency: 'brl',
    amount: 1000,
    current_period_start: t0,
    current_period_end: t0 + 28 * DAY,
    next_billing_at: t0 + 28 * DAY,
    trial_start: null,
    trial_end: null,
    cycles_completed: 1,
    cycle_limit: null,
    cancel_at_period_end: false,
    canceled_at: null,
    ended_at: null,
    cancellation_details: null,
    default_payment_method: { id: 'pm_1', type: 'card', brand: 'visa', last4: '4242', chargeable: true },
    past_due_details: null,
    billing_anchor_day: 31,
    ...overrides,
  };
}

const details: rules.CancellationDetails = { reason: 'other', comment: null, source: 'dashboard' };

/** Offer B of product A (family fam) at 1000 a month, with `over` changed. */
const offerTerms = (over: Partial<rules.OfferTerms> = {}): rules.OfferTerms => ({
  offer: { id: 'ofr_b', name: 'B' },
  product: { id: 'prd_a', name: 'Product A' },
  product_family: 'fam',
  amount: 1000,
  billing_cycle: 'monthly',
  custom_billing_days: null,
  cycle_limit: null,
  ...over,
});
describe('nextStep', () => {
  it('charges at next_billing_at when active or trialing', () => {
    expect(rules.nextStep(life())).toEqual({ kind: 'charge', at: t0 + 28 * DAY });
    expect(rules.nextStep(life({ status: 'trialing', current_period_end: null, trial_end: t0 + 7 * DAY, next_billing_at: t0 + 7 * DAY }))).toEqual({
      kind: 'charge',
      at: t0 + 7 * DAY,
    });
  });

  it('ends at the paid period end: canceled with a scheduled cancellation, expired at the cycle limit', () => {
    expect(rules.nextStep(life({ cancel_at_period_end: true, next_billing_at: null }))).toEqual({ kind: 'end', at: t0 + 28 * DAY, to: 'canceled' });
    expect(rules.nextStep(life({ cycle_limit: 1, next_billing_at: null }))).toEqual({ kind: 'end', at: t0 + 28 * DAY, to: 'expired' });
  });

  it('retries at next_retry_at when past_due, and does nothing when paused, canceled or expired', () => {
    expect(rules.nextStep(life({ status: 'past_due', past_due_details: { attempts: 1, since: t0, next_retry_at: t0 + DAY } }))).toEqual({
      kind: 'retry',
      at: t0 + DAY,
    });
    for (const status of ['paused', 'canceled', 'expired'] as const) expect(rules.nextStep(life({ status }))).toBeNull();
  });

  it('a paused subscription with a scheduled cancellation still ends (canceled) when its paid period or trial ends', () => {
    expect(rules.nextStep(life({ status: 'paused', cancel_at_period_end: true, next_billing_at: null }))).toEqual({
      kind: 'end',
      at: t0 + 28 * DAY,
      to: 'canceled',
    });
    const pausedTrial = life({
      status: 'paused',
      cancel_at_period_end: true,
      current_period_start: null,
      current_period_end: null,
      trial_end: t0 + 7 * DAY,
      next_billing_at: null,
    });
    expect(rules.nextStep(pausedTrial)).toEqual({ kind: 'end', at: t0 + 7 * DAY, to: 'canceled' });
  });
});

describe('charges of a cycle', () => {
  it('an approved renewal advances the period on the anchor day and counts the cycle', () => {
    const change = rules.chargeApproved(life(), t0 + 28 * DAY);
    expect(change).toMatchObject({ status: 'active', current_period_start: t0 + 28 * DAY, cycles_completed: 2, past_due_details: null });
    expect(new Date(change.current_period_end! * 1000).toISOString()).toBe('2026-03-31T10:00:00.000Z');
    expect(change.next_billing_at).toBe(change.current_period_end);
  });

  it('the approved charge that reaches the cycle limit leaves no next charge', () => {
    expect(rules.chargeApproved(life({ cycle_limit: 2 }), t0 + 28 * DAY).next_billing_at).toBeNull();
  });

  it('declines: past_due with retries after 1, 3, 5 days, then expired with ended_at and customer.subscription.deleted', () => {
    let l = life();
    const first = rules.chargeDeclined(l, t0);
    expect(first.change).toMatchObject({ status: 'past_due', past_due_details: { attempts: 1, since: t0, next_retry_at: t0 + DAY } });
    l = { ...l, ...first.change };
    const second = rules.chargeDeclined(l, t0 + DAY);
    expect(second.change.past_due_details).toEqual({ attempts: 2, since: t0, next_retry_at: t0 + 3 * DAY });
    l = { ...l, ...second.change };
    l = { ...l, ...rules.chargeDeclined(l, t0 + 3 * DAY).change };
    expect(l.past_due_details).toEqual({ attempts: 3, since: t0, next_retry_at: t0 + 5 * DAY });
    const last = rules.chargeDeclined(l, t0 + 5 * DAY);
    expect(last.change).toMatchObject({ status: 'expired', ended_at: t0 + 5 * DAY, past_due_details: null, next_billing_at: null });
    expect(last.events).toEqual([{ type: 'customer.subscription.deleted' }]);
  });
});

describe('actions', () => {
  it('pause refuses paused and ended subscriptions; resume refuses all but paused', () => {
    expect(rules.pause(life({ status: 'paused' }))).toMatchObject({ ok: false });
    expect(rules.pause(life({ status: 'canceled' }))).toMatchObject({ ok: false });
    expect(rules.pause(life({ status: 'past_due' }))).toMatchObject({ ok: true, change: { status: 'paused' } });
    expect(rules.resume(life(), t0)).toMatchObject({ ok: false });
  });

  it('a pause that remembers keeps the status it starts from and the dunning; resume gives them back', () => {
    const trial = life({
      status: 'trialing',
      cycles_completed: 0,
      current_period_start: null,
      current_period_end: null,
      trial_start: t0,
      trial_end: t0 + 7 * DAY,
      next_billing_at: t0 + 7 * DAY,
    });
    const pausedTrial = rules.pause(trial, true);
    expect(pausedTrial).toMatchObject({ ok: true, change: { status: 'paused', paused_from: 'trialing' } });
    const paused = { ...trial, ...(pausedTrial.ok ? pausedTrial.change : {}) };
    expect(rules.resume(paused, t0 + DAY)).toMatchObject({ ok: true, change: { status: 'trialing', paused_from: null } });
    expect(rules.resume(paused, t0 + DAY).ok && rules.resume(paused, t0 + DAY)).not.toHaveProperty('change.next_billing_at');
    // Its trial ended while paused: trialing again, the trial's charge due at once.
    expect(rules.resume(paused, t0 + 9 * DAY)).toMatchObject({ ok: true, change: { status: 'trialing', next_billing_at: t0 + 9 * DAY } });

    const dunning = { attempts: 1, next_retry_at: t0 + DAY, since: t0 };
    const pastDue = life({ status: 'past_due', past_due_details: dunning });
    const pausedDue = rules.pause(pastDue, true);
    expect(pausedDue).toMatchObject({ ok: true, change: { status: 'paused', paused_from: 'past_due' } });
    expect(pausedDue.ok && pausedDue.change).not.toHaveProperty('past_due_details');
    const pausedPastDue = { ...pastDue, ...(pausedDue.ok ? pausedDue.change : {}) };
    expect(rules.resume(pausedPastDue, t0 + 3600)).toMatchObject({ ok: true, change: { status: 'past_due' } });
    // The retry the pause overran happens now; the schedule keeps its spacing (since moves by 9 days).
    expect(rules.resume(pausedPastDue, t0 + 10 * DAY)).toMatchObject({
      ok: true,
      change: { status: 'past_due', past_due_details: { attempts: 1, since: t0 + 9 * DAY, next_retry_at: t0 + 10 * DAY } },
    });
    // A pause from before paused_from existed resumes active.
    expect(rules.resume(life({ status: 'paused' }), t0)).toMatchObject({ ok: true, change: { status: 'active' } });
  });

  it('resume after the due date moves next_billing_at to now', () => {
    const result = rules.resume(life({ status: 'paused' }), t0 + 60 * DAY);
    expect(result).toMatchObject({ ok: true, change: { status: 'active', next_billing_at: t0 + 60 * DAY } });
  });

  it('scheduling a cancellation needs active or trialing; undoing it restores next_billing_at', () => {
    expect(rules.scheduleCancellation(life({ status: 'past_due' }), t0, details)).toMatchObject({ ok: false });
    const scheduled = rules.scheduleCancellation(life(), t0, details);
    expect(scheduled).toMatchObject({ ok: true, change: { cancel_at_period_end: true, next_billing_at: null }, events: [] });
    const after = { ...life(), ...(scheduled.ok ? scheduled.change : {}) };
    expect(rules.undoScheduledCancellation(after)).toMatchObject({
      ok: true,
      change: { cancel_at_period_end: false, next_billing_at: t0 + 28 * DAY },
    });
  });

  it('undoing the scheduled cancellation of a trial paused since restores the charge at trial end', () => {
    const pausedTrial = life({
      status: 'paused',
      cancel_at_period_end: true,
      current_period_start: null,
      current_period_end: null,
      trial_end: t0 + 7 * DAY,
      next_billing_at: null,
      cycles_completed: 0,
    });
    expect(rules.undoScheduledCancellation(pausedTrial)).toMatchObject({ ok: true, change: { next_billing_at: t0 + 7 * DAY } });
  });

  it('reactivation of an ended subscription needs a chargeable saved card and an active offer', () => {
    expect(rules.reactivationRefusal(life(), true)).toMatch(/active/);
    expect(rules.reactivationRefusal(life({ status: 'canceled', default_payment_method: null }), true)).toMatch(/saved card/);
    expect(rules.reactivationRefusal(life({ status: 'expired' }), false)).toMatch(/offer/);
    expect(rules.reactivationRefusal(life({ status: 'canceled' }), true)).toBeNull();
  });

  it('change_offer: same product or family only; upgraded when the amount does not fall, else downgraded', () => {
    expect(rules.changeOffer(life(), offerTerms({ product: { id: 'prd_x', name: 'X' }, product_family: 'other' }))).toMatchObject({ ok: false });
    expect(rules.changeOffer(life(), offerTerms({ product: { id: 'prd_x', name: 'X' } }))).toMatchObject({ ok: true });
    expect(rules.changeOffer(life(), offerTerms({ amount: 1000 }))).toMatchObject({ events: [{ legacyType: 'subscription.upgraded' }] });
    expect(rules.changeOffer(life(), offerTerms({ amount: 999 }))).toMatchObject({ events: [{ legacyType: 'subscription.downgraded' }] });
  });

  it('change_offer: a cycle_limit at or below cycles_completed leaves no next charge (it expires at period end); a past_due one is refused', () => {
    const terms = (cycle_limit: number | null) => offerTerms({ cycle_limit });
    const three = life({ cycles_completed: 3 });
    for (const limit of [2, 3]) {
      const result = rules.changeOffer(three, terms(limit));
      expect(result).toMatchObject({ ok: true, change: { cycle_limit: limit, next_billing_at: null } });
      expect(rules.nextStep({ ...three, ...(result.ok ? result.change : {}) })).toEqual({ kind: 'end', at: t0 + 28 * DAY, to: 'expired' });
    }
    const roomLeft = rules.changeOffer(three, terms(4));
    expect(roomLeft.ok && 'next_billing_at' in roomLeft.change).toBe(false);
    expect(rules.changeOffer(life({ status: 'paused', cycles_completed: 3 }), terms(3))).toMatchObject({
      ok: true,
      change: { next_billing_at: null },
    });
    const pastDue = life({ status: 'past_due', cycles_completed: 3, past_due_details: { attempts: 1, since: t0, next_retry_at: t0 + DAY } });
    expect(rules.changeOffer(pastDue, terms(3))).toMatchObject({ ok: false, reason: expect.stringMatching(/3 charges/) });
    expect(rules.changeOffer(pastDue, terms(4))).toMatchObject({ ok: true });
  });

  it('change_offer: leaving an offer whose limit was reached for one without a limit renews at the end of the paid period again', () => {
    const atLimit = life({ cycles_completed: 3, cycle_limit: 3, next_billing_at: null });
    const result = rules.changeOffer(atLimit, {
      offer: { id: 'ofr_b', name: 'B' },
      product: { id: 'prd_a', name: 'Product A' },
      product_family: 'fam',
      amount: 1000,
      billing_cycle: 'monthly',
      custom_billing_days: null,
      cycle_limit: null,
    });
    expect(result).toMatchObject({ ok: true, change: { cycle_limit: null, next_billing_at: t0 + 28 * DAY } });
    // A scheduled cancellation is not undone by an offer change.
    const scheduled = rules.changeOffer(
      { ...atLimit, cancel_at_period_end: true },
      {
        offer: { id: 'ofr_b', name: 'B' },
        product: { id: 'prd_a', name: 'Product A' },
        product_family: 'fam',
        amount: 1000,
        billing_cycle: 'monthly',
        custom_billing_days: null,
        cycle_limit: null,
      },
    );
    expect(scheduled.ok && 'next_billing_at' in scheduled.change).toBe(false);
  });
});

describe('charge body rules', () => {
  const codeOf = (fn: () => unknown) => {
    try {
      fn();
      return null;
    } catch (error) {
      return (error as ApiError).code;
    }
  };

  it('checks currency, then minimum, then lines, in that order', () => {
    expect(codeOf(() => normalizeCharge({ amount: 1, currency: 'usd', lines: [{ description: 'x', unit_amount: 5 }] }, 'brl'))).toBe(
      'currency_mismatch',
    );
    expect(codeOf(() => normalizeCharge({ amount: 1, lines: [{ description: 'x', unit_amount: 5 }] }, 'brl'))).toBe('amount_too_small');
    expect(codeOf(() => normalizeCharge({ amount: 100, lines: [{ description: 'x', unit_amount: 5 }] }, 'brl'))).toBe('lines_total_mismatch');
    expect(
      codeOf(() => normalizeCharge({ amount: 100, currency: 'BRL', lines: [{ description: 'x', quantity: 20, unit_amount: 5 }] }, 'brl')),
    ).toBeNull();
  });

  it('the minimum is one unit of the currency', () => {
    expect(minimumCharge('brl')).toBe(100);
    expect(minimumCharge('jpy')).toBe(1);
    expect(minimumCharge('kwd')).toBe(1000);
  });

  it('description falls back to the first line; without lines the order has one item', () => {
    expect(normalizeCharge({ amount: 300, lines: [{ description: 'Pack', quantity: 3, unit_amount: 100 }] }, 'brl').description).toBe('Pack');
    expect(chargeOrderItems({ amount: 700, description: null, lines: [] })).toEqual([
      { kind: 'charge', description: 'Charge', quantity: 1, unit_amount: 700, amount: 700 },
    ]);
  });
});
