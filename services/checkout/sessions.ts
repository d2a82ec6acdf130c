// Checkout sessions from the API's side: create (validate against the offer, store and catalog,
// write the session, start its workflow) and expire (through the workflow's update, so it
// serializes with a payment in flight). The hosted page's payment is in checkout-payments.ts, the
// charge the workflow runs in checkout-attempts.ts.
import type { Database } from '../../store/database';
import type { Client } from '@temporalio/client';
import { ApiError, invalid, missing, notFound } from '../../domain/errors';
import { newId } from '../../domain/ids';
import { encodeMetadata, normalizeMetadata } from '../../domain/metadata';
import { normalizeEmail } from '../../domain/customers';
import {
  checkCurrency,
  checkoutBase,
  checkPack,
  CUSTOMER_NAME_MAX,
  CUSTOMER_NAME_MIN,
  modeOfOffer,
  resolveExpiresAt,
  sessionAmountTotal,
  validateRedirectUrl,
  REDIRECT_DELAY_DEFAULT,
} from '../../domain/checkout';
import type { CouponDoc, CustomerDoc, OfferDoc, ProductDoc, StoreDoc } from '../../store/collections';
import { findCouponByCode, findOfferByIdOrSlug, findProduct } from '../../store/offers';
import { findCustomer } from '../../store/customers';
import { countBusiness } from '../operations/business-metrics';
import { deleteCheckoutSession, findCheckoutSession, insertCheckoutSession, type CheckoutSessionDoc } from '../../store/checkout-sessions';
import { clockNowMs } from '../../store/test-clocks';
import type { CheckoutSessionObject } from '../../resources/checkout-session';
import type { PaymentProvider } from '../../adapters/provider/types';
import type { CheckoutWorkflowInput } from '../../workflows/checkout-session/messages';
import { checkoutSessionClient, isNotOpenRefusal } from './client';
import { releaseClockObject, reserveClockObject } from '../test-clocks';

export interface CheckoutDeps {
  db: Database;
  provider: PaymentProvider;
  /** The test connection beside a real `provider`: a test clock's session pays only there (connectionFor). */
  testProvider?: PaymentProvider | null;
  temporal: Client;
  taskQueue: string;
  /** {checkout_url}: base of session URLs when the store has no custom domain. */
  checkoutUrl: string;
  /** Accept http://localhost redirect URLs. */
  development: boolean;
  /** How long the page waits for a payment's outcome before showing "processing" (default PAY_WAIT_MS). */
  payWaitMs?: number;
  /** How long an expiry waits for a payment in flight before asking the provider (default ATTEMPT_HOLD_MS). */
  attemptHoldMs?: number;
  /** Declined cards after which a session takes PIX only (default MAX_CARD_DECLINES). */
  maxCardDeclines?: number;
}

export interface CreateCheckoutSessionInput {
  offer?: string;
  line_items?: { price?: string; quantity?: number }[];
  pack?: number;
  currency?: string;
  customer?: string;
  customer_email?: string;
  customer_name?: string;
  client_reference_id?: string;
  metadata?: unknown;
  subscription_data?: { metadata?: unknown };
  discounts?: { coupon?: string }[];
  success_url?: string;
  cancel_url?: string;
  redirect_delay?: number;
  expires_at?: number;
  /** One of CHECKOUT_LOCALES (the route's schema checks it). */
  locale?: string;
  mode?: string;
  allow_promotion_codes?: boolean;
}

// An offer's product never changes, so which product to read alongside the offer is remembered
// (by ofr_ id only: a slug can move to another offer). Bounded; a miss costs one sequential read.
const productOfOffer = new Map<string, string>();
function rememberProductOfOffer(offerId: string, productId: string): void {
  if (productOfOffer.size >= 10_000) productOfOffer.clear();
  productOfOffer.set(offerId, productId);
}

function emptyToUndefined<T>(value: T | null | undefined): T | undefined {
  return value === null || value === undefined || (value as unknown) === '' ? undefined : value;
}

/** The request's own parameters, checked before any lookup so a malformed request costs nothing. */
interface SessionRequest {
  offerRef: string;
  offerParam: string;
  successUrl: string | undefined;
  cancelUrl: string | undefined;
  /** As sent: checked against the session's "now", its customer's test clock's when it has one. */
  requestedExpiresAt: number | undefined;
  metadata: ReturnType<typeof normalizeMetadata>;
  subscriptionMetadata: ReturnType<typeof normalizeMetadata> | null;
  customerName: string | undefined;
  normalizedEmail: string | null;
  customerRef: string | undefined;
  couponCode: string | undefined;
}

/** What the lookups found: the offer (sellable), its product, and the customer and coupon asked for. */
interface Offer {
  offer: OfferDoc;
  product: ProductDoc | null;
  customer: CustomerDoc | null;
  foundCoupon: CouponDoc | null;
}

