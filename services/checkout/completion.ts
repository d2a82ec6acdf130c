// What the checkout session workflow does to the world: complete, expire and settle the session
// (conditional single-document writes, harmless when retried), write its order once (its id derives
// from the attempt's key), write a new buyer once the payment is taken, emit its events, and hand a
// paid recurring purchase to the subscriptions area.
import type { Database } from '../../store/database';
import { ApplicationFailure } from '@temporalio/common';
import {
  findCheckoutSession,
  markSessionAction,
  markSessionComplete,
  markSessionExpired,
  markSessionSettled,
  recordSessionDecline,
  type CheckoutSessionDoc,
} from '../../store/checkout-sessions';
import { checkoutSessionObject, type CheckoutSessionObject } from '../../resources/checkout-session';
import { findOrder, insertOrderOnce, settlePendingOrder, type OrderDoc } from '../../store/orders';
import type { PaymentProvider } from '../../adapters/provider/types';
import { connectionFor } from '../../adapters/provider';
import type { PaymentResultInput } from '../../workflows/checkout-session/messages';
import { startsWithTrial } from '../../domain/checkout';
import { derivedId } from '../../domain/ids';
import type { CustomerDoc } from '../../store/collections';
import { insertCustomer } from '../../store/customers';
import { customerObject } from '../../resources/customer';
import { emitEventOnce } from '../events/emit-once';
import type { EventDeps } from '../events/events';
import { emitOrderEvent } from '../events/order-events';

export interface CheckoutCompletionDeps extends EventDeps {
  provider: PaymentProvider;
  /** The test connection beside a real `provider`: a test clock's session paid there (connectionFor). */
  testProvider?: PaymentProvider | null;
}

export interface CompleteSessionInput {
  storeId: string;
  sessionId: string;
  result: PaymentResultInput;
  paymentStatus: 'paid' | 'pending';
  completedAt: number;
}

export interface SettleSessionInput {
  storeId: string;
  sessionId: string;
  outcome: 'paid' | 'refused' | 'expired';
  settledAt: number;
}

export async function sessionOrFail(deps: { db: Database }, storeId: string, sessionId: string): Promise<CheckoutSessionDoc> {
  const doc = await findCheckoutSession(deps.db, storeId, sessionId);
  if (!doc) throw ApplicationFailure.nonRetryable(`checkout session ${sessionId} not found in store ${storeId}`, 'session_missing');
  return doc;
}

/** The order of the attempt that completed the session: a retried completion inserts the same id. */
/** A card's installments as the provider confirmed them: its plan, else 1 (charged in full). */
function confirmedPlan(outcome: PaymentResultInput['outcome']): number {
  return (outcome.status === 'approved' || outcome.status === 'review') && outcome.installments ? outcome.installments : 1;
}

export function checkoutOrderId(storeId: string, attemptKey: string, completedAt: number): string {
  return derivedId('ord', completedAt * 1000, `checkout-order:${storeId}:${attemptKey}`);
}

export function checkoutOrderDoc(
  session: CheckoutSessionDoc,
  result: PaymentResultInput,
  paymentStatus: 'paid' | 'pending',
  completedAt: number,
  livemode: boolean,
): OrderDoc {
  const { amounts, outcome } = result;
  const transactionId = 'transactionId' in outcome ? outcome.transactionId : null;
  return {
    _id: checkoutOrderId(session.store_id, result.attemptKey, completedAt),
    store_id: session.store_id,
    status: paymentStatus === 'paid' ? 'paid' : 'pending',
    paid_at: paymentStatus === 'paid' ? completedAt : null,
    currency: amounts.currency,
    amount_subtotal: amounts.amount_subtotal,
    amount_discount: amounts.amount_discount,
    amount_total: amounts.amount_total,
    billing_reason: 'purchase',
    order_type: 'checkout',
    recurrence: session.offer.type === 'recurring' ? 'scheduled' : 'one_off',
    subscription: null,
    customer: result.customerId,
    customer_email: result.customerEmail,
    offer: session.offer.id,
    product: session.offer.product_id,
    items: [
      {
        kind: 'product',
        description: session.offer.name,
        quantity: amounts.quantity,
        unit_amount: amounts.unit_amount,
        amount: amounts.unit_amount * amounts.quantity,
      },
    ],
    payment_method_type: result.method,
    installments: result.method === 'card' ? confirmedPlan(result.outcome) : null,
    external_order_id: transactionId,
    status_source: 'provider',
    client_reference_id: session.client_reference_id,
    checkout_session: session._id,
    coupon: session.coupon?.code ?? null,
    metadata: session.metadata,
    livemode,
    created: completedAt,
    charge_key: result.attemptKey,
    test_clock: session.test_clock ?? null,
  };
}

function paymentOf(result: PaymentResultInput) {
  const { outcome } = result;
  return {
    method: result.method,
    transaction_id: 'transactionId' in outcome ? outcome.transactionId : null,
    installments: result.method === 'card' ? confirmedPlan(result.outcome) : null,
    currency: result.amounts.currency,
    amount_total: result.amounts.amount_total,
    pix_code: outcome.status === 'pix_pending' ? outcome.pixCode : null,
    pix_expires_at: outcome.status === 'pix_pending' ? outcome.pixExpiresAt : null,
    saved_card: result.savedCard,
  };
}

/**
 * A free-trial sign-up's order: paid, amount 0 (nothing charged now; the card is saved for the trial's
 * end), so fulfilment that waits for a paid order (order.paid, invoice.paid) sees the sign-up.
 */
