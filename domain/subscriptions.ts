// The subscription state table as pure functions: which action fits which status, what each action,
// charge outcome and period end changes, and which events say so. The subscription workflow imports
// this (so it must stay free of I/O and Node modules); the API uses the same names and checks.
import { anchorDayOf, nextRetryAt, periodEnd, type BillingCycle } from './billing-periods';

export const SUBSCRIPTION_STATUSES = ['trialing', 'active', 'past_due', 'paused', 'canceled', 'expired'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

/** Statuses that accept a one-off charge (spec, Subscription charges rule 6). */
export const CHARGEABLE_STATUSES: readonly SubscriptionStatus[] = ['active', 'trialing', 'past_due'];

export const CANCELLATION_REASONS = ['too_expensive', 'not_using', 'missing_features', 'switching', 'temporary', 'other'] as const;
export type CancellationReason = (typeof CANCELLATION_REASONS)[number];
// The spec's words for who canceled: `customer portal` is written with a space.
export type CancellationSource = 'dashboard' | 'customer portal' | 'provider';

export interface CancellationDetails {
  reason: CancellationReason | null;
  comment: string | null;
  source: CancellationSource;
}

export interface PastDueDetails {
  /** Failed attempts so far for the unpaid charge. */
  attempts: number;
  next_retry_at: number | null;
  /** When the first attempt failed. */
  since: number;
  /** The last failed attempt's decline code (e.g. `authentication_required`); absent on dunning from before it was kept. */
  failure_code?: string | null;
  /**
   * The last attempt the bank wants the buyer to confirm (declined `authentication_required`): the buyer may
   * confirm that same payment in the portal until the next retry fences it. Never shown in the API.
   */
  authentication?: RenewalAuthentication | null;
}

/** An off-session renewal attempt the bank asked the buyer to confirm (3-D Secure): its key, payment and order. */
export interface RenewalAuthentication {
  key: string;
  transaction_id: string;
  order_id: string;
}

/** The decline code of an off-session charge the bank wants the buyer to confirm (3-D Secure). */
export const AUTHENTICATION_REQUIRED = 'authentication_required';

export interface SubscriptionPaymentMethod {
  id: string;
  type: 'card';
  brand: string | null;
  last4: string | null;
  /** False for a card at a provider that refuses charges without the customer present. */
  chargeable: boolean;
}

/** The fields the subscription workflow owns (all times Unix seconds). */
export interface SubscriptionLife {
  status: SubscriptionStatus;
  offer: { id: string; name: string };
  product: { id: string; name: string };
  product_family: string | null;
  billing_cycle: BillingCycle;
  custom_billing_days: number | null;
  currency: string;
  amount: number;
  current_period_start: number | null;
  current_period_end: number | null;
  /** The next charge: the renewal, the trial's end, or (while past_due) the unpaid charge being retried. */
  next_billing_at: number | null;
  trial_start: number | null;
  trial_end: number | null;
  cycles_completed: number;
  cycle_limit: number | null;
  cancel_at_period_end: boolean;
  canceled_at: number | null;
  ended_at: number | null;
  cancellation_details: CancellationDetails | null;
  default_payment_method: SubscriptionPaymentMethod | null;
  past_due_details: PastDueDetails | null;
  /** Day of month month-based cycles stay on. */
  billing_anchor_day: number | null;
  /** While paused: the status the pause started from, which a resume gives back (absent on older pauses: active). */
  paused_from?: SubscriptionStatus | null;
}

export type LifeChange = Partial<SubscriptionLife>;

/** Events an action emits: the 2026-11-01 type and, where the original name depends on the fact, its name there. */
export interface LifeEvent {
  type: string;
  legacyType?: string;
}

export type ActionResult = { ok: true; change: LifeChange; events: LifeEvent[]; historyAction: string } | { ok: false; reason: string };

export function isSubscriptionStatus(value: unknown): value is SubscriptionStatus {
  return typeof value === 'string' && (SUBSCRIPTION_STATUSES as readonly string[]).includes(value);
}

export const isEnded = (status: SubscriptionStatus) => status === 'canceled' || status === 'expired';

/** The refusals of a one-off charge before the provider: the subscription's workflow fails with them as the failure type. */
export const ONE_OFF_REFUSAL_CODES = ['subscription_not_chargeable', 'no_payment_method', 'payment_method_not_chargeable'] as const;
export type OneOffRefusalCode = (typeof ONE_OFF_REFUSAL_CODES)[number];

export function isOneOffRefusalCode(code: unknown): code is OneOffRefusalCode {
  return (ONE_OFF_REFUSAL_CODES as readonly unknown[]).includes(code);
}

/** Why a one-off charge (API, dashboard) is refused before the provider, in the spec's order; null when it may go ahead. */
export function oneOffChargeRefusal(
  life: Pick<SubscriptionLife, 'status' | 'default_payment_method'>,
): { code: OneOffRefusalCode; message: string } | null {
  if (!CHARGEABLE_STATUSES.includes(life.status)) {
    return {
      code: 'subscription_not_chargeable',
      message: `The subscription is ${life.status}; only active, trialing and past_due subscriptions accept charges.`,
    };
  }
  if (!life.default_payment_method) return { code: 'no_payment_method', message: 'The subscription has no saved card (it pays by PIX or similar).' };
  if (!life.default_payment_method.chargeable) {
    return {
      code: 'payment_method_not_chargeable',
      message: 'The saved card is held by a provider that does not accept charges without the customer present.',
    };
  }
  return null;
}

const refuse = (reason: string): ActionResult => ({ ok: false, reason });

/** What the workflow does next and when. */
export type NextStep =
  { kind: 'charge'; at: number } | { kind: 'retry'; at: number } | { kind: 'end'; at: number; to: 'canceled' | 'expired' } | null;

export function nextStep(life: SubscriptionLife): NextStep {
  switch (life.status) {
    case 'trialing':
    case 'active': {
      const paidUntil = life.current_period_end ?? life.trial_end;
      if (life.cancel_at_period_end && paidUntil !== null) return { kind: 'end', at: paidUntil, to: 'canceled' };
      if (life.next_billing_at !== null) return { kind: 'charge', at: life.next_billing_at };
      // No next charge: the cycle limit was reached; it expires when the paid period ends.
      if (paidUntil !== null) return { kind: 'end', at: paidUntil, to: 'expired' };
      return null;
    }
    case 'past_due':
      return life.past_due_details?.next_retry_at != null ? { kind: 'retry', at: life.past_due_details.next_retry_at } : null;
    case 'paused': {
      // A pause stops renewals, not a scheduled cancellation: the subscription still ends when its paid period does.
      const paidUntil = life.current_period_end ?? life.trial_end;
      return life.cancel_at_period_end && paidUntil !== null ? { kind: 'end', at: paidUntil, to: 'canceled' } : null;
    }
    default:
      return null;
  }
}

function limitReached(cycles: number, limit: number | null): boolean {
  return limit !== null && cycles >= limit;
}

/** The next charge once the period ending at `paidUntil` is paid (null at the cycle limit). */
function nextChargeAfter(life: SubscriptionLife, paidUntil: number | null): number | null {
  return limitReached(life.cycles_completed, life.cycle_limit) ? null : paidUntil;
}

/** A cycle charge was approved: a new period starts at `periodStart` (the due time, or now on reactivation). */
export function chargeApproved(
  life: SubscriptionLife,
  periodStart: number,
  anchorDay = life.billing_anchor_day ?? anchorDayOf(periodStart),
): LifeChange {
  const end = periodEnd(periodStart, life.billing_cycle, life.custom_billing_days, anchorDay);
  const cycles = life.cycles_completed + 1;
  return {
    status: 'active',
    current_period_start: periodStart,
    current_period_end: end,
    cycles_completed: cycles,
    next_billing_at: limitReached(cycles, life.cycle_limit) ? null : end,
    past_due_details: null,
    billing_anchor_day: anchorDay,
  };
}

/**
 * A cycle charge (or its retry) was declined at `now`: past_due with the next retry, or expired after the last.
 * `failure` (runs since renewal authentication) records the decline code and an attempt the buyer may confirm.
 */
export function chargeDeclined(
  life: SubscriptionLife,
  now: number,
  failure?: { code: string | null; authentication: RenewalAuthentication | null },
): { change: LifeChange; events: LifeEvent[] } {
  const since = life.status === 'past_due' && life.past_due_details ? life.past_due_details.since : now;
  const attempts = life.status === 'past_due' && life.past_due_details ? life.past_due_details.attempts + 1 : 1;
  const retryAt = nextRetryAt(since, attempts);
  if (retryAt === null) {
    return {
      change: { status: 'expired', ended_at: now, next_billing_at: null, past_due_details: null },
      events: [{ type: 'customer.subscription.deleted' }],
    };
  }
  const asked = failure?.authentication ? { authentication: failure.authentication } : {};
  const known = failure ? { failure_code: failure.code, ...asked } : {};
  return {
    change: { status: 'past_due', past_due_details: { attempts, next_retry_at: retryAt, since, ...known } },
    events: [{ type: 'customer.subscription.updated' }],
  };
}

/** The paid period ended with a scheduled cancellation (canceled) or at the cycle limit (expired). */
export function periodEnded(to: 'canceled' | 'expired', at: number): LifeChange {
  return { status: to, ended_at: at, next_billing_at: null, past_due_details: null, cancel_at_period_end: false };
}

/**
 * Pause: renewals and dunning stop. `remembers` (runs since resumes give back the paused state) keeps the
 * status it starts from and the dunning details, so a resume restores them; older runs cleared them.
 */
export function pause(life: SubscriptionLife, remembers = false): ActionResult {
  if (life.status === 'paused') return refuse('The subscription is already paused.');
  if (isEnded(life.status)) return refuse(`${life.status === 'expired' ? 'An' : 'A'} ${life.status} subscription cannot be paused.`);
  return {
    ok: true,
    change: remembers ? { status: 'paused', paused_from: life.status } : { status: 'paused', past_due_details: null },
    events: [{ type: 'customer.subscription.paused' }],
    historyAction: 'paused',
  };
}

/**
 * Resume gives back the status the pause started from: trialing (its trial end still charges then),
 * past_due (its dunning where it stood) or active; a pause recorded before `paused_from` resumes active.
 * A charge or retry that fell due while paused happens at once.
 */
export function resume(life: SubscriptionLife, now: number): ActionResult {
  if (life.status !== 'paused') return refuse(`Only a paused subscription can be resumed; this one is ${life.status}.`);
  const status = statusResumed(life);
  const change: LifeChange = { status, paused_from: null };
  if (status === 'past_due') {
    const details = life.past_due_details!;
    // The retry the pause overran happens now and the later ones keep their spacing: `since` moves by the overrun.
    if (details.next_retry_at !== null && details.next_retry_at < now) {
      change.past_due_details = { ...details, since: details.since + (now - details.next_retry_at), next_retry_at: now };
    }
  } else if (life.next_billing_at !== null && life.next_billing_at < now) {
    change.next_billing_at = now;
    change.billing_anchor_day = anchorDayOf(now);
  }
  return { ok: true, change, events: [{ type: 'customer.subscription.resumed' }], historyAction: 'resumed' };
}

/** The status a paused subscription resumes in: the one it was paused from, when that is still true. */
function statusResumed(life: SubscriptionLife): SubscriptionStatus {
  if (life.paused_from === 'trialing' && life.cycles_completed === 0) return 'trialing';
  if (life.paused_from === 'past_due' && life.past_due_details) return 'past_due';
  return 'active';
}

export function cancelNow(life: SubscriptionLife, now: number, details: CancellationDetails): ActionResult {
  if (isEnded(life.status)) return refuse(`The subscription is already ${life.status}.`);
  return {
    ok: true,
    change: {
      status: 'canceled',
      canceled_at: now,
      ended_at: now,
      cancel_at_period_end: false,
      next_billing_at: null,
      past_due_details: null,
      cancellation_details: details,
    },
    events: [{ type: 'customer.subscription.deleted' }],
    historyAction: 'canceled',
  };
}

/** cancel_at_period_end true: renewals stop, the subscription ends when the paid period (or trial) ends. */
export function scheduleCancellation(life: SubscriptionLife, now: number, details: CancellationDetails): ActionResult {
  if (life.status !== 'active' && life.status !== 'trialing') {
    return refuse(`Cancellation can be scheduled only on an active or trialing subscription; this one is ${life.status}.`);
  }
  if ((life.current_period_end ?? life.trial_end) === null) return refuse('The subscription has no paid period to end yet.');
  return {
    ok: true,
    change: { cancel_at_period_end: true, canceled_at: now, cancellation_details: details, next_billing_at: null },
    events: [],
    historyAction: 'cancellation_scheduled',
  };
}

/** Reactivate, first form: undo a scheduled cancellation (no charge). */
export function undoScheduledCancellation(life: SubscriptionLife): ActionResult | null {
  if (!life.cancel_at_period_end || isEnded(life.status)) return null;
  // A paused trial has no paid period yet: its trial end is what the next charge falls on.
  const paidUntil = life.current_period_end ?? life.trial_end;
  return {
    ok: true,
    change: { cancel_at_period_end: false, canceled_at: null, cancellation_details: null, next_billing_at: nextChargeAfter(life, paidUntil) },
    events: [{ type: 'customer.subscription.updated', legacyType: 'subscription.reactivated' }],
    historyAction: 'reactivated',
  };
}

/** Reactivate, second form: why a canceled or expired subscription cannot be charged again, or null. */
export function reactivationRefusal(life: SubscriptionLife, offerActive: boolean): string | null {
  if (!isEnded(life.status)) {
    return `Only a canceled or expired subscription, or one with a scheduled cancellation, can be reactivated; this one is ${life.status}.`;
  }
  if (!life.default_payment_method) return 'The provider refused: the subscription has no saved card to charge.';
  if (!life.default_payment_method.chargeable) return 'The provider refused: the saved card does not accept charges without the customer present.';
  if (!offerActive) return 'The provider refused: the offer is no longer active.';
  return null;
}

/** A reactivation charge was approved at `now`: active with a new period from now. */
export function reactivated(life: SubscriptionLife, now: number): LifeChange {
  return {
    ...chargeApproved(life, now, anchorDayOf(now)),
    ended_at: null,
    canceled_at: null,
    cancellation_details: null,
    cancel_at_period_end: false,
  };
}

export interface OfferTerms {
  offer: { id: string; name: string };
  product: { id: string; name: string };
  product_family: string | null;
  amount: number;
  billing_cycle: BillingCycle;
  custom_billing_days: number | null;
  cycle_limit: number | null;
}

/** Most new-cycle boundaries counted to pass a paid period (a daily cycle after a yearly period: 366). */
const NEW_CYCLE_STEPS_MAX = 400;

/**
 * The next charge on the new offer's cycle, counted from the current period's start: its first boundary
 * that is not before the end of the period already paid (the paid period is honoured, never billed twice).
 */
export function newCycleBillingAt(life: SubscriptionLife, terms: OfferTerms, periodStart: number, paidUntil: number): number {
  const anchorDay = life.billing_anchor_day ?? anchorDayOf(periodStart);
  let boundary = periodEnd(periodStart, terms.billing_cycle, terms.custom_billing_days, anchorDay);
  for (let step = 1; boundary < paidUntil && step < NEW_CYCLE_STEPS_MAX; step++) {
    boundary = periodEnd(boundary, terms.billing_cycle, terms.custom_billing_days, anchorDay);
  }
  return Math.max(boundary, paidUntil);
}

/**
 * change_offer: same product or product family; status unchanged, no proration; the new amount applies
 * from the next renewal. With `fromNewCycle` (patched workflows), an active subscription's next renewal
 * follows the new offer's cycle from the current period's start (newCycleBillingAt); before, it stayed
 * at the end of the period already paid.
 */
export function changeOffer(life: SubscriptionLife, terms: OfferTerms, fromNewCycle = false): ActionResult {
  const sameProduct = terms.product.id === life.product.id;
  const sameFamily = terms.product_family !== null && terms.product_family === life.product_family;
  if (!sameProduct && !sameFamily) {
    return refuse(`The offer ${terms.offer.id} is not of the same product or product family as the subscription's offer.`);
  }
  const limitAlreadyReached = limitReached(life.cycles_completed, terms.cycle_limit);
  if (life.status === 'past_due' && limitAlreadyReached) {
    return refuse(
      `The offer ${terms.offer.id} allows ${terms.cycle_limit} charges and ${life.cycles_completed} were made: the unpaid charge being retried would exceed it.`,
    );
  }
  const change: LifeChange = {
    offer: terms.offer,
    product: terms.product,
    product_family: terms.product_family,
    amount: terms.amount,
    billing_cycle: terms.billing_cycle,
    custom_billing_days: terms.custom_billing_days,
    cycle_limit: terms.cycle_limit,
  };
  // The new offer's cycle limit decides whether the end of the paid period renews (a scheduled cancellation still wins).
  const renews = life.status === 'active' || life.status === 'trialing' || life.status === 'paused';
  if (renews && !life.cancel_at_period_end) {
    const { current_period_start: start, current_period_end: paidUntil } = life;
    if (limitAlreadyReached) change.next_billing_at = null;
    else if (fromNewCycle && life.status === 'active' && start !== null && paidUntil !== null) {
      change.next_billing_at = newCycleBillingAt(life, terms, start, paidUntil);
    } else if (life.next_billing_at === null) change.next_billing_at = life.current_period_end ?? life.trial_end;
  }
  return {
    ok: true,
    change,
    events: [
      {
        type: 'customer.subscription.updated',
        legacyType: terms.amount >= life.amount ? 'subscription.upgraded' : 'subscription.downgraded',
      },
    ],
    historyAction: 'offer_changed',
  };
}

/**
 * A new saved card (customer portal). A past_due subscription retries at once on the new card;
 * otherwise renewals simply use it.
 */
export function changePaymentMethod(life: SubscriptionLife, method: SubscriptionPaymentMethod, now: number): ActionResult {
  if (isEnded(life.status)) return refuse(`The card of a ${life.status} subscription cannot be changed.`);
  const change: LifeChange = { default_payment_method: method };
  if (life.status === 'past_due' && life.past_due_details) change.past_due_details = { ...life.past_due_details, next_retry_at: now };
  return { ok: true, change, events: [{ type: 'customer.subscription.updated' }], historyAction: 'payment_method_changed' };
}
