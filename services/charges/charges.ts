// One-off subscription charges from the API's side (API, dashboard and usage): the checks in the
// spec's order, then the charge workflow through its client. A key is permanent: the charge document
// is unique per (store, key), so a replay answers from MongoDB whatever Temporal still remembers.
import type { Database } from '../../store/database';
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { ApiError, notFound } from '../../domain/errors';
import { normalizeCharge, type ChargeLineInput } from '../../domain/charges';
import { chargeBound } from '../../domain/charge-bounds';
import { connectionFor } from '../../adapters/provider';
import type { PaymentProvider } from '../../adapters/provider/types';
import { newId } from '../../domain/ids';
import { normalizeMetadata } from '../../domain/metadata';
import { stableStringify } from '../../domain/stable-json';
import { oneOffChargeRefusal } from '../../domain/subscriptions';
import { findStore } from '../../store/stores';
import type { StoreDoc } from '../../store/collections';
import { findSubscription, type SubscriptionDoc } from '../../store/subscriptions';
import { findChargeByKey, type ChargeOutcomeKind, type ChargeSource, type SubscriptionChargeDoc } from '../../store/subscription-charges';
import { subscriptionChargeObject, type SubscriptionChargeObject } from '../../resources/subscription-charge';
import type { ChargeWorkflowInput } from '../../workflows/charge/messages';
import { chargeClient } from './client';

export interface StartChargeInput {
  storeId: string;
  subscriptionId: string;
  /** The namespaced charge key (domain/charges.ts: `api/<Idempotency-Key>`, `usage/<period id>`). Permanent. */
  key: string;
  amount: number;
  currency?: string | null;
  description?: string | null;
  lines?: ChargeLineInput[] | null;
  metadata?: unknown;
  source: ChargeSource;
  /** Order billing_reason: `manual` for API and dashboard charges, `usage` for usage charges. */
  billingReason: 'manual' | 'usage' | string;
  /** Identity of the request under the key; defaults to a hash of the charge's own fields. */
  fingerprint?: string;
  request?: { id: string | null; idempotency_key: string | null } | null;
  /** The store when the caller already has it (the API's authentication); read otherwise. */
  store?: StoreDoc;
  /** The subscription when the caller just read it (the route's existence check); read otherwise. */
  subscription?: SubscriptionDoc;
  /**
   * How long to wait for the provider's answer; past it the charge goes on and the caller gets the
   * charge as it stands (pending, outcome `undecided`), recorded under the key. No limit when absent.
   */
  maxWaitMs?: number;
}

export interface StartChargeResult {
  charge: SubscriptionChargeObject;
  outcome: ChargeOutcomeKind;
  /** True when the charge already existed under the key (the answer is a replay). */
  replayed: boolean;
  originalRequestId: string | null;
}

const idempotencyReused = () =>
  new ApiError('idempotency_key_reused', 'This Idempotency-Key was already used with a different method, path or body.', {
    param: 'Idempotency-Key',
  });

function replayOf(doc: SubscriptionChargeDoc, fingerprint: string): StartChargeResult {
  if (doc.fingerprint !== fingerprint) throw idempotencyReused();
  // Answered pending before the provider decided: every replay is 200 with the charge as it is now.
  const outcome = doc.answered_undecided ? 'undecided' : doc.outcome;
  return { charge: subscriptionChargeObject(doc), outcome, replayed: true, originalRequestId: doc.request_id };
}

/** The request's identity under the key when the caller gives none: a hash of the charge's own fields. */
function fingerprintOf(input: StartChargeInput): string {
  if (input.fingerprint !== undefined) return input.fingerprint;
  const fields = {
    subscription: input.subscriptionId,
    amount: input.amount,
    currency: input.currency ?? null,
    description: input.description ?? null,
    lines: input.lines ?? null,
    metadata: input.metadata ?? null,
  };
  return createHash('sha256').update(stableStringify(fields)).digest('hex');
}

/** The refusals before the provider, in the spec's order (the store's plan is checked last, by the caller). */
/**
 * A fast answer from the document; the subscription's workflow checks again where a pause cannot race
 * it. Usage rule 6: usage consumed before a subscription ended is still charged to the saved card, so
 * only one-off charges (API, dashboard) need a chargeable status.
 */
function checkChargeable(sub: SubscriptionDoc | null, input: StartChargeInput): asserts sub is SubscriptionDoc {
  if (!sub) throw notFound('subscription', input.subscriptionId);
  const refusal = oneOffChargeRefusal(input.source === 'usage' ? { ...sub, status: 'active' } : sub);
  if (refusal) throw new ApiError(refusal.code, refusal.message);
}

