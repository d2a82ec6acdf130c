// Checkout sessions: the document and the conditional single-document writes the
// session workflow makes (open -> complete, open -> expired, pending -> paid/unpaid), so a retried
// or replayed activity is harmless.
import type { Db } from 'mongodb';
import type { StoredMetadata } from '../domain/metadata';
import type { PaymentStatus, SessionMode, SessionStatus } from '../domain/checkout';
import type { OfferPrice, ProductFile } from './collections';
import { definedFields, findPage, NEWEST_FIRST, type PageResult, type PageWindow } from './pagination';

/** What the session keeps of its offer at creation: the page renders and charges from it. */
export interface OfferSnapshot {
  id: string;
  name: string;
  type: 'one_off' | 'recurring';
  product_id: string;
  product_name: string | null;
  prices: OfferPrice[];
  packs: number[];
  max_installments: number | null;
  trial_days: number | null;
  billing_cycle: string | null;
}

export interface CouponSnapshot {
  id: string;
  code: string;
  percent_off: number | null;
  amount_off: number | null;
  currency: string | null;
}

export interface SessionPayment {
  method: 'card' | 'pix';
  transaction_id: string | null;
  installments: number | null;
  currency: string;
  amount_total: number;
  /** PIX copy-paste code and its deadline (Unix seconds). */
  pix_code: string | null;
  pix_expires_at: number | null;
  /** The PIX QR image URL at the provider (Stripe), read once when the PIX was made; absent on the test connection. */
  pix_image_url?: string | null;
  /** The card kept at the provider for the subscription: pm_ id, brand, last4 only. */
  saved_card: { id: string; brand: string; last4: string; chargeable: boolean } | null;
}

export interface PendingAction {
  transaction_id: string;
  attempt_key: string;
  /** Sealed (`sealed:v1:…`); null until the page's one read of it. */
  client_secret: string | null;
}

export interface CheckoutSessionDoc {
  _id: string;
  store_id: string;
  status: SessionStatus;
  payment_status: PaymentStatus;
  mode: SessionMode;
  offer: OfferSnapshot;
  pack: number | null;
  currency: string | null;
  amount_total: number | null;
  customer: string | null;
  customer_email: string | null;
  /** No e-mail at creation: the visitor types it on the page (buyer e-mails of test purchases go there only if the store opted in). */
  email_from_page?: boolean;
  customer_name: string | null;
  client_reference_id: string | null;
  metadata: StoredMetadata;
  /** subscription_data[metadata] as sent; null when not sent (the subscription gets `metadata`). */
  subscription_metadata: StoredMetadata | null;
  coupon: CouponSnapshot | null;
  success_url: string | null;
  /** The offer's success URL, else the store's default, when the session was created: used when success_url is null. */
  fallback_success_url?: string | null;
  /** The product's downloadable files when the session was created. */
  files?: ProductFile[];
  cancel_url: string | null;
  redirect_delay: number;
  locale: string | null;
  order: string | null;
  subscription: string | null;
  expires_at: number;
  completed_at: number | null;
  /** Hosted checkout base of the store when created (custom domain or {checkout_url}). */
  checkout_base: string;
  store_name: string;
  payment: SessionPayment | null;
  /**
   * A card attempt waiting for the buyer's 3-D Secure (the session stays open and unpaid): its PaymentIntent,
   * and its client secret sealed (SECRETS_KEY) once the page read it from the provider, never in clear.
   * Pages are served from here: a view never asks the provider. Cleared when the attempt lands or the session closes.
   */
  pending_action?: PendingAction | null;
  /** The last declined attempt, shown on the page; cleared by a successful one. */
  last_error: { code: string; message: string } | null;
  /** Too many cards declined (card testing): the page offers PIX only. */
  card_locked?: boolean;
  /** Opened by a buyer through the offer's link (its `checkout_url`), not by the API. */
  origin?: 'offer_link';
  /** The customer's test clock: `created`, `expires_at` and the workflow's deadline are on its time. */
  test_clock?: string | null;
  livemode: boolean;
  created: number;
}

export function checkoutSessionsCollection(db: Db) {
  return db.collection<CheckoutSessionDoc>('checkout_sessions');
}

/**
 * The stored filter matching sessions whose effective status (domain/checkout.ts) is `status`. A session
 * on a test clock is what its status says: its deadline is on the clock's time, which its workflow keeps.
 */
export function effectiveStatusFilter(status: SessionStatus, nowSeconds: number): Record<string, unknown> {
  if (status === 'open') return { status: 'open', $or: [{ expires_at: { $gt: nowSeconds } }, { test_clock: { $type: 'string' } }] };
  if (status === 'expired') return { $or: [{ status: 'expired' }, { status: 'open', expires_at: { $lte: nowSeconds }, test_clock: null }] };
  return { status };
}

/** What GET /v1/checkout/sessions filters by; `status` is the effective one (effectiveStatusFilter). */
export interface CheckoutSessionListFilter {
  customer?: string;
  client_reference_id?: string;
  status?: SessionStatus;
  payment_status?: string;
}

