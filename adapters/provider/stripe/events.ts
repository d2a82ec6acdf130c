// Stripe's events (webhooks) read as the provider notices our workflows wait for: the signature checked
// with the official package's constructEvent over the raw body, then each handled type turned into a
// ProviderNotice (paid, refused, expired) addressed to the workflow named in the PaymentIntent's metadata;
// refunds carry the charge's refunds (each counted once on its order), disputes the chargeback.
import Stripe from 'stripe';
import type { ProviderNotice, SettlementStatus } from '../types';

/** Seconds a signed timestamp stays acceptable (Stripe's own default; never 0, which would accept any age). */
export const SIGNATURE_TOLERANCE_S = 300;

/** The event types that settle (or may settle) a payment; every other type is acknowledged and ignored. */
export const HANDLED_STRIPE_EVENTS = [
  'payment_intent.succeeded',
  'payment_intent.payment_failed',
  'payment_intent.processing',
  'payment_intent.canceled',
  'charge.refunded',
  'review.closed',
  'charge.dispute.created',
  'charge.dispute.closed',
] as const;
export type HandledStripeEvent = (typeof HANDLED_STRIPE_EVENTS)[number];

/** Where a PaymentIntent's notices go: its metadata as our adapter wrote it (notify_ref, store_id, charge_key). */
export interface IntentRouting {
  intentId: string;
  notifyRef: string | null;
  storeId: string | null;
  /** The charge key the payment was made under: its pinned account is the only one whose events are believed. */
  chargeKey: string | null;
  pix: boolean;
}

/** Reads a PaymentIntent (under the event's connected account) when the event's object lacks its metadata. */
export type IntentReader = (intentId: string, account: string | null) => Promise<IntentRouting>;

export class StripeSignatureError extends Error {
  constructor(
    readonly reason: 'missing' | 'invalid',
    message: string,
  ) {
    super(message);
  }
}

/** The event, once its Stripe-Signature header matches the raw body under `secret` (whsec_…). */
export function verifyStripeEvent(rawBody: string | Buffer, header: string | undefined, secret: string, receivedAtMs = Date.now()): Stripe.Event {
  if (!header) throw new StripeSignatureError('missing', 'The Stripe-Signature header is missing.');
  try {
    return Stripe.webhooks.constructEvent(rawBody, header, secret, SIGNATURE_TOLERANCE_S, undefined, receivedAtMs);
  } catch (error) {
    throw new StripeSignatureError('invalid', `The Stripe-Signature header does not match the body: ${(error as Error).message}`);
  }
}

export function isHandledStripeEvent(type: string): type is HandledStripeEvent {
  return (HANDLED_STRIPE_EVENTS as readonly string[]).includes(type);
}

/** Our routing read from an intent's metadata (the adapter writes notify_ref and store_id beside charge_key). */
export function routingOfIntent(intent: Pick<Stripe.PaymentIntent, 'id' | 'metadata' | 'payment_method_types'>): IntentRouting {
  const metadata = intent.metadata ?? {};
  return {
    intentId: intent.id,
    notifyRef: metadata.notify_ref || null,
    storeId: metadata.store_id || null,
    chargeKey: metadata.charge_key || null,
    pix: (intent.payment_method_types ?? []).includes('pix'),
  };
}

/** What an event means: a notice for a waiting workflow, a chargeback on a payment, or nothing to deliver (with why). */
export type EventReading =
  | { kind: 'notice'; notice: ProviderNotice; storeId: string | null; chargeKey: string | null; refund?: ChargeRefund }
  | { kind: 'dispute'; storeId: string | null; chargeKey: string | null; intentId: string; dispute: ChargeDispute }
  | { kind: 'none'; why: string; intentId: string | null };

/** One refund of a charge as Stripe holds it: ours carry metadata.refund_key (our refund workflow counts them). */
export interface StripeRefundRecord {
  id: string;
  amount: number;
  status: string;
  refundKey: string | null;
  /** Unix seconds. */
  created: number;
}

/** What charge.refunded says of the money given back (minor units), so a settled order counts each refund. */
export interface ChargeRefund {
  chargeId: string;
  /** The event's connected account (refunds are read under it). */
  account: string | null;
  amount: number;
  amountRefunded: number;
  /** The charge's refunds when the event carries them whole; null when they must be read from Stripe. */
  refunds: StripeRefundRecord[] | null;
}

/** Reads a charge's refunds at Stripe (bounded; throws when the list cannot be read whole). */
export type ChargeRefundsReader = (chargeId: string, account: string | null) => Promise<StripeRefundRecord[]>;

/** A chargeback as charge.dispute.created / .closed carry it. */
export interface ChargeDispute {
  id: string;
  status: string;
  reason: string | null;
  amount: number;
  currency: string;
  /** Unix seconds. */
  created: number;
  /** True for charge.dispute.closed: the status is its outcome (won, lost). */
  closed: boolean;
}

export const refundRecordOf = (refund: Stripe.Refund): StripeRefundRecord => ({
  id: refund.id,
  amount: refund.amount,
  status: refund.status ?? 'pending',
  refundKey: refund.metadata?.refund_key || null,
  created: refund.created,
});