function requireActiveStore(store: StoreDoc | null): void {
  if (!store || store.plan_overdue) {
    throw new ApiError('project_inactive', "The store's own plan payment is overdue: charges are blocked until it is paid.");
  }
}

/**
 * What a charge may start from: with the payment connections (the API's and the worker's), a charge above
 * the connection's own maximum is refused here, before any request; without them only the store's bound
 * applies here and the charge's activity holds the connection's maximum (services/charges/settlement.ts).
 */
export interface StartChargeDeps {
  db: Database;
  temporal: Client;
  taskQueue: string;
  provider?: PaymentProvider;
  testProvider?: PaymentProvider | null;
}

/** The maximum of the connection the subscription's money goes through; null when unknown here. */
function connectionMaxOf(deps: StartChargeDeps, sub: SubscriptionDoc): number | null {
  if (!deps.provider) return null;
  try {
    return connectionFor({ provider: deps.provider, testProvider: deps.testProvider }, Boolean(sub.test_clock)).maxChargeAmount(sub.currency);
  } catch {
    // A test object where no test connection runs: the charge's activity waits for one and holds its maximum.
    return null;
  }
}

/** The bound of this charge: the store's or the currency's default, never above its connection's maximum. */
function boundOf(deps: StartChargeDeps, store: StoreDoc | null, sub: SubscriptionDoc): number {
  return chargeBound({ storeMax: store?.max_charge_amount, currency: sub.currency, connectionMax: connectionMaxOf(deps, sub) });
}

/**
 * A one-off charge above its bound is refused here (400 parameter_invalid on amount); a usage charge is
 * computed, not typed: it carries the bound, and its activity records it failed (`amount_too_large`).
 */
function chargeWorkflowInput(input: StartChargeInput, sub: SubscriptionDoc, fingerprint: string, maxAmount: number): ChargeWorkflowInput {
  const charge = normalizeCharge(
    { amount: input.amount, currency: input.currency, description: input.description, lines: input.lines },
    sub.currency,
    input.source === 'usage' ? null : maxAmount,
  );
  const metadata = normalizeMetadata(input.metadata);
  return {
    chargeId: newId('sch'),
    storeId: input.storeId,
    subscriptionId: sub._id,
    customerId: sub.customer,
    subscription: {
      paymentMethodId: sub.default_payment_method!.id,
      customerEmail: sub.customer_email,
      offerId: sub.offer.id,
      productId: sub.product.id,
      clientReferenceId: sub.client_reference_id,
    },
    key: input.key,
    fingerprint,
    amount: charge.amount,
    currency: charge.currency,
    description: charge.description,
    lines: charge.lines,
    metadata,
    source: input.source,
    billingReason: input.billingReason,
    createdAt: Date.now(),
    requestId: input.request?.id ?? null,
    idempotencyKey: input.request?.idempotency_key ?? null,
    maxAmount,
    ...(sub.test_clock ? { testClock: sub.test_clock } : {}),
  };
}

/**
 * Charges a subscription's saved card once per key. Throws ApiError for every refusal before the
 * provider (in the spec's order); returns the charge (new, attached to a running one, or replayed)
 * otherwise, declines and provider refusals included: the caller maps the outcome to HTTP.
 */
export async function startCharge(deps: StartChargeDeps, input: StartChargeInput): Promise<StartChargeResult> {
  const { db } = deps;
  const fingerprint = fingerprintOf(input);
  // A key is permanent: whatever happened since, it answers with its charge.
  const [existing, sub] = await Promise.all([
    findChargeByKey(db, input.storeId, input.key),
    input.subscription ?? findSubscription(db, input.storeId, input.subscriptionId),
  ]);
  if (existing) return replayOf(existing, fingerprint);
  checkChargeable(sub, input);
  const store = input.store ?? (await findStore(db, input.storeId));
  const workflowInput = chargeWorkflowInput(input, sub, fingerprint, boundOf(deps, store, sub));
  requireActiveStore(store);

  const charges = chargeClient(deps.temporal, deps.taskQueue);
  const answer = await charges.start(workflowInput, sub, input.maxWaitMs);
  if (answer.kind === 'closed') {
    const done = await findChargeByKey(db, input.storeId, input.key);
    if (done) return replayOf(done, fingerprint);
    // No charge under the key: the subscription's workflow refused it (the stored 400 was lost).
    const refused = await charges.closedRefusal(input.storeId, input.key);
    if (refused) throw new ApiError(refused.code, refused.message);
    throw answer.error;
  }
  if (answer.kind === 'reused') throw idempotencyReused();
  if (answer.kind === 'refused') throw new ApiError(answer.code, answer.message);
  return { charge: answer.charge, outcome: answer.outcome, replayed: answer.replayed, originalRequestId: answer.originalRequestId };
}
