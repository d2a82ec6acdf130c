// What the charge workflow does to the world: the provider charge with its order and charge
// document (shown pending first when a request is answered before the provider decides), the
// settlement of a charge left in review, and its events. Exactly once: the provider
// charge is keyed by the charge key, the order id derives from the charge id and is inserted once,
// the charge document is unique per (store, key), events are emitted once per fact.
import { chargeOrderItems } from '../../domain/charges';
import { chargeBound } from '../../domain/charge-bounds';
import { derivedId } from '../../domain/ids';
import { encodeMetadata } from '../../domain/metadata';
import type { ChargeOutcome, PaymentProvider, ProviderNotice } from '../../adapters/provider/types';
import { connectionFor } from '../../adapters/provider';
import { findOrder, insertOrderOnce, settlePendingOrder, type OrderDoc } from '../../store/orders';
import { decideChargeOnce, findCharge, insertChargeOnce, settleCharge, type SubscriptionChargeDoc } from '../../store/subscription-charges';
import { subscriptionChargeObject } from '../../resources/subscription-charge';
import { chargeWorkflowId, type ChargeDecision, type ChargeWorkflowInput } from '../../workflows/charge/messages';
import { emitEventOnce } from '../events/emit-once';
import type { EventDeps } from '../events/events';
import { emitOrderEvent } from '../events/order-events';
import { chargeSavedCardOnce, type ProviderCall } from '../provider/charge-once';

export interface ChargeSettlementDeps extends EventDeps {
  provider: PaymentProvider;
  /** The test connection beside a real `provider`: a test clock's charge goes only there (connectionFor). */
  testProvider?: PaymentProvider | null;
}

function chargeOrderDoc(input: ChargeWorkflowInput, status: OrderDoc['status'], transactionId: string, livemode: boolean): OrderDoc {
  const sub = input.subscription;
  const created = Math.floor(input.createdAt / 1000);
  const items = chargeOrderItems(input);
  return {
    _id: derivedId('ord', input.createdAt, `${input.storeId}:${input.chargeId}`),
    store_id: input.storeId,
    status,
    paid_at: status === 'paid' ? created : null,
    currency: input.currency,
    amount_subtotal: input.amount,
    amount_discount: 0,
    amount_total: input.amount,
    billing_reason: input.billingReason,
    order_type: 'api',
    recurrence: 'unscheduled',
    subscription: input.subscriptionId,
    customer: input.customerId,
    customer_email: sub.customerEmail,
    offer: sub.offerId,
    product: sub.productId,
    items,
    payment_method_type: 'card',
    installments: null,
    external_order_id: input.chargeId,
    status_source: 'provider',
    client_reference_id: sub.clientReferenceId,
    checkout_session: null,
    coupon: null,
    metadata: encodeMetadata(input.metadata),
    livemode,
    created,
    provider_transaction_id: transactionId,
    charge_key: input.key,
    test_clock: input.testClock ?? null,
  };
}

const decisionOf = (doc: SubscriptionChargeDoc): ChargeDecision => ({ charge: subscriptionChargeObject(doc), outcome: doc.outcome });

type ProviderOutcome = ChargeOutcome | { status: 'refused'; transactionId: null; code: string; message: string };

/**
 * An amount above the charge's bound or its connection's own maximum fails here, before any request
 * (a usage charge is computed, so it can reach this; a typed one was refused with 400 before its start).
 */
function overBound(provider: PaymentProvider, input: ChargeWorkflowInput): ProviderOutcome | null {
  const bound = chargeBound({ storeMax: input.maxAmount, currency: input.currency, connectionMax: provider.maxChargeAmount(input.currency) });
  if (input.amount <= bound) return null;
  const message =
    `The amount ${input.amount} is above the bound of one charge in ${input.currency}, ${bound} in its minor unit ` +
    "(the store's max_charge_amount, else the currency's default, never above the payment connection's own maximum): nothing was charged.";
  return { status: 'refused', transactionId: null, code: 'amount_too_large', message };
}

async function askProvider(provider: PaymentProvider, input: ChargeWorkflowInput, call: ProviderCall): Promise<ProviderOutcome> {
  const paymentMethodId = input.subscription.paymentMethodId;
  if (!paymentMethodId) return { status: 'refused', transactionId: null, code: 'no_payment_method', message: 'The subscription has no saved card.' };
  const refused = overBound(provider, input);
  if (refused) return refused;
  const charge = {
    storeId: input.storeId,
    idempotencyKey: input.key,
    paymentMethodId,
    amount: input.amount,
    currency: input.currency,
    description: input.description,
    notifyRef: chargeWorkflowId(input.storeId, input.key),
  };
  return chargeSavedCardOnce(provider, charge, call);
}

