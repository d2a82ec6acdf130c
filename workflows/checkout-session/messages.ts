// The checkout session workflow's id and messages, shared by the workflow, the API and operators
// (`temporal workflow update|signal|query`): updates pay (one attempt, run by the workflow) and expire;
// signal providerSettled (a PIX or review notice); query state (with every attempt and its provider key).
import type { VersionedInput } from '../lib/input-version';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PaymentAmounts, PaymentStatus, SessionStatus } from '../../domain/checkout';
import type { ProviderNotice } from '../../adapters/provider/types';
import type { CheckoutSessionObject } from '../../resources/checkout-session';
import type { CustomerDoc } from '../../store/collections';

export const CHECKOUT_SESSION_WORKFLOW = 'checkoutSessionWorkflow';

export function checkoutSessionWorkflowId(sessionId: string): string {
  return `checkout-session/${sessionId}`;
}

// The search attributes the dev server registers (operators filter sessions by store and customer).
export { StoreIdKey as STORE_ID_ATTRIBUTE, CustomerIdKey as CUSTOMER_ID_ATTRIBUTE } from '../search-attributes';

/** Default hold: how long an expiry waits for an attempt in flight before asking the provider by key. */
export const ATTEMPT_HOLD_MS = 2 * 60 * 1000;

/** The provider idempotency key of attempt `n` (1-based) of a session: the same on every retry. */
export function checkoutAttemptKey(sessionId: string, n: number): string {
  return `checkout/${sessionId}/${n}`;
}

/** The key of the e-mail telling attempt `n`'s buyer it was given back: the same whichever workflow gives it back, so sent once. */
export function lateRefundEmailKey(sessionId: string, n: number): string {
  return `${checkoutSessionWorkflowId(sessionId)}/late-payment-refund/${n}`;
}

/** The session and attempt a checkout attempt key names (checkoutAttemptKey), else null. */
export function attemptOfKey(key: string): { sessionId: string; n: number } | null {
  const match = /^checkout\/([^/]+)\/(\d+)$/.exec(key);
  return match ? { sessionId: match[1], n: Number(match[2]) } : null;
}

/** Failure types of the refusals (ApplicationFailure.type), mapped to the API's and the page's errors. */
export const NOT_OPEN_FAILURE = 'checkout_session_not_open';
export const PAYMENT_IN_PROGRESS_FAILURE = 'payment_in_progress';
/** Too many declined cards on this session: only PIX is accepted now. */
export const CARD_LOCKED_FAILURE = 'card_payments_locked';
/** PIX asked for outside BRL or with a free trial (domain/checkout pixAllowed). */
export const PIX_UNAVAILABLE_FAILURE = 'method_unavailable';
/**
 * The code of an attempt the provider never received: a trial's card that could not be saved, an
 * attempt of a run begun before unknown attempts, or one a closed session's last look-up still did not find.
 */
export const PROVIDER_UNAVAILABLE_CODE = 'provider_unavailable';
/** A 3-D Secure left unfinished when the buyer paid again (the intent was cancelled at the provider first). */
export const AUTHENTICATION_ABANDONED_CODE = 'authentication_abandoned';
/** A 3-D Secure that failed without the provider naming a code. */
export const AUTHENTICATION_FAILED_CODE = 'payment_intent_authentication_failure';

export interface CheckoutWorkflowInput extends VersionedInput {
  storeId: string;
  sessionId: string;
  /** Unix seconds: the session's deadline. */
  expiresAt: number;
  /** Recurring offers get a subscription once paid. */
  recurring: boolean;
  /** How long an expiry waits for an attempt in flight (default ATTEMPT_HOLD_MS); tests shorten it. */
  attemptHoldMs?: number;
  /** Declined cards after which card payments are locked (card testing); PIX stays open. Default MAX_CARD_DECLINES. */
  maxCardDeclines?: number;
  /** The customer's test clock: the deadline and every "now" are on its time. */
  testClock?: string | null;
  /** The clock's time when the session was made (ms): known at once, so the pay handler is there from the start. */
  testClockNowMs?: number;
}

export const MAX_CARD_DECLINES = 5;

/**
 * `action_required`: the card waits for the buyer's 3-D Secure in the page; the session stays open and
 * unpaid until the provider says it succeeded (paid) or failed (a decline), or the session's end fences it.
 * `unknown`: the charge's tries ran out on a timeout, a 5xx or a lost connection, so money may have been
 * taken: asked again under its key until the provider answers (no new attempt meanwhile); after the
 * session closed, looked up on a schedule and given back if it was taken.
 */
