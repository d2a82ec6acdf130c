// A buyer confirming in the portal the renewal their bank asked about (an off-session `authentication_required`):
// the e-mailed link opens a page whose Stripe.js confirms that same PaymentIntent with 3-D Secure, and the page's
// post tells the subscription's workflow once Stripe says it succeeded (the provider's event says it too; the
// workflow pays the open renewal once, whichever arrives first). Provider reads are bounded per link
// (RENEWAL_CONFIRMATION_READS_MAX) and made only for a link of this store whose renewal still waits.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Database } from '../store/database';
import type { StoreDoc } from '../store/collections';
import type { RenewalPayment, RenewalPaymentReader } from '../adapters/provider/stripe/web';
import { findOrder, type OrderDoc } from '../store/orders';
import { findSubscription, type SubscriptionDoc } from '../store/subscriptions';
import { findRenewalConfirmation, takeRenewalConfirmationRead, type RenewalConfirmationDoc } from '../store/renewal-confirmations';
import { subscriptionWorkflowId } from '../workflows/subscription/messages';
import { deliverProviderNotice } from './provider/notices';

export interface RenewalConfirmationDeps {
  db: Database;
  temporal: Client;
  /** Stripe's reader of the renewal's intent; null without a Stripe connection (nothing to confirm then). */
  readRenewalPayment: RenewalPaymentReader | null;
}

interface OpenedLink {
  link: RenewalConfirmationDoc;
  sub: SubscriptionDoc;
  order: OrderDoc;
}

/**
 * What the page shows: `open` (Stripe.js confirms with the client secret), `confirmed` (paid at Stripe, or the
 * order already paid), `closed` (the renewal no longer waits for this payment), `spent` (the link's reads are used up).
 */
export type RenewalConfirmationView = OpenedLink &
  ({ state: 'open'; clientSecret: string; paymentMethodId: string } | { state: 'confirmed' | 'closed' | 'spent' });

/** This store's link for the token, with its subscription and renewal order; null for any other. */
async function openLink(db: Database, store: StoreDoc, token: string): Promise<OpenedLink | null> {
  const link = await findRenewalConfirmation(db, token);
  if (!link || link.store_id !== store._id) return null;
  const [sub, order] = await Promise.all([findSubscription(db, store._id, link.subscription_id), findOrder(db, store._id, link.order_id)]);
  return sub && order ? { link, sub, order } : null;
}

/** The subscription still waits for this very payment (past_due, the attempt the bank asked about). */
const stillWaiting = ({ sub, link }: OpenedLink) =>
  sub.status === 'past_due' && sub.past_due_details?.authentication?.transaction_id === link.transaction_id;

/** One bounded read of the renewal's intent at Stripe: `spent` past the link's bound, null when unknown or another store's. */
async function readPayment(deps: RenewalConfirmationDeps, store: StoreDoc, opened: OpenedLink): Promise<RenewalPayment | 'spent' | null> {
  if (!deps.readRenewalPayment) return null;
  if (!(await takeRenewalConfirmationRead(deps.db, opened.link._id))) return 'spent';
  const payment = await deps.readRenewalPayment(opened.link.transaction_id, store.stripe_account ?? null);
  return payment && payment.storeId === store._id ? payment : null;
}

/** The confirmation page's state for the token, or null when it is no link of this store. */
export async function renewalConfirmationView(
  deps: RenewalConfirmationDeps,
  store: StoreDoc,
  token: string,
): Promise<RenewalConfirmationView | null> {
  const opened = await openLink(deps.db, store, token);
  if (!opened) return null;
  if (opened.order.status === 'paid') return { ...opened, state: 'confirmed' };
  if (!stillWaiting(opened)) return { ...opened, state: 'closed' };
  const payment = await readPayment(deps, store, opened);
  if (payment === 'spent') return { ...opened, state: 'spent' };
  if (payment?.status === 'succeeded') return { ...opened, state: 'confirmed' };
  if (!payment?.clientSecret || !payment.paymentMethodId) return { ...opened, state: 'closed' };
  return { ...opened, state: 'open', clientSecret: payment.clientSecret, paymentMethodId: payment.paymentMethodId };
}

/**
 * What the page's Stripe.js completes with: the intent is read at Stripe and, once it succeeded, the subscription's
 * workflow gets the provider's paid notice (the same the event brings). `not_confirmed`: the bank's step failed or
 * was left; null when it is no link of this store.
 */
export async function confirmRenewalPayment(
  deps: RenewalConfirmationDeps,
  store: StoreDoc,
  token: string,
): Promise<'confirmed' | 'not_confirmed' | 'closed' | 'spent' | null> {
  const opened = await openLink(deps.db, store, token);
  if (!opened) return null;
  if (opened.order.status === 'paid') return 'confirmed';
  if (!stillWaiting(opened)) return 'closed';
  const payment = await readPayment(deps, store, opened);
  if (payment === 'spent') return 'spent';
  if (payment?.status !== 'succeeded') return payment ? 'not_confirmed' : 'closed';
  const notice = {
    transactionId: opened.link.transaction_id,
    status: 'paid' as const,
    code: null,
    message: null,
    notifyRef: subscriptionWorkflowId(opened.sub._id),
    settledAt: Math.floor(Date.now() / 1000),
  };
  try {
    await deliverProviderNotice(deps, notice);
  } catch (error) {
    // A subscription whose workflow is gone has nothing waiting (the provider's event is answered the same way).
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
  return 'confirmed';
}
