// Subscriptions' side effects: creating one (admin CLI, checkout) and starting its workflow, and the
// activities the subscription workflow runs — loading its state, writing lifecycle changes with
// their events, charging a cycle on the saved card (renewal order), settling a charge in review.
// Every write is keyed (document version, derived order id, event claim) so retries are harmless.
import type { Db } from 'mongodb';
import type { Client } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType, type UpdateDefinition } from '@temporalio/common';
import { ApiError } from '../domain/errors';
import { derivedId, newId } from '../domain/ids';
import { anchorDayOf, isBillingCycle, periodEnd } from '../domain/billing-periods';
import { encodeMetadata, type Metadata } from '../domain/metadata';
import { CHARGEABLE_STATUSES, type LifeEvent, type OfferTerms, type SubscriptionLife, type SubscriptionPaymentMethod } from '../domain/subscriptions';
import type { PaymentProvider, ProviderNotice, SavedCard } from '../adapters/provider/types';
import { collections, type CustomerDoc, type OfferDoc, type ProductDoc, type StoreDoc } from '../store/collections';
import { insertOrderOnce, orderObject, settlePendingOrder, type OrderDoc } from '../store/orders';
import {
  findSubscription,
  insertSubscription,
  lifeOf,
  subscriptionObject,
  writeSubscriptionLife,
  type SubscriptionDoc,
  type SubscriptionObject,
} from '../store/subscriptions';
import type { EventRequest } from '../store/events';
import { emitEventOnce } from '../services/emit-once';
import type { EventDeps } from '../services/events';
import { subscriptionWorkflowId, type SubscriptionWorkflowInput } from '../workflows/subscription-messages';
import { ensureUsageForSubscription } from '../services/usage-shared';

/** Lifecycle actions after which usage may have to start again (see applySubscriptionChange). */
const USAGE_RESTARTING_ACTIONS = new Set(['reactivated', 'resumed']);

export const StoreIdKey = defineSearchAttributeKey('StoreId', SearchAttributeType.KEYWORD);
export const CustomerIdKey = defineSearchAttributeKey('CustomerId', SearchAttributeType.KEYWORD);
export const SubscriptionIdKey = defineSearchAttributeKey('SubscriptionId', SearchAttributeType.KEYWORD);

export interface SubscriptionDeps extends EventDeps {
  db: Db;
  provider: PaymentProvider;
  temporal: Client | null;
  taskQueue: string;
}

/** Search attributes of every workflow about one subscription (subscription, charges, usage). */
export function subscriptionSearchAttributes(doc: { store_id: string; customer: string | null; _id: string }) {
  return [
    { key: StoreIdKey, value: doc.store_id },
    ...(doc.customer ? [{ key: CustomerIdKey, value: doc.customer }] : []),
    { key: SubscriptionIdKey, value: doc._id },
  ];
}

/** Starts the subscription's workflow; a running one with that id is kept (starting twice is a no-op). */
export async function startSubscriptionWorkflow(client: Client, taskQueue: string, doc: SubscriptionDoc): Promise<void> {
  const input: SubscriptionWorkflowInput = { storeId: doc.store_id, subscriptionId: doc._id };
  await client.workflow.start('subscriptionWorkflow', {
    workflowId: subscriptionWorkflowId(doc._id),
    taskQueue,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: subscriptionSearchAttributes(doc),
  });
}

export function paymentMethodOf(card: SavedCard | null): SubscriptionPaymentMethod | null {
  return card ? { id: card.paymentMethodId, type: 'card', brand: card.brand, last4: card.last4, chargeable: card.chargeable } : null;
}

export interface NewSubscription {
  store: StoreDoc;
  customer: CustomerDoc;
  offer: OfferDoc;
  product: ProductDoc;
  /** Defaults to the offer's default price currency. */
  currency?: string | null;
  paymentMethod: SavedCard | null;
  installments?: number | null;
  checkoutSession?: string | null;
  clientReferenceId?: string | null;
  metadata?: Metadata;
  /**
   * True when the first cycle was already paid (checkout's purchase order): active with a period
   * from now. Otherwise, without a trial, the workflow charges the first cycle at once.
   */
  firstPeriodPaid?: boolean;
  request?: EventRequest | null;
  /** Milliseconds; defaults to now. */
  now?: number;
}

