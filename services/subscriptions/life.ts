// What the subscription workflow does to the world: read its state, write a lifecycle change with its
// events, charge a cycle on the saved card (renewal order), settle a charge left in review, and read
// an offer's terms. Every write is keyed (document version, derived order id, event claim).
import type { Database } from '../../store/database';
import { derivedId } from '../../domain/ids';
import { isBillingCycle } from '../../domain/billing-periods';
import { CHARGEABLE_STATUSES, type LifeEvent, type OfferTerms, type SubscriptionLife } from '../../domain/subscriptions';
import type { PaymentProvider, ProviderNotice } from '../../adapters/provider/types';
import { connectionFor } from '../../adapters/provider';
import { findOffer, findProduct } from '../../store/offers';
import { insertOrderOnce, markOrderRefunded, payConfirmedRenewalOrder, settlePendingOrder, type OrderDoc } from '../../store/orders';
import { orderObject } from '../../resources/order';
import { findSubscription, writeSubscriptionLife, type SubscriptionDoc } from '../../store/subscriptions';
import type { EventRequest } from '../../store/events';
import { subscriptionLife, subscriptionObject, type SubscriptionObject } from '../../resources/subscription';
import type { SubscriptionWorkflowInput } from '../../workflows/subscription/messages';
import { emitEventOnce } from '../events/emit-once';
import { emitOrderEvent } from '../events/order-events';
import { chargeSavedCardOnce, type ProviderCall } from '../provider/charge-once';
import { ensureUsageForSubscription, type UsageDeps } from '../usage/shared';

/** Lifecycle actions after which usage may have to start again (see applySubscriptionChange). */
const USAGE_RESTARTING_ACTIONS = new Set(['reactivated', 'resumed']);

/** What the subscription's activities need: the database, the provider, and Temporal to wake usage. */
export interface SubscriptionLifeDeps extends UsageDeps {
  provider: PaymentProvider;
  /** The test connection beside a real `provider`: a test clock's subscription pays only there (connectionFor). */
  testProvider?: PaymentProvider | null;
}

/** A renewal's lookups and refunds: the test clock (from the workflow's input) picks the connection. */
export interface CycleChargeRef {
  storeId: string;
  idempotencyKey: string;
  testClock?: string | null;
}

export interface LoadedSubscription {
  life: SubscriptionLife;
  version: number;
  object: SubscriptionObject;
}

export interface CycleChargeInput {
  storeId: string;
  subscriptionId: string;
  /** Provider idempotency key of this attempt; the order id derives from it. */
  key: string;
  /** Unix seconds (workflow time) the charge happens at. */
  at: number;
  /**
   * Record the failed order of a declined charge. Renewals do; a reactivation, which a decline must
   * leave unchanged, does not. A charge left in review always gets its pending order (money may move).
   */
  recordDeclinedOrder: boolean;
  /** The workflow the provider's notice goes to when the charge is left in review. */
  notifyRef: string;
}

export interface CycleChargeResult {
  outcome: 'approved' | 'review' | 'declined' | 'refused';
  orderId: string | null;
  transactionId: string | null;
  code: string | null;
  message: string | null;
}

export type OfferTermsResult = { ok: true; terms: OfferTerms; active: boolean } | { ok: false; reason: string };

export function renewalOrderDoc(
  sub: SubscriptionDoc,
  input: CycleChargeInput,
  status: OrderDoc['status'],
  transactionId: string | null,
  livemode: boolean,
): OrderDoc {
  return {
    _id: derivedId('ord', input.at * 1000, `${input.storeId}:${input.key}`),
    store_id: input.storeId,
    status,
    paid_at: status === 'paid' ? input.at : null,
    currency: sub.currency,
    amount_subtotal: sub.amount,
    amount_discount: 0,
    amount_total: sub.amount,
    billing_reason: 'renewal',
    order_type: 'renewal',
    recurrence: 'scheduled',
    subscription: sub._id,
    customer: sub.customer,
    customer_email: sub.customer_email,
    offer: sub.offer.id,
    product: sub.product.id,
    items: [{ kind: 'subscription', description: sub.offer.name, quantity: 1, unit_amount: sub.amount, amount: sub.amount }],
    payment_method_type: sub.default_payment_method ? 'card' : null,
    // A renewal is charged off session in full (no installment plan per renewal: docs/stripe.md), so its order says 1.
    installments: sub.default_payment_method ? 1 : null,
    external_order_id: null,
    status_source: 'provider',
    client_reference_id: sub.client_reference_id,
    checkout_session: null,
    coupon: null,
    metadata: [],
    livemode,
    created: input.at,
    provider_transaction_id: transactionId,
    charge_key: input.key,
    test_clock: sub.test_clock ?? null,
  };
}

