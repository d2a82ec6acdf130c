// What a signed-in customer does in the portal, always through the subscription's workflow (the
// subscription's one writer): schedule the cancellation at period end, undo it (reactivate), and
// replace the saved card (the new card goes to the provider adapter only, in memory).
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { Database } from '../store/database';
import type { PaymentProvider } from '../adapters/provider/types';
import { connectionFor } from '../adapters/provider';
import { findCustomer } from '../store/customers';
import { findSubscription, subscriptionsOfCustomer, type SubscriptionDoc } from '../store/subscriptions';
import { ordersOfCustomer, type OrderDoc } from '../store/orders';
import type { CancellationSource, SubscriptionPaymentMethod } from '../domain/subscriptions';
import { cardDigits } from '../domain/checkout';
import { changePaymentMethodUpdate, reactivateUpdate, scheduleCancellationUpdate, type CancelInput } from '../workflows/subscription/messages';
import { subscriptionClient } from './subscriptions/client';

export interface PortalDeps {
  db: Database;
  provider: PaymentProvider;
  /** The test connection beside a real `provider`: a test clock's subscription saves its card there (connectionFor). */
  testProvider?: PaymentProvider | null;
  temporal: Client;
  taskQueue: string;
}

export type PortalActionResult = { ok: true } | { ok: false; reason: string };

const PORTAL_SOURCE: CancellationSource = 'customer portal';

export async function portalSubscriptions(db: Database, storeId: string, customerId: string): Promise<SubscriptionDoc[]> {
  return subscriptionsOfCustomer(db, storeId, customerId);
}

export async function portalOrders(db: Database, storeId: string, customerId: string): Promise<OrderDoc[]> {
  return ordersOfCustomer(db, storeId, customerId);
}

async function ownSubscription(db: Database, storeId: string, customerId: string, id: string): Promise<SubscriptionDoc | null> {
  const doc = await findSubscription(db, storeId, id);
  return doc && doc.customer === customerId ? doc : null;
}

function reasonOf(error: unknown): string {
  if (error instanceof WorkflowUpdateFailedError) return (error.cause as Error | undefined)?.message ?? error.message;
  return 'the service is busy; try again in a moment';
}

/** An update on the subscription's workflow (no restart: the portal acts on running subscriptions), its refusal worded for the buyer. */
async function runUpdate(
  deps: PortalDeps,
  run: (subscriptions: ReturnType<typeof subscriptionClient>) => Promise<unknown>,
): Promise<PortalActionResult> {
  try {
    await run(subscriptionClient(deps.temporal, deps.taskQueue));
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: reasonOf(error) };
  }
}

export async function cancelAtPeriodEndFromPortal(
  deps: PortalDeps,
  storeId: string,
  customerId: string,
  subscriptionId: string,
): Promise<PortalActionResult> {
  if (!(await ownSubscription(deps.db, storeId, customerId, subscriptionId))) return { ok: false, reason: 'no such subscription' };
  // `source` is who canceled (the customer portal); the request is the customer's, not an API call.
  const input: CancelInput = { reason: null, comment: null, source: PORTAL_SOURCE, request: null };
  return runUpdate(deps, (subscriptions) => subscriptions.update(subscriptionId, scheduleCancellationUpdate, input));
}

export async function reactivateFromPortal(
  deps: PortalDeps,
  storeId: string,
  customerId: string,
  subscriptionId: string,
): Promise<PortalActionResult> {
  const doc = await ownSubscription(deps.db, storeId, customerId, subscriptionId);
  if (!doc) return { ok: false, reason: 'no such subscription' };
  // The portal only undoes a scheduled cancellation; restarting an ended subscription is the store's call.
  if (!doc.cancel_at_period_end) return { ok: false, reason: 'no cancellation is scheduled' };
  return runUpdate(deps, (subscriptions) => subscriptions.update(subscriptionId, reactivateUpdate, { request: null }));
}

/** A payment method id as Stripe.js makes it. */
const PAYMENT_METHOD_ID = /^pm_[A-Za-z0-9]{1,100}$/;

export async function replaceCardFromPortal(
  deps: PortalDeps,
  storeId: string,
  customerId: string,
  subscriptionId: string,
  card: { number: string; paymentMethod: string | null },
): Promise<PortalActionResult> {
  const subscription = await ownSubscription(deps.db, storeId, customerId, subscriptionId);
  if (!subscription) return { ok: false, reason: 'no such subscription' };
  // A provider's card field (Stripe.js) posts its payment method id (pm_…) instead of a number.
  const digits = card.paymentMethod ? null : cardDigits(card.number);
  if (card.paymentMethod ? !PAYMENT_METHOD_ID.test(card.paymentMethod) : !digits) return { ok: false, reason: 'the card number is not valid' };
  const customer = await findCustomer(deps.db, storeId, customerId);
  // Saved where the subscription's renewals charge it: a test clock's, the test connection.
  const provider = connectionFor(deps, Boolean(subscription.test_clock));
  const holder = { storeId, customerId, providerCustomerId: customer?.provider_customer_id ?? null };
  const saved = await provider.saveCard(card.paymentMethod ? { ...holder, cardToken: card.paymentMethod } : { ...holder, card: { number: digits! } });
  if (!saved.ok) return { ok: false, reason: saved.message };
  const paymentMethod: SubscriptionPaymentMethod = {
    id: saved.card.paymentMethodId,
    type: 'card',
    brand: saved.card.brand,
    last4: saved.card.last4,
    chargeable: saved.card.chargeable,
  };
  // An action on the subscription (customer.subscription.updated): its workflow serializes it.
  return runUpdate(deps, (subscriptions) =>
    subscriptions.update(subscriptionId, changePaymentMethodUpdate, { payment_method: paymentMethod, request: null }),
  );
}