/** Builds the document of a new subscription (pure apart from the id). */
export function newSubscriptionDoc(input: NewSubscription): SubscriptionDoc {
  const { offer, product } = input;
  if (offer.type !== 'recurring' || !isBillingCycle(offer.billing_cycle)) throw new Error(`offer ${offer._id} is not a recurring offer`);
  const price = input.currency ? offer.prices.find((p) => p.currency === input.currency!.toLowerCase()) : offer.prices.find((p) => p.default);
  if (!price) throw new Error(`offer ${offer._id} has no price in ${input.currency ?? 'its default currency'}`);
  const nowMs = input.now ?? Date.now();
  const now = Math.floor(nowMs / 1000);
  const trialDays = offer.trial_days ?? 0;
  const life: SubscriptionLife = {
    status: 'active',
    offer: { id: offer._id, name: offer.name },
    product: { id: product._id, name: product.name },
    product_family: product.family,
    billing_cycle: offer.billing_cycle,
    custom_billing_days: offer.custom_billing_days,
    currency: price.currency,
    amount: price.amount,
    current_period_start: null,
    current_period_end: null,
    next_billing_at: now,
    trial_start: null,
    trial_end: null,
    cycles_completed: 0,
    cycle_limit: offer.cycle_limit,
    cancel_at_period_end: false,
    canceled_at: null,
    ended_at: null,
    cancellation_details: null,
    default_payment_method: paymentMethodOf(input.paymentMethod),
    past_due_details: null,
    billing_anchor_day: anchorDayOf(now),
  };
  if (trialDays > 0) {
    const trialEnd = now + trialDays * 24 * 60 * 60;
    Object.assign(life, { status: 'trialing', trial_start: now, trial_end: trialEnd, next_billing_at: trialEnd, billing_anchor_day: anchorDayOf(trialEnd) });
  } else if (input.firstPeriodPaid) {
    const end = periodEnd(now, offer.billing_cycle, offer.custom_billing_days);
    const limitReached = offer.cycle_limit !== null && offer.cycle_limit <= 1;
    Object.assign(life, { current_period_start: now, current_period_end: end, cycles_completed: 1, next_billing_at: limitReached ? null : end });
  }
  return {
    ...life,
    _id: newId('sub', nowMs),
    store_id: input.store._id,
    customer: input.customer._id,
    customer_email: input.customer.email,
    installments: input.installments ?? null,
    checkout_session: input.checkoutSession ?? null,
    client_reference_id: input.clientReferenceId ?? null,
    metadata: encodeMetadata(input.metadata ?? {}),
    livemode: true,
    created: now,
    version: 0,
    history: [{ at: now, action: 'created', reason: null }],
  };
}

/** Creates the subscription, emits customer.subscription.created and starts its workflow. */
export async function createSubscription(deps: SubscriptionDeps, input: NewSubscription): Promise<SubscriptionDoc> {
  const doc = newSubscriptionDoc(input);
  await insertSubscription(deps.db, doc);
  // Keyed: a caller recovering from a crash (checkout) may emit the same fact from another execution.
  await emitEventOnce(deps, `${doc._id}:created`, {
    storeId: doc.store_id,
    type: 'customer.subscription.created',
    object: subscriptionObject(doc),
    request: input.request ?? null,
  });
  if (deps.temporal) await startSubscriptionWorkflow(deps.temporal, deps.taskQueue, doc);
  return doc;
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

function renewalOrderDoc(
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
    installments: sub.installments,
    external_order_id: null,
    status_source: 'provider',
    client_reference_id: sub.client_reference_id,
    checkout_session: null,
    coupon: null,
    metadata: [],
    livemode,
    created: input.at,
    provider_transaction_id: transactionId,
  };
}

/**
 * invoice.paid or invoice.payment_failed for an order, once. Keyed by order and type by default, so
 * any number of executions may try; `singleExecution` (the caller is the one activity that emits
 * this fact) skips the claim document and relies on the activity's attempt count instead.
 */
export async function emitOrderEvent(
  deps: EventDeps,
  order: OrderDoc,
  request: EventRequest | null = null,
  options: { singleExecution?: boolean } = {},
): Promise<void> {
  if (order.status !== 'paid' && order.status !== 'failed') return;
  const type = order.status === 'paid' ? 'invoice.paid' : 'invoice.payment_failed';
  const input = { storeId: order.store_id, type, object: orderObject(order), request };
  if (options.singleExecution) await emitEventOnce(deps, input);
  else await emitEventOnce(deps, `${order._id}:${type}`, input);
}