function chargeDoc(input: ChargeWorkflowInput, outcome: ProviderOutcome, order: OrderDoc | null): SubscriptionChargeDoc {
  const created = Math.floor(input.createdAt / 1000);
  const failed = outcome.status === 'declined' || outcome.status === 'refused';
  return {
    _id: input.chargeId,
    store_id: input.storeId,
    key: input.key,
    fingerprint: input.fingerprint,
    status: outcome.status === 'approved' ? 'succeeded' : outcome.status === 'review' ? 'pending' : 'failed',
    outcome: outcome.status,
    subscription: input.subscriptionId,
    customer: input.customerId,
    amount: input.amount,
    currency: input.currency,
    description: input.description,
    lines: input.lines,
    order: order?._id ?? null,
    transaction: outcome.transactionId,
    failure_code: outcome.status === 'declined' ? (outcome.code ?? 'declined') : outcome.status === 'refused' ? outcome.code : null,
    failure_message: failed ? outcome.message : null,
    source: input.source,
    billing_reason: input.billingReason,
    metadata: encodeMetadata(input.metadata),
    livemode: true,
    created,
    settled_at: outcome.status === 'review' ? null : created,
    request_id: input.requestId,
    idempotency_key: input.idempotencyKey,
  };
}

/**
 * The provider charge, its order and the charge document. Each step is keyed, so this can die
 * anywhere (even right after the provider approved) and its retry completes the same charge; a try
 * given up (`call.signal`, the local activity's timeout) is stopped, and the retries never give up.
 */
export async function executeSubscriptionCharge(
  deps: ChargeSettlementDeps,
  input: ChargeWorkflowInput,
  call: ProviderCall = {},
): Promise<ChargeDecision> {
  const { db } = deps;
  // The test clock comes with the input: the subscription may be deleted (with its clock) meanwhile.
  const provider = connectionFor(deps, Boolean(input.testClock));
  const outcome = await askProvider(provider, input, call);
  let order: OrderDoc | null = null;
  if (outcome.transactionId !== null) {
    const status = outcome.status === 'approved' ? 'paid' : outcome.status === 'review' ? 'pending' : 'failed';
    order = await insertOrderOnce(db, chargeOrderDoc(input, status, outcome.transactionId, provider.livemode));
  }
  return decisionOf(await decideChargeOnce(db, chargeDoc(input, outcome, order)));
}

/** The charge as it stands before the provider's answer (pending, no settled_at), for a request answered now; a decision already written wins. */
export async function recordUndecidedCharge(deps: { db: ChargeSettlementDeps['db'] }, input: ChargeWorkflowInput): Promise<ChargeDecision> {
  const undecided: SubscriptionChargeDoc = {
    // Pending as a review is, with nothing from the provider yet.
    ...chargeDoc(input, { status: 'review', transactionId: '' }, null),
    transaction: null,
    outcome: 'undecided',
    answered_undecided: true,
  };
  return decisionOf(await insertChargeOnce(deps.db, undecided));
}

/** A charge shown undecided that the subscription then refused (e.g. paused meanwhile): it fails with the refusal's code. */
export async function refuseUndecidedCharge(
  deps: { db: ChargeSettlementDeps['db'] },
  input: { charge: ChargeWorkflowInput; code: string; message: string },
): Promise<ChargeDecision> {
  const refused = { status: 'refused' as const, transactionId: null, code: input.code, message: input.message };
  return decisionOf(await decideChargeOnce(deps.db, chargeDoc(input.charge, refused, null)));
}

/** The provider's notice for a charge in review: charge and order become succeeded/paid or failed. */
export async function settleSubscriptionCharge(
  deps: EventDeps,
  input: { storeId: string; chargeId: string; notice: ProviderNotice },
): Promise<ChargeDecision> {
  const { db } = deps;
  const paid = input.notice.status === 'paid';
  const charge = await findCharge(db, input.storeId, input.chargeId);
  if (!charge) throw new Error(`charge ${input.chargeId} not found`);
  if (charge.order) await settlePendingOrder(db, input.storeId, charge.order, paid ? 'paid' : 'failed', paid ? input.notice.settledAt : null);
  const updated = await settleCharge(db, input.storeId, input.chargeId, {
    // `outcome` stays 'review': replays answer as the first request was answered (200 with the charge now settled).
    status: paid ? 'succeeded' : 'failed',
    failure_code: paid ? null : (input.notice.code ?? 'declined'),
    failure_message: paid ? null : (input.notice.message ?? 'The payment was refused after review.'),
    settled_at: input.notice.settledAt,
  });
  return decisionOf(updated!);
}

/**
 * The events of a settled charge, each once: invoice.paid (order.paid in the original catalog)
 * and subscription_charge.succeeded, or subscription_charge.failed and, with an order,
 * invoice.payment_failed. Nothing while pending.
 */
export async function emitChargeEvents(deps: EventDeps, input: { storeId: string; chargeId: string }): Promise<void> {
  const charge = await findCharge(deps.db, input.storeId, input.chargeId);
  if (!charge || charge.status === 'pending') return;
  const request = charge.request_id || charge.idempotency_key ? { id: charge.request_id, idempotency_key: charge.idempotency_key } : null;
  const order = charge.order ? await findOrder(deps.db, input.storeId, charge.order) : null;
  if (order) await emitOrderEvent(deps, order, request, { singleExecution: true });
  const type = charge.status === 'succeeded' ? 'subscription_charge.succeeded' : 'subscription_charge.failed';
  await emitEventOnce(deps, { storeId: charge.store_id, type, object: subscriptionChargeObject(charge), request, legacyType: null });
}