/** A page of the store's checkout sessions, newest first; `nowSeconds` decides which open sessions count as expired. */
export function listCheckoutSessions(
  db: Db,
  storeId: string,
  filter: CheckoutSessionListFilter,
  nowSeconds: number,
  window: PageWindow,
): Promise<PageResult<CheckoutSessionDoc>> {
  const { customer, client_reference_id, status, payment_status } = filter;
  const conditions = {
    ...definedFields({ customer, client_reference_id }),
    ...(status !== undefined ? effectiveStatusFilter(status, nowSeconds) : {}),
    ...definedFields({ payment_status }),
  };
  return findPage(checkoutSessionsCollection(db), { storeId, filter: conditions, order: NEWEST_FIRST, ...window });
}

export async function insertCheckoutSession(db: Db, doc: CheckoutSessionDoc): Promise<void> {
  await checkoutSessionsCollection(db).insertOne(doc);
}

export async function markOfferLinkSession(db: Db, storeId: string, id: string): Promise<void> {
  await checkoutSessionsCollection(db).updateOne({ _id: id, store_id: storeId }, { $set: { origin: 'offer_link' } });
}

export async function deleteCheckoutSession(db: Db, storeId: string, id: string): Promise<void> {
  await checkoutSessionsCollection(db).deleteOne({ _id: id, store_id: storeId });
}

export async function findCheckoutSession(db: Db, storeId: string, id: string): Promise<CheckoutSessionDoc | null> {
  return checkoutSessionsCollection(db).findOne({ _id: id, store_id: storeId });
}

/** The hosted page knows only the id (the URL); the id is unguessable and carries the store. */
export async function findCheckoutSessionForPage(db: Db, id: string): Promise<CheckoutSessionDoc | null> {
  return checkoutSessionsCollection(db).findOne({ _id: id });
}

/** open -> complete (paid or pending); null when the session was no longer open. */
export async function markSessionComplete(
  db: Db,
  storeId: string,
  id: string,
  set: Pick<CheckoutSessionDoc, 'payment_status' | 'customer' | 'customer_email' | 'order' | 'completed_at' | 'payment'>,
): Promise<CheckoutSessionDoc | null> {
  return checkoutSessionsCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId, status: 'open' },
    { $set: { ...set, status: 'complete', last_error: null, pending_action: null } },
    { returnDocument: 'after' },
  );
}

/** open -> expired; null when the session was no longer open. */
export async function markSessionExpired(db: Db, storeId: string, id: string): Promise<CheckoutSessionDoc | null> {
  return checkoutSessionsCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId, status: 'open' },
    { $set: { status: 'expired', pending_action: null } },
    { returnDocument: 'after' },
  );
}

/** complete/pending -> complete/paid or complete/unpaid; null when it was not pending. */
export async function markSessionSettled(db: Db, storeId: string, id: string, paymentStatus: 'paid' | 'unpaid'): Promise<CheckoutSessionDoc | null> {
  return checkoutSessionsCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId, status: 'complete', payment_status: 'pending' },
    { $set: { payment_status: paymentStatus } },
    { returnDocument: 'after' },
  );
}

export async function recordSessionDecline(
  db: Db,
  storeId: string,
  id: string,
  error: { code: string; message: string },
  cardLocked = false,
): Promise<void> {
  const set = cardLocked ? { last_error: error, card_locked: true, pending_action: null } : { last_error: error, pending_action: null };
  await checkoutSessionsCollection(db).updateOne({ _id: id, store_id: storeId, status: 'open' }, { $set: set });
}

/** An open session's card attempt now waits for 3-D Secure (the page shows the bank's step); the last decline is cleared. */
export async function markSessionAction(db: Db, storeId: string, id: string, action: { transaction_id: string; attempt_key: string }): Promise<void> {
  await checkoutSessionsCollection(db).updateOne(
    { _id: id, store_id: storeId, status: 'open' },
    { $set: { pending_action: { ...action, client_secret: null }, last_error: null } },
  );
}

/** The page's one read of the client secret, kept sealed on the action it belongs to (never another attempt's). */
export async function storeActionSecret(db: Db, id: string, transactionId: string, sealedSecret: string): Promise<void> {
  await checkoutSessionsCollection(db).updateOne(
    { _id: id, status: 'open', 'pending_action.transaction_id': transactionId },
    { $set: { 'pending_action.client_secret': sealedSecret } },
  );
}

/** The PIX QR image the page shows, read once when the PIX was made (the page never asks the provider). */
export async function storePixImage(db: Db, id: string, transactionId: string, imageUrl: string): Promise<void> {
  await checkoutSessionsCollection(db).updateOne(
    { _id: id, 'payment.transaction_id': transactionId },
    { $set: { 'payment.pix_image_url': imageUrl } },
  );
}

export async function setSessionSubscription(db: Db, storeId: string, id: string, subscriptionId: string): Promise<void> {
  await checkoutSessionsCollection(db).updateOne({ _id: id, store_id: storeId }, { $set: { subscription: subscriptionId } });
}