/** When the session is made: real time for its id, its customer's test clock's (if any) for its dates. */
interface SessionTime {
  realMs: number;
  nowMs: number;
  testClock: string | null;
  expiresAt: number;
}

/** What the session sells: its mode, currency (null: the buyer chooses) and pack. */
interface PriceChoice {
  mode: ReturnType<typeof modeOfOffer>;
  currency: string | null;
  pack: number | null;
}

export async function createCheckoutSession(
  deps: CheckoutDeps,
  store: StoreDoc,
  body: CreateCheckoutSessionInput,
  now = Date.now(),
): Promise<CheckoutSessionDoc> {
  const request = readRequest(deps, body, Math.floor(now / 1000));
  if (store.plan_overdue) {
    throw new ApiError('selling_blocked', "Selling is blocked for this store until its plan's overdue payment is settled.");
  }
  if (body.discounts && body.discounts.length > 0 && request.couponCode === undefined) throw missing('discounts[0].coupon');
  const found = await validateOffer(deps.db, store, request);
  const time = await sessionTime(deps.db, store._id, request, found.customer, now);
  const price = priceFor(body, found.offer);
  const doc = sessionDocument(deps, store, body, request, found, price, time);
  await writeClockBounded(deps, store, doc, found.offer);
  return doc;
}

/** A session on a test clock takes one of the clock's session slots (400 test_clock_limit when full), given back if it is not made. */
async function writeClockBounded(deps: CheckoutDeps, store: StoreDoc, doc: CheckoutSessionDoc, offer: OfferDoc): Promise<void> {
  const clock = doc.test_clock;
  if (!clock) return writeSession(deps, store, doc, offer);
  await reserveClockObject(deps.db, store._id, clock, 'checkout_sessions', 'customer');
  await writeSession(deps, store, doc, offer).catch(async (error: unknown) => {
    await releaseClockObject(deps.db, store._id, clock, 'checkout_sessions');
    throw error;
  });
}

function readRequest(deps: CheckoutDeps, body: CreateCheckoutSessionInput, nowSeconds: number): SessionRequest {
  const offerRef = emptyToUndefined(body.offer) ?? emptyToUndefined(body.line_items?.[0]?.price);
  // line_items[0][price] is the offer under another name: its errors name `offer`, as the spec's do.
  const offerParam = 'offer';
  if (offerRef === undefined) throw missing('offer', 'Missing required param: offer (or line_items[0][price]).');
  const successUrl = emptyToUndefined(body.success_url);
  const cancelUrl = emptyToUndefined(body.cancel_url);
  if (successUrl !== undefined) validateRedirectUrl('success_url', successUrl, deps.development);
  if (cancelUrl !== undefined) validateRedirectUrl('cancel_url', cancelUrl, deps.development);
  const requestedExpiresAt = emptyToUndefined(body.expires_at);
  const customerRef = emptyToUndefined(body.customer);
  // Without a customer there is no test clock: a bad deadline is refused before any lookup.
  if (customerRef === undefined) resolveExpiresAt(requestedExpiresAt, nowSeconds);
  const metadata = normalizeMetadata(body.metadata, 'metadata');
  const subscriptionMetadataInput = body.subscription_data?.metadata;
  const subscriptionMetadata =
    subscriptionMetadataInput === undefined || subscriptionMetadataInput === null
      ? null
      : normalizeMetadata(subscriptionMetadataInput, 'subscription_data.metadata');
  const customerName = emptyToUndefined(body.customer_name)?.trim();
  if (customerName !== undefined && (customerName.length < CUSTOMER_NAME_MIN || customerName.length > CUSTOMER_NAME_MAX)) {
    throw invalid('customer_name', `customer_name must be ${CUSTOMER_NAME_MIN} to ${CUSTOMER_NAME_MAX} characters long.`);
  }
  const customerEmail = emptyToUndefined(body.customer_email);
  const normalizedEmail = customerEmail !== undefined ? normalizeEmail(customerEmail, 'customer_email') : null;
  const couponCode = emptyToUndefined(body.discounts?.[0]?.coupon);
  return {
    offerRef,
    offerParam,
    successUrl,
    cancelUrl,
    requestedExpiresAt,
    metadata,
    subscriptionMetadata,
    customerName,
    normalizedEmail,
    customerRef,
    couponCode,
  };
}

/**
 * Independent lookups in parallel (the product too, once this offer's product is known); their
 * errors are still reported in order: the offer, then whether the store, offer and product can sell.
 */