export function trialOrderDoc(order: OrderDoc): OrderDoc {
  // The offer's name as it is: the thank-you page shows the item in the buyer's language around it.
  const items = order.items.map((item) => ({ ...item, unit_amount: 0, amount: 0 }));
  return { ...order, amount_subtotal: 0, amount_discount: 0, amount_total: 0, items, installments: null, external_order_id: null };
}

/** open -> complete with its order (pending for PIX and review; amount 0 for a free trial); repeatable. */
export async function completeCheckoutSession(
  deps: CheckoutCompletionDeps,
  input: CompleteSessionInput,
): Promise<{ order: string | null; session: CheckoutSessionObject }> {
  const { storeId, sessionId, result, paymentStatus, completedAt } = input;
  const session = await sessionOrFail(deps, storeId, sessionId);
  const order = checkoutOrderDoc(session, result, paymentStatus, completedAt, connectionFor(deps, Boolean(session.test_clock)).livemode);
  await insertOrderOnce(deps.db, startsWithTrial(session.offer) ? trialOrderDoc(order) : order);
  const updated = await markSessionComplete(deps.db, storeId, sessionId, {
    payment_status: paymentStatus,
    customer: result.customerId,
    // "As passed; with customer, the customer's values": what the buyer typed is the order's, not the session's.
    customer_email: session.customer_email,
    order: order._id,
    completed_at: completedAt,
    payment: paymentOf(result),
  });
  if (updated) return { order: updated.order, session: checkoutSessionObject(updated) };
  // Already applied by an earlier try of this activity; anything else breaks the one-writer rule.
  const current = await sessionOrFail(deps, storeId, sessionId);
  if (current.status === 'complete' && current.completed_at === completedAt) {
    return { order: current.order, session: checkoutSessionObject(current) };
  }
  throw ApplicationFailure.nonRetryable(`checkout session ${sessionId} is ${current.status}; cannot complete it`, 'session_not_open');
}

/** open -> expired; repeatable. */
export async function markCheckoutSessionExpired(
  deps: { db: Database },
  input: { storeId: string; sessionId: string },
): Promise<CheckoutSessionObject> {
  const updated = await markSessionExpired(deps.db, input.storeId, input.sessionId);
  if (updated) return checkoutSessionObject(updated);
  const current = await sessionOrFail(deps, input.storeId, input.sessionId);
  if (current.status === 'expired') return checkoutSessionObject(current);
  throw ApplicationFailure.nonRetryable(`checkout session ${input.sessionId} is ${current.status}; cannot expire it`, 'session_not_open');
}

/** A declined attempt: shown on the page, the session stays open. */
export async function recordCheckoutDecline(
  deps: { db: Database },
  input: { storeId: string; sessionId: string; error: { code: string; message: string }; cardLocked?: boolean },
): Promise<void> {
  await recordSessionDecline(deps.db, input.storeId, input.sessionId, input.error, input.cardLocked === true);
}

/** complete/pending -> paid or unpaid, and its order with it; repeatable. */
/** A card attempt waits for the buyer's 3-D Secure: the open session's page shows the bank's step. */
export async function recordCheckoutAction(
  deps: { db: Database },
  input: { storeId: string; sessionId: string; transactionId: string; key: string },
): Promise<void> {
  await markSessionAction(deps.db, input.storeId, input.sessionId, { transaction_id: input.transactionId, attempt_key: input.key });
}

export async function settleCheckoutSession(deps: { db: Database }, input: SettleSessionInput): Promise<CheckoutSessionObject> {
  const { storeId, sessionId, outcome, settledAt } = input;
  const session = await sessionOrFail(deps, storeId, sessionId);
  if (session.order) {
    const status = outcome === 'paid' ? 'paid' : outcome === 'refused' ? 'failed' : 'canceled';
    await settlePendingOrder(deps.db, storeId, session.order, status, outcome === 'paid' ? settledAt : null);
  }
  const updated = await markSessionSettled(deps.db, storeId, sessionId, outcome === 'paid' ? 'paid' : 'unpaid');
  return checkoutSessionObject(updated ?? session);
}

/**
 * The new buyer the page prepared, written once the payment is taken: a retry, or an attempt of
 * another session racing it with the same e-mail (same derived id), finds the one written, and
 * customer.created is emitted once, keyed by the customer.
 */
export async function writeCheckoutBuyer(
  deps: EventDeps,
  input: { storeId: string; customer: CustomerDoc },
): Promise<{ customerId: string; customerEmail: string }> {
  const prepared = { ...input.customer, created: Math.floor(Date.now() / 1000) };
  const { customer } = await insertCustomer(deps.db, prepared);
  if (customer._id === prepared._id) {
    const event = { storeId: customer.store_id, type: 'customer.created', object: customerObject(customer), request: null };
    await emitEventOnce(deps, `customer.created:${customer._id}`, event);
  }
  return { customerId: customer._id, customerEmail: customer.email };
}

/** One event per session move, once however often this is retried (keyed by session and type). */
export async function emitCheckoutSessionEvent(
  deps: EventDeps,
  input: { storeId: string; sessionId: string; type: string; legacyType: string | null },
): Promise<void> {
  const session = await sessionOrFail(deps, input.storeId, input.sessionId);
  await emitEventOnce(deps, `${session._id}:${input.type}`, {
    storeId: input.storeId,
    type: input.type,
    object: checkoutSessionObject(session),
    legacyType: input.legacyType,
    request: null,
  });
}

/** invoice.paid / invoice.payment_failed for the checkout's order, once (the order's status decides which). */
export async function emitCheckoutOrderEvent(deps: EventDeps, input: { storeId: string; orderId: string }): Promise<void> {
  const order = await findOrder(deps.db, input.storeId, input.orderId);
  if (order) await emitOrderEvent(deps, order);
}