/** The refunds an event's charge carries, when the list is there whole (older API versions include it). */
function refundsInEvent(charge: Stripe.Charge): StripeRefundRecord[] | null {
  const list = charge.refunds;
  if (!list || !Array.isArray(list.data) || list.has_more) return null;
  return list.data.map(refundRecordOf);
}

const idOf = (value: string | { id: string } | null | undefined): string | null => (typeof value === 'string' ? value : (value?.id ?? null));

function notice(routing: IntentRouting, status: SettlementStatus, code: string | null, message: string | null, at: number): EventReading {
  if (!routing.notifyRef) return { kind: 'none', why: 'the payment names no waiting workflow (metadata.notify_ref)', intentId: routing.intentId };
  const settled: ProviderNotice = { transactionId: routing.intentId, status, code, message, notifyRef: routing.notifyRef, settledAt: at };
  return { kind: 'notice', notice: settled, storeId: routing.storeId, chargeKey: routing.chargeKey };
}

/** A failed intent: its decline code; a PIX that was not paid in time is expired rather than refused. */
function failedIntent(intent: Stripe.PaymentIntent, at: number): EventReading {
  const routing = routingOfIntent(intent);
  const error = intent.last_payment_error;
  if (routing.pix) return notice(routing, 'expired', 'pix_expired', error?.message ?? 'The PIX was not paid in time.', at);
  const code = error?.decline_code ?? error?.code ?? 'card_declined';
  return notice(routing, 'refused', code, error?.message ?? 'The payment was declined.', at);
}

function canceledIntent(intent: Stripe.PaymentIntent, at: number): EventReading {
  const routing = routingOfIntent(intent);
  if (routing.pix) return notice(routing, 'expired', 'pix_expired', 'The PIX was canceled before it was paid.', at);
  return notice(routing, 'refused', 'canceled', `The payment was canceled (${intent.cancellation_reason ?? 'no reason given'}).`, at);
}

/** A refund of a charge still pending at our side (a review) ends it as refused; a settled one ignores the notice. */
async function refundedCharge(charge: Stripe.Charge, account: string | null, read: IntentReader, at: number): Promise<EventReading> {
  const intentId = idOf(charge.payment_intent);
  if (!intentId) return { kind: 'none', why: 'the charge has no PaymentIntent', intentId: null };
  const routing = charge.metadata?.notify_ref
    ? { ...routingOfIntent({ id: intentId, metadata: charge.metadata, payment_method_types: [] }) }
    : await read(intentId, account);
  const reading = notice(routing, 'refused', 'refunded', 'The payment was refunded at the provider.', at);
  if (reading.kind !== 'notice') return reading;
  return {
    ...reading,
    refund: { chargeId: charge.id, account, amount: charge.amount, amountRefunded: charge.amount_refunded, refunds: refundsInEvent(charge) },
  };
}

/** A chargeback opened or closed: the store is the one whose intent it is (read from Stripe: a dispute carries no metadata of ours). */
async function disputeOf(dispute: Stripe.Dispute, closed: boolean, account: string | null, read: IntentReader): Promise<EventReading> {
  const intentId = idOf(dispute.payment_intent);
  if (!intentId) return { kind: 'none', why: 'the dispute names no PaymentIntent', intentId: null };
  const routing = await read(intentId, account);
  return {
    kind: 'dispute',
    storeId: routing.storeId,
    chargeKey: routing.chargeKey,
    intentId,
    dispute: {
      id: dispute.id,
      status: dispute.status,
      reason: dispute.reason || null,
      amount: dispute.amount,
      currency: dispute.currency,
      created: dispute.created,
      closed,
    },
  };
}

/** Radar closed a review: approved pays, any other reason (refunded, fraud, dispute) refuses. */
async function closedReview(review: Stripe.Review, account: string | null, read: IntentReader, at: number): Promise<EventReading> {
  const intentId = idOf(review.payment_intent);
  if (!intentId) return { kind: 'none', why: 'the review names no PaymentIntent', intentId: null };
  const routing = await read(intentId, account);
  if (review.reason === 'approved') return notice(routing, 'paid', null, null, at);
  return notice(routing, 'refused', 'card_declined', `The provider closed the review: ${review.reason}.`, at);
}

/** The notice a handled event carries; `read` fetches an intent for the events whose object is not one. */
export async function readStripeEvent(event: Stripe.Event, read: IntentReader): Promise<EventReading> {
  const at = event.created;
  const account = event.account ?? null;
  switch (event.type) {
    case 'payment_intent.succeeded':
      return notice(routingOfIntent(event.data.object), 'paid', null, null, at);
    case 'payment_intent.payment_failed':
      return failedIntent(event.data.object, at);
    case 'payment_intent.canceled':
      return canceledIntent(event.data.object, at);
    case 'payment_intent.processing':
      // Still pending (a PIX or bank payment on its way): the waiting workflow keeps waiting.
      return { kind: 'none', why: 'processing: the payment is still pending', intentId: event.data.object.id };
    case 'charge.refunded':
      return refundedCharge(event.data.object, account, read, at);
    case 'review.closed':
      return closedReview(event.data.object, account, read, at);
    case 'charge.dispute.created':
      return disputeOf(event.data.object, false, account, read);
    case 'charge.dispute.closed':
      return disputeOf(event.data.object, true, account, read);
    default:
      return { kind: 'none', why: `${event.type} is not handled`, intentId: null };
  }
}