async function validateOffer(db: Database, store: StoreDoc, request: SessionRequest): Promise<Offer> {
  const { offerRef, offerParam, customerRef, couponCode } = request;
  const knownProductId = productOfOffer.get(offerRef);
  const [offer, customer, foundCoupon, productGuess] = await Promise.all([
    findOfferByIdOrSlug(db, store._id, offerRef),
    customerRef !== undefined ? findCustomer(db, store._id, customerRef) : null,
    couponCode !== undefined ? findCouponByCode(db, store._id, couponCode) : null,
    knownProductId ? findProduct(db, store._id, knownProductId) : null,
  ]);
  if (!offer) throw notFound('offer', offerRef, offerParam);
  const product = productGuess && productGuess._id === offer.product_id ? productGuess : await findProduct(db, store._id, offer.product_id);
  rememberProductOfOffer(offer._id, offer.product_id);
  if (!store.active) throw new ApiError('offer_unavailable', 'The store cannot sell right now.', { param: offerParam });
  if (!offer.active) throw new ApiError('offer_unavailable', 'The offer is archived or its checkout link is turned off.', { param: offerParam });
  if (product && !product.active) throw new ApiError('offer_unavailable', "The offer's product is archived.", { param: offerParam });
  if (offer.prices.length === 0) throw new ApiError('offer_unavailable', 'The offer has no price.', { param: offerParam });
  return { offer, product, customer, foundCoupon };
}

function priceFor(body: CreateCheckoutSessionInput, offer: OfferDoc): PriceChoice {
  const mode = modeOfOffer(offer.type);
  if (body.mode !== undefined && body.mode !== null && body.mode !== mode) {
    throw new ApiError(
      'mode_mismatch',
      `The offer is ${offer.type === 'recurring' ? 'recurring' : 'one-off'}: mode must be '${mode}', not '${body.mode}'.`,
      {
        param: 'mode',
      },
    );
  }
  const currency = emptyToUndefined(body.currency) !== undefined ? checkCurrency(offer.prices, body.currency!) : null;
  return { mode, currency, pack: packFor(body, offer) };
}

/**
 * The line item is the offer's alias: its quantity is the pack, checked exactly as `pack` is (quantity 1
 * on an offer without packs is pack_unavailable, as pack 1 is), also beside `offer` when the item names no
 * price. `pack` takes precedence; an item naming another offer than `offer` is ignored as a whole.
 */
function packFor(body: CreateCheckoutSessionInput, offer: OfferDoc): number | null {
  const item = body.line_items?.[0];
  const itemPrice = emptyToUndefined(item?.price);
  const itemIsThisOffer =
    emptyToUndefined(body.offer) === undefined || itemPrice === undefined || itemPrice === offer._id || itemPrice === offer.slug;
  if (emptyToUndefined(body.pack) !== undefined) return checkPack(offer.packs, body.pack!, 'pack');
  if (!itemIsThisOffer || emptyToUndefined(item?.quantity) === undefined) return null;
  return checkPack(offer.packs, item!.quantity!, 'line_items[0].quantity');
}

/** The session's time and deadline; the clock is read only for a customer attached to one. */
async function sessionTime(
  db: Database,
  storeId: string,
  request: SessionRequest,
  customer: CustomerDoc | null,
  realMs: number,
): Promise<SessionTime> {
  const testClock = customer?.test_clock ?? null;
  const nowMs = testClock ? await clockNowMs(db, storeId, testClock) : realMs;
  return { realMs, nowMs, testClock, expiresAt: resolveExpiresAt(request.requestedExpiresAt, Math.floor(nowMs / 1000)) };
}

/** The session's buyer: the customer sent (who must exist), else the e-mail and name sent. */
function buyerFor(request: SessionRequest, customer: CustomerDoc | null): { customerId: string | null; email: string | null; name: string | null } {
  if (request.customerRef === undefined) return { customerId: null, email: request.normalizedEmail, name: request.customerName ?? null };
  if (!customer) throw notFound('customer', request.customerRef, 'customer');
  return { customerId: customer._id, email: customer.email, name: customer.name };
}

function couponFor(couponCode: string | undefined, foundCoupon: CouponDoc | null): CheckoutSessionDoc['coupon'] {
  if (couponCode === undefined) return null;
  if (!foundCoupon || !foundCoupon.active) {
    throw new ApiError('coupon_invalid', `No active coupon '${couponCode}' in this store.`, { param: 'discounts[0].coupon' });
  }
  return {
    id: foundCoupon._id,
    code: foundCoupon.code,
    percent_off: foundCoupon.percent_off,
    amount_off: foundCoupon.amount_off,
    currency: foundCoupon.currency,
  };
}