export function createSubscriptionActivities(deps: SubscriptionDeps) {
  const { db, provider } = deps;

  return {
    async loadSubscription(input: SubscriptionWorkflowInput): Promise<LoadedSubscription | null> {
      const doc = await findSubscription(db, input.storeId, input.subscriptionId);
      return doc ? { life: lifeOf(doc), version: doc.version, object: subscriptionObject(doc) } : null;
    },

    /** Writes a lifecycle change (compare-and-set on version) and emits its events, each once. */
    async applySubscriptionChange(input: {
      storeId: string;
      subscriptionId: string;
      expectedVersion: number;
      set: Partial<SubscriptionLife>;
      events: LifeEvent[];
      history: { action: string; reason: string | null } | null;
      at: number;
      request: EventRequest | null;
    }): Promise<LoadedSubscription> {
      const doc = await writeSubscriptionLife(db, {
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
      return { life: lifeOf(doc), version: doc.version, object };
    },

    /**
     * Charges one cycle on the saved card under the attempt's key and records its renewal order
     * (paid, pending in review, failed when declined), with invoice.paid / invoice.payment_failed.
     */
    async chargeSubscriptionCycle(input: CycleChargeInput): Promise<CycleChargeResult> {
      const sub = await findSubscription(db, input.storeId, input.subscriptionId);
      if (!sub) throw new Error(`subscription ${input.subscriptionId} not found`);
      const pm = sub.default_payment_method;
      if (!pm) return { outcome: 'refused', orderId: null, transactionId: null, code: 'no_payment_method', message: 'The subscription has no saved card.' };
      const result = await provider.chargeSavedCard({
        storeId: input.storeId,
        idempotencyKey: input.key,
        paymentMethodId: pm.id,
        amount: sub.amount,
        currency: sub.currency,
        description: sub.offer.name,
        notifyRef: input.notifyRef,
      });
      if (result.status === 'refused') {
        return { outcome: 'refused', orderId: null, transactionId: null, code: result.code, message: result.message };
      }
      if (result.status === 'declined' && !input.recordDeclinedOrder) {
        return { outcome: 'declined', orderId: null, transactionId: result.transactionId, code: result.code ?? 'declined', message: result.message };
      }
      const status = result.status === 'approved' ? 'paid' : result.status === 'review' ? 'pending' : 'failed';
      const order = await insertOrderOnce(db, renewalOrderDoc(sub, input, status, result.transactionId, provider.livemode));
      await emitOrderEvent(deps, order, null, { singleExecution: true });
      return {
        outcome: result.status,
        orderId: order._id,
        transactionId: result.transactionId,
        code: result.status === 'declined' ? result.code ?? 'declined' : null,
        message: result.status === 'declined' ? result.message : null,
      };
    },

    /** A cycle charge in review was settled by the provider's notice: the order becomes paid or failed. */
    async settleSubscriptionCycleOrder(input: { storeId: string; orderId: string; notice: ProviderNotice }): Promise<'paid' | 'failed'> {
      const paid = input.notice.status === 'paid';
      const order = await settlePendingOrder(db, input.storeId, input.orderId, paid ? 'paid' : 'failed', paid ? input.notice.settledAt : null);
      if (!order) throw new Error(`order ${input.orderId} not found`);
      await emitOrderEvent(deps, order, null, { singleExecution: true });
      return order.status === 'paid' ? 'paid' : 'failed';
    },

    /** The terms a subscription in `currency` would get from an offer (change_offer, reactivate). */
    async offerTerms(input: { storeId: string; offerId: string; currency: string }): Promise<OfferTermsResult> {
      const { offers, products } = collections(db);
      const offer = await offers.findOne({ _id: input.offerId, store_id: input.storeId });
      if (!offer) return { ok: false, reason: `No such offer: '${input.offerId}'.` };
      if (offer.type !== 'recurring' || !isBillingCycle(offer.billing_cycle)) return { ok: false, reason: `The offer ${offer._id} is not a recurring offer.` };
      const price = offer.prices.find((p) => p.currency === input.currency);
      if (!price) return { ok: false, reason: `The offer ${offer._id} has no price in ${input.currency}, the subscription's currency.` };
      const product = await products.findOne({ _id: offer.product_id, store_id: input.storeId });
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
    },
  };
}

/** Actions the API sends to a subscription's workflow (each one a Temporal update). */
export type SubscriptionActionName = 'pause' | 'resume' | 'cancel' | 'reactivate' | 'change_offer' | 'schedule_cancellation';

function causeChain(error: unknown): { name?: string; type?: string; message?: string }[] {
  const chain: { name?: string; type?: string; message?: string; cause?: unknown }[] = [];
  for (let e = error as { cause?: unknown } | undefined; e && chain.length < 8; e = e.cause as typeof e) chain.push(e as never);
  return chain;
}

/**
 * Runs an action on the subscription's workflow and returns the updated subscription object.
 * A refusal by the workflow (the action does not fit the state) becomes 400 provider_error with its
 * reason. A subscription whose workflow is not running (never started, or lost) gets it started
 * first — starting is idempotent and the workflow reads its state from MongoDB.
 */
export async function runSubscriptionAction<A>(
  deps: { db: Db; temporal: Client | null; taskQueue: string },
  doc: SubscriptionDoc,
  update: UpdateDefinition<SubscriptionObject, [A]>,
  arg: A,
  updateId?: string,
): Promise<SubscriptionObject> {
  if (!deps.temporal) throw new Error('subscription actions need a Temporal client');
  const handle = deps.temporal.workflow.getHandle(subscriptionWorkflowId(doc._id));
  for (let attempt = 0; ; attempt++) {
    try {
      return await handle.executeUpdate(update, { args: [arg], ...(updateId ? { updateId } : {}) });
    } catch (error) {
      const chain = causeChain(error);
      const refusal = chain.find((e) => e.type === 'provider_error');
      if (refusal) throw new ApiError('provider_error', refusal.message ?? 'The action does not fit the subscription\'s state.');
      const notRunning = chain.some((e) => e.name === 'WorkflowNotFoundError');
      if (!notRunning || attempt > 0) throw error;
      await startSubscriptionWorkflow(deps.temporal, deps.taskQueue, doc);
    }
  }
}