export interface SubscriptionChangeInput {
  storeId: string;
  subscriptionId: string;
  expectedVersion: number;
  set: Partial<SubscriptionLife>;
  events: LifeEvent[];
  history: { action: string; reason: string | null } | null;
  at: number;
  request: EventRequest | null;
}

const loaded = (doc: SubscriptionDoc, object = subscriptionObject(doc)): LoadedSubscription => ({
  life: subscriptionLife(doc),
  version: doc.version,
  object,
});

export async function loadSubscriptionState(db: Database, input: SubscriptionWorkflowInput): Promise<LoadedSubscription | null> {
  const doc = await findSubscription(db, input.storeId, input.subscriptionId);
  return doc ? loaded(doc) : null;
}

/** Writes a lifecycle change (compare-and-set on version) and emits its events, each once. */
export async function applySubscriptionChange(deps: UsageDeps, input: SubscriptionChangeInput): Promise<LoadedSubscription> {
  const doc = await writeSubscriptionLife(deps.db, {
    storeId: input.storeId,
    id: input.subscriptionId,
    expectedVersion: input.expectedVersion,
    set: input.set,
    history: input.history ? { at: input.at, action: input.history.action, reason: input.history.reason } : null,
  });
  const object = subscriptionObject(doc);
  for (const event of input.events) {
    await emitEventOnce(deps, {
      storeId: doc.store_id,
      type: event.type,
      object,
      request: input.request,
      ...(event.legacyType ? { legacyType: event.legacyType } : {}),
    });
  }
  // Chargeable again: the usage workflow, ended or waiting while the subscription could not be
  // charged, runs. Only these actions: a renewal must not wake it at the very instant its own
  // period-end timer fires (a signal racing a firing timer strands the time-skipping test server).
  if (input.history && USAGE_RESTARTING_ACTIONS.has(input.history.action) && CHARGEABLE_STATUSES.includes(doc.status)) {
    await ensureUsageForSubscription(deps, doc);
  }
  return loaded(doc, object);
}

function cycleResult(outcome: CycleChargeResult['outcome'], rest: Partial<CycleChargeResult> = {}): CycleChargeResult {
  return { outcome, orderId: null, transactionId: null, code: null, message: null, ...rest };
}

/**
 * Charges one cycle on the saved card under the attempt's key and records its renewal order
 * (paid, pending in review, failed when declined), with invoice.paid / invoice.payment_failed.
 */
export async function chargeSubscriptionCycle(
  deps: SubscriptionLifeDeps,
  input: CycleChargeInput,
  call: ProviderCall = {},
): Promise<CycleChargeResult> {
  const { db } = deps;
  const sub = await findSubscription(db, input.storeId, input.subscriptionId);
  if (!sub) throw new Error(`subscription ${input.subscriptionId} not found`);
  // A test clock's renewal goes only through a test connection; its order says which (livemode).
  const provider = connectionFor(deps, Boolean(sub.test_clock));
  const pm = sub.default_payment_method;
  if (!pm) return cycleResult('refused', { code: 'no_payment_method', message: 'The subscription has no saved card.' });
  const charge = {
    storeId: input.storeId,
    idempotencyKey: input.key,
    paymentMethodId: pm.id,
    amount: sub.amount,
    currency: sub.currency,
    description: sub.offer.name,
    notifyRef: input.notifyRef,
  };
  const result = await chargeSavedCardOnce(provider, charge, call);
  if (result.status === 'refused') return cycleResult('refused', { code: result.code, message: result.message });
  if (result.status === 'declined' && !input.recordDeclinedOrder) {
    return cycleResult('declined', { transactionId: result.transactionId, code: result.code ?? 'declined', message: result.message });
  }
  const status = result.status === 'approved' ? 'paid' : result.status === 'review' ? 'pending' : 'failed';
  const order = await insertOrderOnce(db, renewalOrderDoc(sub, input, status, result.transactionId, provider.livemode));
  await emitOrderEvent(deps, order, null, { singleExecution: true });
  return {
    outcome: result.status,
    orderId: order._id,
    transactionId: result.transactionId,
    code: result.status === 'declined' ? (result.code ?? 'declined') : null,
    message: result.status === 'declined' ? result.message : null,
  };
}

/** A cycle charge in review was settled by the provider's notice: the order becomes paid or failed. */
export async function settleSubscriptionCycleOrder(
  deps: UsageDeps,
  input: { storeId: string; orderId: string; notice: ProviderNotice },
): Promise<'paid' | 'failed'> {
  const paid = input.notice.status === 'paid';
  const order = await settlePendingOrder(deps.db, input.storeId, input.orderId, paid ? 'paid' : 'failed', paid ? input.notice.settledAt : null);
  if (!order) throw new Error(`order ${input.orderId} not found`);
  await emitOrderEvent(deps, order, null, { singleExecution: true });
  return order.status === 'paid' ? 'paid' : 'failed';
}

