// One-off subscription charges (API, dashboard and usage): the checks in the spec's order, the
// starter every caller uses (`startCharge`: replay by key, else start-or-attach to the charge
// workflow and wait for its outcome), and the charge workflow's activities. Exactly once: the
// provider charge is keyed by the charge key, the order id derives from the charge id and is
// inserted once, the charge document is unique per (store, key), events are emitted once per fact.
import type { Db } from 'mongodb';
import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { ApiError, notFound } from '../domain/errors';
import { chargeOrderItems, normalizeCharge, type ChargeLineInput } from '../domain/charges';
import { derivedId, newId } from '../domain/ids';
import { encodeMetadata, normalizeMetadata } from '../domain/metadata';
import { stableStringify } from '../domain/stable-json';
import { CHARGEABLE_STATUSES } from '../domain/subscriptions';
import type { ProviderNotice } from '../adapters/provider/types';
import type { PaymentProvider } from '../adapters/provider/types';
import { findStore } from '../store/stores';
import type { StoreDoc } from '../store/collections';
import { findOrder, insertOrderOnce, settlePendingOrder, type OrderDoc } from '../store/orders';
import { findSubscription } from '../store/subscriptions';
import {
  chargesCollection,
  findCharge,
  findChargeByKey,
  insertChargeOnce,
  subscriptionChargeObject,
  type ChargeOutcomeKind,
  type ChargeSource,
  type SubscriptionChargeDoc,
  type SubscriptionChargeObject,
} from '../store/subscription-charges';
import { emitEventOnce } from '../services/emit-once';
import { emitOrderEvent, subscriptionSearchAttributes } from './subscriptions';
import type { EventDeps } from '../services/events';
import {
  chargeOutcomeUpdate,
  chargeWorkflowId,
  type ChargeDecision,
  type ChargeWorkflowInput,
} from '../workflows/charge-messages';

export interface ChargeDeps extends EventDeps {
  db: Db;
  provider: PaymentProvider;
  temporal: Client | null;
  taskQueue: string;
}

