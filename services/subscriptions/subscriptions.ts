// Subscriptions from the API's and the CLI's side: the document of a new one, creating it (with
// customer.subscription.created and its workflow) and running an action on it through its workflow.
import type { Database } from '../../store/database';
import type { Client } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { newId } from '../../domain/ids';
import { anchorDayOf, isBillingCycle, periodEnd } from '../../domain/billing-periods';
import { encodeMetadata, type Metadata } from '../../domain/metadata';
import type { SubscriptionLife, SubscriptionPaymentMethod } from '../../domain/subscriptions';
import type { PaymentProvider, SavedCard } from '../../adapters/provider/types';
import type { CustomerDoc, OfferDoc, ProductDoc, StoreDoc } from '../../store/collections';
import { insertSubscriptionOnce, type SubscriptionDoc } from '../../store/subscriptions';
import type { EventRequest } from '../../store/events';
import { clockNowMs } from '../../store/test-clocks';
import { subscriptionObject, type SubscriptionObject } from '../../resources/subscription';
import { emitEventOnce } from '../events/emit-once';
import type { EventDeps } from '../events/events';
import { subscriptionClient } from './client';
import { startUsageOfNewSubscription } from '../usage/periods';

export interface SubscriptionDeps extends EventDeps {
  db: Database;
  provider: PaymentProvider;
  /** The test connection beside a real `provider`: a test clock's objects pay only there (connectionFor). */
  testProvider?: PaymentProvider | null;
  temporal: Client;
  taskQueue: string;
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
  /** Milliseconds; defaults to now (the customer's test clock's, when it has one). */
  now?: number;
  /** An id derived from what the subscription comes from (checkout): a repeated insert finds the first. */
  id?: string;
}

/** Builds the document of a new subscription (pure apart from the id). */
export function newSubscriptionDoc(input: NewSubscription): SubscriptionDoc {
  const { offer, product } = input;
  if (offer.type !== 'recurring' || !isBillingCycle(offer.billing_cycle)) throw new Error(`offer ${offer._id} is not a recurring offer`);
  const price = input.currency ? offer.prices.find((p) => p.currency === input.currency!.toLowerCase()) : offer.prices.find((p) => p.default);
  if (!price) throw new Error(`offer ${offer._id} has no price in ${input.currency ?? 'its default currency'}`);
  const nowMs = input.now ?? Date.now();
  const now = Math.floor(nowMs / 1000);
  const testClock = input.customer.test_clock ?? null;
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
    Object.assign(life, {
      status: 'trialing',
      trial_start: now,
      trial_end: trialEnd,
      next_billing_at: trialEnd,
      billing_anchor_day: anchorDayOf(trialEnd),
    });
  } else if (input.firstPeriodPaid) {
    const end = periodEnd(now, offer.billing_cycle, offer.custom_billing_days);
    const limitReached = offer.cycle_limit !== null && offer.cycle_limit <= 1;
    Object.assign(life, { current_period_start: now, current_period_end: end, cycles_completed: 1, next_billing_at: limitReached ? null : end });
  }
  return {
    ...life,
    // Ids sort by real creation, even when the dates follow a test clock.
    _id: input.id ?? newId('sub', testClock ? Date.now() : nowMs),
    store_id: input.store._id,
    customer: input.customer._id,
    customer_email: input.customer.email,
    installments: input.installments ?? null,
    checkout_session: input.checkoutSession ?? null,
    client_reference_id: input.clientReferenceId ?? null,
    metadata: encodeMetadata(input.metadata ?? {}),
    livemode: true,
    test_clock: testClock,
    created: now,
    version: 0,
    history: [{ at: now, action: 'created', reason: null }],
  };
}

/** Inserts the subscription and emits customer.subscription.created; its workflow is not started. */
export async function recordSubscription(deps: Pick<SubscriptionDeps, 'db'> & EventDeps, input: NewSubscription): Promise<SubscriptionDoc> {
  // A test clock's customer: the subscription starts at the clock's time (no read without a clock).
  const now = input.now ?? (await clockNowMs(deps.db, input.store._id, input.customer.test_clock ?? null));
  const doc = await insertSubscriptionOnce(deps.db, newSubscriptionDoc({ ...input, now }));
  // Keyed: a caller recovering from a crash (checkout) may emit the same fact from another execution.
  await emitEventOnce(deps, `${doc._id}:created`, {
    storeId: doc.store_id,
    type: 'customer.subscription.created',
    object: subscriptionObject(doc),
    request: input.request ?? null,
  });
  return doc;
}

/**
 * Creates the subscription, emits customer.subscription.created, starts its workflow, and inherits its
 * offer's usage rows with its usage workflow started at once (usage rule 4), so its first events are charged.
 */
export async function createSubscription(deps: SubscriptionDeps, input: NewSubscription): Promise<SubscriptionDoc> {
  const doc = await recordSubscription(deps, input);
  await subscriptionClient(deps.temporal, deps.taskQueue).start(doc);
  await startUsageOfNewSubscription(deps, doc);
  return doc;
}

/** Actions the API sends to a subscription's workflow (each one a Temporal update). */
export type SubscriptionActionName = 'pause' | 'resume' | 'cancel' | 'reactivate' | 'change_offer' | 'schedule_cancellation';

/** Runs an action on the subscription's workflow (see subscriptionClient.act) and returns the updated object. */
export async function runSubscriptionAction<A>(
  deps: { temporal: Client; taskQueue: string },
  doc: SubscriptionDoc,
  update: UpdateDefinition<SubscriptionObject, [A]>,
  arg: A,
  updateId?: string,
): Promise<SubscriptionObject> {
  return subscriptionClient(deps.temporal, deps.taskQueue).act(doc, update, arg, updateId);
}
