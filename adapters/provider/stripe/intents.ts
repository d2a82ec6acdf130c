// A Stripe PaymentIntent read as the provider interface's words: the first answer a request under its key
// got (outcome), what it is now (state), its saved card and settlement time. Pure: no requests here.
import type Stripe from 'stripe';
import type { ChargeLookup, ChargeOutcome, SavedCard, TransactionInfo, TransactionState } from '../types';

/** What we write in every PaymentIntent's metadata, and read back to find and route it. */
export interface IntentMetadata {
  charge_key: string;
  store_id: string;
  kind: TransactionInfo['kind'];
  notify_ref?: string;
  customer_id?: string;
}

export const kindOf = (intent: Stripe.PaymentIntent): TransactionInfo['kind'] => {
  const kind = intent.metadata?.kind;
  return kind === 'pix' || kind === 'saved_card' ? kind : 'card';
};

const failureOf = (intent: Stripe.PaymentIntent) => intent.last_payment_error ?? null;

/** Stripe's decline_code when the issuer gave one, else its error code (e.g. authentication_required); stripe-node leaves '' for none. */
export const declineCodeOf = (error: { decline_code?: string | null; code?: string | null } | null): string | null =>
  error?.decline_code || error?.code || null;

const latestCharge = (intent: Stripe.PaymentIntent): Stripe.Charge | null =>
  intent.latest_charge && typeof intent.latest_charge === 'object' ? intent.latest_charge : null;

/**
 * The installment plan Stripe confirmed for the payment: the charge's payment_method_details (when the
 * latest charge is expanded), else the intent's selected plan; null when paid in full.
 */
export function confirmedInstallments(intent: Stripe.PaymentIntent): number | null {
  const charged = latestCharge(intent)?.payment_method_details?.card?.installments?.plan;
  const selected = intent.payment_method_options?.card?.installments?.plan;
  const plan = charged ?? selected ?? null;
  return plan?.type === 'fixed_count' && plan.count && plan.count > 1 ? plan.count : null;
}

/** A card intent confirmed on the server: succeeded is approved, pending ones are a review, a failed one a decline. */
export function cardOutcomeOf(intent: Stripe.PaymentIntent): ChargeOutcome {
  const installments = confirmedInstallments(intent);
  switch (intent.status) {
    case 'succeeded':
      return { status: 'approved', transactionId: intent.id, ...(installments ? { installments } : {}) };
    case 'requires_payment_method': {
      const failure = failureOf(intent);
      return { status: 'declined', transactionId: intent.id, code: declineCodeOf(failure), message: failure?.message ?? 'The card was declined.' };
    }
    default:
      // requires_capture, processing, requires_action (settled by a notice), canceled (a voided review).
      return { status: 'review', transactionId: intent.id, ...(installments ? { installments } : {}) };
  }
}

/** What the intent is now, in the connection's states. */
export function stateOf(intent: Stripe.PaymentIntent): TransactionState {
  const pix = kindOf(intent) === 'pix';
  switch (intent.status) {
    case 'succeeded':
      return latestCharge(intent)?.refunded ? 'refunded' : pix ? 'paid' : 'approved';
    case 'requires_payment_method':
      return pix ? 'expired' : 'declined';
    case 'canceled':
      return pix && intent.cancellation_reason !== 'abandoned' ? 'expired' : 'voided';
    case 'requires_action':
      return pix ? 'pix_pending' : 'action_required';
    default:
      return 'review';
  }
}

/** Unix seconds the intent settled (paid, refused, voided), null while pending. */
export function settledAtOf(intent: Stripe.PaymentIntent): number | null {
  const state = stateOf(intent);
  if (state === 'review' || state === 'pix_pending' || state === 'action_required') return null;
  if (intent.status === 'canceled') return intent.canceled_at ?? intent.created;
  return latestCharge(intent)?.created ?? intent.created;
}

/** The card a buyer-present charge kept for later (setup_future_usage off_session), with the payment method expanded. */
export function savedCardOf(intent: Stripe.PaymentIntent): SavedCard | null {
  const method = intent.payment_method;
  if (intent.setup_future_usage !== 'off_session' || !method || typeof method !== 'object' || !method.card) return null;
  if (intent.status !== 'succeeded' && intent.status !== 'processing' && intent.status !== 'requires_capture') return null;
  return cardOf(method);
}

export const cardOf = (method: Stripe.PaymentMethod): SavedCard => ({
  paymentMethodId: method.id,
  type: 'card',
  brand: method.card?.brand ?? 'unknown',
  last4: method.card?.last4 ?? '????',
  // Attached to its customer and saved for off-session use: Stripe charges it without the buyer.
  chargeable: true,
});

export function lookupOf(intent: Stripe.PaymentIntent, idempotencyKey: string): ChargeLookup {
  const pix = kindOf(intent) === 'pix';
  return {
    idempotencyKey,
    // A PIX's first answer is pending (the test connection's review), whatever became of it.
    outcome: pix ? { status: 'review', transactionId: intent.id } : cardOutcomeOf(intent),
    state: stateOf(intent),
    card: savedCardOf(intent),
    amount: intent.amount,
    currency: intent.currency,
    settledAt: settledAtOf(intent),
  };
}

export function transactionOf(intent: Stripe.PaymentIntent, storeId: string): TransactionInfo {
  const failure = failureOf(intent);
  const state = stateOf(intent);
  return {
    transactionId: intent.id,
    storeId,
    idempotencyKey: intent.metadata?.charge_key ?? '',
    kind: kindOf(intent),
    state,
    amount: intent.amount,
    currency: intent.currency,
    notifyRef: intent.metadata?.notify_ref ?? null,
    code: state === 'declined' || state === 'expired' ? declineCodeOf(failure) : null,
    message: failure?.message ?? null,
    settledAt: settledAtOf(intent),
  };
}