/** The terms a subscription in `currency` would get from an offer (change_offer, reactivate). */
export async function offerTerms(db: Database, input: { storeId: string; offerId: string; currency: string }): Promise<OfferTermsResult> {
  const offer = await findOffer(db, input.storeId, input.offerId);
  if (!offer) return { ok: false, reason: `No such offer: '${input.offerId}'.` };
  if (offer.type !== 'recurring' || !isBillingCycle(offer.billing_cycle))
    return { ok: false, reason: `The offer ${offer._id} is not a recurring offer.` };
  const price = offer.prices.find((p) => p.currency === input.currency);
  if (!price) return { ok: false, reason: `The offer ${offer._id} has no price in ${input.currency}, the subscription's currency.` };
  const product = await findProduct(db, input.storeId, offer.product_id);
  return {
    ok: true,
    active: offer.active && (product?.active ?? false),
    terms: {
      offer: { id: offer._id, name: offer.name },
      product: { id: offer.product_id, name: product?.name ?? '' },
      product_family: product?.family ?? null,
      amount: price.amount,
      billing_cycle: offer.billing_cycle,
      custom_billing_days: offer.custom_billing_days,
      cycle_limit: offer.cycle_limit,
    },
  };
}

/**
 * What the provider holds under a cycle charge's key: `refused` when that attempt ended without money
 * (declined, refused, voided, expired: the next attempt needs a new key), `taken` otherwise, null when
 * the provider never received it.
 */
export async function lookupCycleCharge(deps: SubscriptionLifeDeps, input: CycleChargeRef): Promise<'refused' | 'taken' | null> {
  const found = await connectionFor(deps, Boolean(input.testClock)).lookupCharge({ storeId: input.storeId, idempotencyKey: input.idempotencyKey });
  if (!found) return null;
  const ended =
    found.state === null || found.state === 'declined' || found.state === 'refused' || found.state === 'voided' || found.state === 'expired';
  return ended ? 'refused' : 'taken';
}

/**
 * A renewal paid after its subscription ended: the money goes back through the provider (keyed by the
 * charge's own key, so a retry refunds once), the order becomes refunded and order.refunded is emitted once.
 */
export async function refundSubscriptionCycle(
  deps: SubscriptionLifeDeps,
  input: { storeId: string; subscriptionId: string; orderId: string; key: string; testClock?: string | null },
): Promise<void> {
  const back = await connectionFor(deps, Boolean(input.testClock)).refundCharge({ storeId: input.storeId, chargeKey: input.key });
  if (!back.ok) throw new Error(`renewal ${input.key} of ${input.subscriptionId} could not be refunded: ${back.reason}`);
  const order = await markOrderRefunded(deps.db, input.storeId, input.orderId);
  if (!order) throw new Error(`order ${input.orderId} not found`);
  await emitEventOnce(deps, `${order._id}:order.refunded`, {
    storeId: order.store_id,
    type: 'order.refunded',
    object: orderObject(order),
    request: null,
  });
}

/** A renewal attempt the bank asked the buyer to confirm, as the workflow fences or credits it. */
export interface RenewalAuthenticationRef extends CycleChargeRef {
  transactionId: string;
}

/**
 * Closes the attempt the buyer was asked to confirm before anything else is charged for its cycle (a dunning
 * retry, an end): `succeeded` when the buyer confirmed it first, so the cycle is paid by it and nothing is
 * charged again. A connection without buyer authentication is asked by key what its attempt became.
 */
export async function closeRenewalAuthentication(deps: SubscriptionLifeDeps, input: RenewalAuthenticationRef): Promise<'closed' | 'succeeded'> {
  const provider = connectionFor(deps, Boolean(input.testClock));
  if (provider.closeAuthentication) {
    return provider.closeAuthentication({ storeId: input.storeId, chargeKey: input.idempotencyKey, transactionId: input.transactionId });
  }
  const found = await provider.lookupCharge({ storeId: input.storeId, idempotencyKey: input.idempotencyKey });
  return found?.state === 'approved' || found?.state === 'paid' ? 'succeeded' : 'closed';
}

/** The renewal order of an attempt the buyer confirmed: failed -> paid, invoice.paid once; false when it is not paid. */
export async function payConfirmedRenewal(
  deps: UsageDeps,
  input: { storeId: string; orderId: string; transactionId: string; paidAt: number },
): Promise<boolean> {
  const order = await payConfirmedRenewalOrder(deps.db, input.storeId, input.orderId, input.transactionId, input.paidAt);
  if (!order) throw new Error(`order ${input.orderId} not found`);
  if (order.status === 'paid') await emitOrderEvent(deps, order);
  return order.status === 'paid';
}