export type AttemptStatus =
  'charging' | 'unknown' | 'approved' | 'review' | 'action_required' | 'pix_pending' | 'declined' | 'failed' | 'voided' | 'refunded';

/** One payment attempt as the workflow ran it (no card data): what support looks up at the provider by `key`. */
export interface CheckoutAttempt {
  n: number;
  key: string;
  method: 'card' | 'pix';
  amount: number;
  currency: string;
  status: AttemptStatus;
  code: string | null;
  transaction_id: string | null;
}

export interface CheckoutWorkflowState {
  status: SessionStatus;
  payment_status: PaymentStatus;
  order: string | null;
  subscription: string | null;
  customer: string | null;
  method: 'card' | 'pix' | null;
  transaction_id: string | null;
  /** Unix seconds; set while a PIX waits to be paid. */
  pix_expires_at: number | null;
  /** Every attempt, oldest first; at most one is `charging` or `unknown`. */
  attempts: CheckoutAttempt[];
  last_error: { code: string; message: string } | null;
  /** How the pending payment ended: paid, refused or expired. */
  settlement: 'paid' | 'refused' | 'expired' | null;
  /**
   * A provider lookup or the subscription hand-off that failed after its retries and is being tried
   * again later (nonRetryable: a data problem for an operator to fix); null once it succeeds.
   */
  problem: {
    step: 'check_transaction' | 'create_subscription' | 'cancel_pending';
    type: string | null;
    message: string;
    nonRetryable: boolean;
    failures: number;
  } | null;
}

/** The card kept for the subscription (never the number). */
export type SavedCardRef = { id: string; brand: string; last4: string; chargeable: boolean };

/** The `pay` update: one attempt as the page prepared it. The card is a provider token, never a number. */
export interface PayInput {
  method: 'card' | 'pix';
  cardToken: string | null;
  amounts: PaymentAmounts;
  installments: number | null;
  description: string;
  customerId: string;
  customerEmail: string;
  providerCustomerId: string | null;
  /** A new buyer, prepared by the page and written only once the payment is taken. */
  newBuyer: CustomerDoc | null;
  /** A trial saves the card without charging it. */
  trial: boolean;
  /** Keep the card at the provider (recurring offers). */
  saveCard: boolean;
}

export type PaymentAttemptOutcome =
  /** `installments`: the plan the provider confirmed (absent: paid in full, or a run from before it was carried). */
  | { status: 'approved'; transactionId: string | null; installments?: number | null }
  | { status: 'review'; transactionId: string; installments?: number | null }
  /** The buyer must authenticate (3-D Secure) in the page; its client secret never enters the workflow. */
  | { status: 'action_required'; transactionId: string }
  | { status: 'pix_pending'; transactionId: string; pixCode: string; pixExpiresAt: number }
  | { status: 'declined'; code: string; message: string }
  /** The provider never received the attempt (see PROVIDER_UNAVAILABLE_CODE): nothing was charged. */
  | { status: 'failed'; code: string; message: string };

/** What the provider answered for one attempt (the charge activity, or a lookup by its key). */
export interface AttemptResult {
  outcome: PaymentAttemptOutcome;
  savedCard: SavedCardRef | null;
}

/** What completes the session: the attempt's outcome and its buyer. */
export interface PaymentResultInput {
  /** The attempt's provider key; the order id derives from it. */
  attemptKey: string;
  method: 'card' | 'pix';
  outcome: PaymentAttemptOutcome;
  amounts: PaymentAmounts;
  installments: number | null;
  customerId: string;
  customerEmail: string;
  savedCard: SavedCardRef | null;
}

/** The `pay` update's answer: the attempt as it ended and the session's status then. */
export interface PayAnswer {
  attempt: CheckoutAttempt;
  session: SessionStatus;
  /** The provider's message for a declined or failed attempt. */
  message: string | null;
}

export const expireUpdate = defineUpdate<CheckoutSessionObject, []>('expire');
export const payUpdate = defineUpdate<PayAnswer, [PayInput]>('pay');
export const providerSettledSignal = defineSignal<[ProviderNotice]>('providerSettled');
export const stateQuery = defineQuery<CheckoutWorkflowState>('state');