export interface StartChargeInput {
  storeId: string;
  subscriptionId: string;
  /** Idempotency-Key, or `usage:<period id>` for usage charges. Permanent. */
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
  /**
   * How long to wait for the provider's answer; past it the charge goes on and the caller gets
   * 409 idempotency_key_in_use (retrying with the key later returns the charge). No limit when absent.
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

const stillRunning = () =>
  new ApiError('idempotency_key_in_use', 'The charge is still being processed. Retry with the same Idempotency-Key to get its result.', {
    param: 'Idempotency-Key',
  });

function replayOf(doc: SubscriptionChargeDoc, fingerprint: string): StartChargeResult {
  if (doc.fingerprint !== fingerprint) throw idempotencyReused();
  return { charge: subscriptionChargeObject(doc), outcome: doc.outcome, replayed: true, originalRequestId: doc.request_id };
}

function isAlreadyStarted(error: unknown): boolean {
  for (let e = error as { name?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.name === 'WorkflowExecutionAlreadyStartedError') return true;
  }
  return false;
}

/**
 * Charges a subscription's saved card once per key. Throws ApiError for every refusal before the
 * provider (in the spec's order); returns the charge (new, attached to a running one, or replayed)
 * otherwise, declines and provider refusals included — the caller maps the outcome to HTTP.
 */
export async function startCharge(deps: { db: Db; temporal: Client | null; taskQueue: string }, input: StartChargeInput): Promise<StartChargeResult> {
  const { db } = deps;
  const fingerprint =
    input.fingerprint ??
    createHash('sha256')
      .update(stableStringify({ subscription: input.subscriptionId, amount: input.amount, currency: input.currency ?? null, description: input.description ?? null, lines: input.lines ?? null, metadata: input.metadata ?? null }))
      .digest('hex');

  // A key is permanent: whatever happened since, it answers with its charge.
  const [existing, sub] = await Promise.all([
    findChargeByKey(db, input.storeId, input.key),
    findSubscription(db, input.storeId, input.subscriptionId),
  ]);
  if (existing) return replayOf(existing, fingerprint);

  if (!sub) throw notFound('subscription', input.subscriptionId);
  // Usage rule 6: the usage consumed before a subscription ended is still charged to the saved
  // card; only one-off charges (API, dashboard) need a chargeable status.
  if (input.source !== 'usage' && !CHARGEABLE_STATUSES.includes(sub.status)) {
    throw new ApiError('subscription_not_chargeable', `The subscription is ${sub.status}; only active, trialing and past_due subscriptions accept charges.`);
  }
  if (!sub.default_payment_method) {
    throw new ApiError('no_payment_method', 'The subscription has no saved card (it pays by PIX or similar).');
  }
  if (!sub.default_payment_method.chargeable) {
    throw new ApiError(
      'payment_method_not_chargeable',
      'The saved card is held by a provider that does not accept charges without the customer present.',
    );
  }
  const charge = normalizeCharge(
    { amount: input.amount, currency: input.currency, description: input.description, lines: input.lines },
    sub.currency,
  );
  const metadata = normalizeMetadata(input.metadata);
  const store = input.store ?? (await findStore(db, input.storeId));
  if (!store || store.plan_overdue) {
    throw new ApiError('project_inactive', "The store's own plan payment is overdue: charges are blocked until it is paid.");
  }
  if (!deps.temporal) throw new Error('charges need a Temporal client');

  const workflowInput: ChargeWorkflowInput = {
    chargeId: newId('sch'),
    storeId: input.storeId,
    subscriptionId: sub._id,
    customerId: sub.customer,
    subscription: {
      paymentMethodId: sub.default_payment_method.id,
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
  };
  let answer;
  let timer: NodeJS.Timeout | undefined;
  try {
    const waiting = deps.temporal.workflow.executeUpdateWithStart(chargeOutcomeUpdate, {
      args: [{ fingerprint, requestId: workflowInput.requestId }],
      startWorkflowOperation: new WithStartWorkflowOperation('chargeWorkflow', {
        workflowId: chargeWorkflowId(input.storeId, input.key),
        taskQueue: deps.taskQueue,
        args: [workflowInput],
        // Requests under one key attach to the running charge; a finished one is never run again
        // (MongoDB then answers, and keeps answering after Temporal's retention drops the run).
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: subscriptionSearchAttributes(sub),
      }),
    });
    // Past the wait limit the update goes on unobserved; its eventual failure is not ours to report.
    waiting.catch(() => undefined);
    answer = await (input.maxWaitMs === undefined
      ? waiting
      : Promise.race([
          waiting,
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(stillRunning()), input.maxWaitMs);
          }),
        ]));
  } catch (error) {
    if (error instanceof ApiError) throw error;
    if (!isAlreadyStarted(error)) throw error;
    const done = await findChargeByKey(db, input.storeId, input.key);
    if (!done) throw error;
    return replayOf(done, fingerprint);
  } finally {
    clearTimeout(timer);
  }
  if (answer.kind === 'reused') throw idempotencyReused();
  return { charge: answer.charge, outcome: answer.outcome, replayed: answer.replayed, originalRequestId: answer.originalRequestId };
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
  };
}

/**
 * Heartbeat when run as a regular activity (lets Temporal notice a dead worker quickly while a slow
 * live attempt keeps its budget); nothing as a local activity, whose workflow task covers it.
 */
function beat(): void {
  try {
    const context = Context.current();
    if (!context.info.isLocal) context.heartbeat();
  } catch {
    // Called outside an activity (tests): nothing to report to.
  }
}