function sessionDocument(
  deps: CheckoutDeps,
  store: StoreDoc,
  body: CreateCheckoutSessionInput,
  request: SessionRequest,
  { offer, product, customer, foundCoupon }: Offer,
  { mode, currency, pack }: PriceChoice,
  time: SessionTime,
): CheckoutSessionDoc {
  const buyer = buyerFor(request, customer);
  const coupon = couponFor(request.couponCode, foundCoupon);
  return {
    // Ids sort by real creation, even when the dates follow a test clock.
    _id: newId('cs', time.realMs),
    store_id: store._id,
    status: 'open',
    payment_status: 'unpaid',
    mode,
    offer: {
      id: offer._id,
      name: offer.name,
      type: offer.type,
      product_id: offer.product_id,
      product_name: product?.name ?? null,
      prices: offer.prices,
      packs: offer.packs,
      max_installments: offer.max_installments,
      trial_days: offer.trial_days,
      billing_cycle: offer.billing_cycle,
    },
    pack,
    currency,
    amount_total: sessionAmountTotal(offer.prices, currency, pack),
    customer: buyer.customerId,
    customer_email: buyer.email,
    ...(buyer.email === null ? { email_from_page: true } : {}),
    customer_name: buyer.name,
    client_reference_id: emptyToUndefined(body.client_reference_id) ?? null,
    metadata: encodeMetadata(request.metadata),
    subscription_metadata: request.subscriptionMetadata ? encodeMetadata(request.subscriptionMetadata) : null,
    coupon,
    success_url: request.successUrl ?? null,
    // "The session's success_url takes precedence over ... the offer's and the store's default."
    fallback_success_url: offer.success_url ?? store.default_success_url ?? null,
    files: product?.files ?? [],
    cancel_url: request.cancelUrl ?? null,
    redirect_delay: body.redirect_delay ?? REDIRECT_DELAY_DEFAULT,
    locale: body.locale ?? null,
    order: null,
    subscription: null,
    expires_at: time.expiresAt,
    completed_at: null,
    checkout_base: checkoutBase(store, deps.checkoutUrl),
    store_name: store.name,
    payment: null,
    last_error: null,
    ...(time.testClock ? { test_clock: time.testClock } : {}),
    livemode: true,
    created: Math.floor(time.nowMs / 1000),
  };
}

/** The session and its workflow: the workflow reads the session only when it is paid or due, so both writes go out together. */
async function writeSession(deps: CheckoutDeps, store: StoreDoc, doc: CheckoutSessionDoc, offer: OfferDoc): Promise<void> {
  const input: CheckoutWorkflowInput = { storeId: store._id, sessionId: doc._id, expiresAt: doc.expires_at, recurring: offer.type === 'recurring' };
  if (deps.attemptHoldMs !== undefined) input.attemptHoldMs = deps.attemptHoldMs;
  if (deps.maxCardDeclines !== undefined) input.maxCardDeclines = deps.maxCardDeclines;
  if (doc.test_clock) Object.assign(input, { testClock: doc.test_clock, testClockNowMs: doc.created * 1000 });
  const sessions = checkoutSessionClient(deps.temporal, deps.taskQueue);
  const [inserted, started] = await Promise.allSettled([insertCheckoutSession(deps.db, doc), sessions.start(input, doc)]);
  if (inserted.status === 'fulfilled' && started.status === 'fulfilled') return countBusiness('checkoutSessions', 'open');
  // Half a session is none: without its workflow it could never expire or be paid, and a
  // workflow without its document has nothing to sell. Take back whichever half was made.
  if (inserted.status === 'fulfilled') await deleteCheckoutSession(deps.db, store._id, doc._id).catch(() => undefined);
  if (started.status === 'fulfilled') await sessions.terminate(doc._id, 'checkout session was not stored');
  throw inserted.status === 'rejected' ? inserted.reason : (started as PromiseRejectedResult).reason;
}

function notOpenError(status: string): ApiError {
  return new ApiError('checkout_session_not_open', `This checkout session is ${status}; only open sessions can be expired.`, { param: 'id' });
}

/** POST expire: through the session workflow, so it serializes with a payment in flight. */
export async function expireCheckoutSession(deps: CheckoutDeps, store: StoreDoc, id: string): Promise<CheckoutSessionObject> {
  const doc = await findCheckoutSession(deps.db, store._id, id);
  if (!doc) throw notFound('checkout session', id);
  if (doc.status !== 'open') throw notOpenError(doc.status);
  try {
    return await checkoutSessionClient(deps.temporal, deps.taskQueue).expire(id);
  } catch (error) {
    // Refused, or the workflow closed meanwhile: the stored status says which.
    const current = await findCheckoutSession(deps.db, store._id, id);
    if (isNotOpenRefusal(error) || (current && current.status !== 'open')) throw notOpenError(current?.status ?? 'closed');
    throw error;
  }
}

/** A buyer opened an overdue session: the workflow marks it expired (its timer may not have fired yet). */
export async function requestOverdueExpiry(deps: { temporal: Client; taskQueue: string }, sessionId: string): Promise<void> {
  await checkoutSessionClient(deps.temporal, deps.taskQueue).requestExpiry(sessionId);
}