export function createChargeActivities(deps: ChargeDeps) {
  const { db, provider } = deps;

  return {
    /**
     * The provider charge, its order and the charge document. Each step is keyed, so this activity
     * can die anywhere (even right after the provider approved) and its retry completes the same charge.
     */
    async executeSubscriptionCharge(input: ChargeWorkflowInput): Promise<ChargeDecision> {
      beat();
      const paymentMethodId = input.subscription.paymentMethodId;
      const outcome = paymentMethodId
        ? await provider.chargeSavedCard({
            storeId: input.storeId,
            idempotencyKey: input.key,
            paymentMethodId,
            amount: input.amount,
            currency: input.currency,
            description: input.description,
            notifyRef: chargeWorkflowId(input.storeId, input.key),
          })
        : ({ status: 'refused', transactionId: null, code: 'no_payment_method', message: 'The subscription has no saved card.' } as const);
      beat();

      const created = Math.floor(input.createdAt / 1000);
      let order: OrderDoc | null = null;
      if (outcome.transactionId !== null) {
        const status = outcome.status === 'approved' ? 'paid' : outcome.status === 'review' ? 'pending' : 'failed';
        order = await insertOrderOnce(db, chargeOrderDoc(input, status, outcome.transactionId, provider.livemode));
      }
      const failed = outcome.status === 'declined' || outcome.status === 'refused';
      const doc = await insertChargeOnce(db, {
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
        failure_code: outcome.status === 'declined' ? outcome.code ?? 'declined' : outcome.status === 'refused' ? outcome.code : null,
        failure_message: failed ? outcome.message : null,
        source: input.source,
        billing_reason: input.billingReason,
        metadata: encodeMetadata(input.metadata),
        livemode: true,
        created,
        settled_at: outcome.status === 'review' ? null : created,
        request_id: input.requestId,
        idempotency_key: input.idempotencyKey,
      });
      return { charge: subscriptionChargeObject(doc), outcome: doc.outcome };
    },

    /** The provider's notice for a charge in review: charge and order become succeeded/paid or failed. */
    async settleSubscriptionCharge(input: { storeId: string; chargeId: string; notice: ProviderNotice }): Promise<ChargeDecision> {
      const paid = input.notice.status === 'paid';
      const charge = await findCharge(db, input.storeId, input.chargeId);
      if (!charge) throw new Error(`charge ${input.chargeId} not found`);
      if (charge.order) await settlePendingOrder(db, input.storeId, charge.order, paid ? 'paid' : 'failed', paid ? input.notice.settledAt : null);
      const updated = await chargesCollection(db).findOneAndUpdate(
        { _id: input.chargeId, store_id: input.storeId, status: 'pending' },
        {
          $set: {
            // `outcome` stays 'review': replays answer as the first request was answered (200 with the charge now settled).
            status: paid ? 'succeeded' : 'failed',
            failure_code: paid ? null : input.notice.code ?? 'declined',
            failure_message: paid ? null : input.notice.message ?? 'The payment was refused after review.',
            settled_at: input.notice.settledAt,
          },
        },
        { returnDocument: 'after' },
      );
      const doc = updated ?? (await findCharge(db, input.storeId, input.chargeId))!;
      return { charge: subscriptionChargeObject(doc), outcome: doc.outcome };
    },

    /**
     * The events of a settled charge, each once: invoice.paid (order.paid in the original catalog)
     * and subscription_charge.succeeded, or subscription_charge.failed and, with an order,
     * invoice.payment_failed. Nothing while pending.
     */
    async emitChargeEvents(input: { storeId: string; chargeId: string }): Promise<void> {
      const charge = await findCharge(db, input.storeId, input.chargeId);
      if (!charge || charge.status === 'pending') return;
      const request = charge.request_id || charge.idempotency_key ? { id: charge.request_id, idempotency_key: charge.idempotency_key } : null;
      const order = charge.order ? await findOrder(db, input.storeId, charge.order) : null;
      if (order) await emitOrderEvent(deps, order, request, { singleExecution: true });
      const type = charge.status === 'succeeded' ? 'subscription_charge.succeeded' : 'subscription_charge.failed';
      await emitEventOnce(deps, {
        storeId: charge.store_id,
        type,
        object: subscriptionChargeObject(charge),
        request,
        legacyType: null,
      });
    },
  };
}
