// Checkout sessions from the API's side: create (validate against the offer, store and catalog,
// write the session, start its workflow), expire (through the workflow's update), and the hosted
// page's payment: the buyer's customer is found or created, the session workflow holds the session
// for the attempt, the card goes to the provider adapter only (in memory), and the outcome (without
// card data) goes back to the workflow, which applies it and answers.
import type { Db } from 'mongodb';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApiError, invalid, missing, notFound } from '../domain/errors';
import { newId, randomBase62 } from '../domain/ids';
import { encodeMetadata, normalizeMetadata } from '../domain/metadata';
import { normalizeEmail } from '../domain/customers';
import {
  cardDigits,
  chargeAmounts,
  checkCurrency,
  checkInstallments,
  checkoutBase,
  checkPack,
  effectiveStatus,
  modeOfOffer,
  priceIn,
  resolveExpiresAt,
  sessionAmountTotal,
  validateRedirectUrl,
  REDIRECT_DELAY_DEFAULT,
} from '../domain/checkout';
import type { DocumentType } from '../domain/documents';
import { collections, type StoreDoc } from './store/collections';
import { findOfferByIdOrSlug } from './store/offers';
import { findCustomer } from './store/customers';
import { findStore } from './store/stores';
import {
  deleteCheckoutSession,
  findCheckoutSession,
  insertCheckoutSession,
  type CheckoutSessionDoc,
  type CheckoutSessionObject,
} from './store/checkout-sessions';
import { createCustomer } from './customers';
import type { PaymentProvider, ProviderNotice, SettlementStatus } from './provider/types';
import { chargesAtCheckout } from './checkout-activities';
import {
  beginPaymentUpdate,
  CHECKOUT_SESSION_WORKFLOW,
  checkoutSessionWorkflowId,
  CUSTOMER_ID_ATTRIBUTE,
  expireUpdate,
  NOT_OPEN_FAILURE,
  providerSettledSignal,
  recordPaymentResultUpdate,
  STORE_ID_ATTRIBUTE,
  type CheckoutWorkflowInput,
  type PaymentAttemptOutcome,
  type PaymentResultInput,
} from '../workflows/checkout-session-messages';

export interface CheckoutDeps {
  db: Db;
  provider: PaymentProvider;
  temporal: Client | null;
  taskQueue: string;
  /** {checkout_url}: base of session URLs when the store has no custom domain. */
  checkoutUrl: string;
  /** Accept http://localhost redirect URLs. */
  development: boolean;
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

function temporalOf(deps: { temporal: Client | null }): Client {
  if (!deps.temporal) throw new Error('checkout sessions need a Temporal client');
  return deps.temporal;
}

function emptyToUndefined<T>(value: T | null | undefined): T | undefined {
  return value === null || value === undefined || (value as unknown) === '' ? undefined : value;
}

export async function createCheckoutSession(
  deps: CheckoutDeps,
  store: StoreDoc,
  body: CreateCheckoutSessionInput,
  now = Date.now(),
): Promise<CheckoutSessionDoc> {
  const nowSeconds = Math.floor(now / 1000);
  const item = body.line_items?.[0];
  const offerRef = emptyToUndefined(body.offer) ?? emptyToUndefined(item?.price);
  const offerParam = emptyToUndefined(body.offer) !== undefined ? 'offer' : 'line_items[0].price';
  if (offerRef === undefined) throw missing('offer', 'Missing required param: offer (or line_items[0][price]).');

  // Parameters that need no lookup first, so a malformed request costs nothing.
  const successUrl = emptyToUndefined(body.success_url);
  const cancelUrl = emptyToUndefined(body.cancel_url);
  if (successUrl !== undefined) validateRedirectUrl('success_url', successUrl, deps.development);
  if (cancelUrl !== undefined) validateRedirectUrl('cancel_url', cancelUrl, deps.development);
  const expiresAt = resolveExpiresAt(emptyToUndefined(body.expires_at), nowSeconds);
  const metadata = normalizeMetadata(body.metadata, 'metadata');
  const subscriptionMetadataInput = body.subscription_data?.metadata;
  const subscriptionMetadata =
    subscriptionMetadataInput === undefined || subscriptionMetadataInput === null
      ? null
      : normalizeMetadata(subscriptionMetadataInput, 'subscription_data.metadata');
  const customerName = emptyToUndefined(body.customer_name)?.trim();
  if (customerName !== undefined && (customerName.length < 2 || customerName.length > 120)) {
    throw invalid('customer_name', 'customer_name must be 2 to 120 characters long.');
  }
  const customerEmail = emptyToUndefined(body.customer_email);
  const normalizedEmail = customerEmail !== undefined ? normalizeEmail(customerEmail, 'customer_email') : null;

  if (store.plan_overdue) {
    throw new ApiError('selling_blocked', "Selling is blocked for this store until its plan's overdue payment is settled.");
  }

  const { db } = deps;
  const customerRef = emptyToUndefined(body.customer);
  const couponCode = emptyToUndefined(body.discounts?.[0]?.coupon);
  if (body.discounts && body.discounts.length > 0 && couponCode === undefined) throw missing('discounts[0].coupon');
  // Independent lookups in parallel; their errors are still reported in the order below.
  const [offer, customer, foundCoupon] = await Promise.all([
    findOfferByIdOrSlug(db, store._id, offerRef),
    customerRef !== undefined ? findCustomer(db, store._id, customerRef) : null,
    couponCode !== undefined ? collections(db).coupons.findOne({ store_id: store._id, code_lower: couponCode.trim().toLowerCase() }) : null,
  ]);
  if (!offer) throw notFound('offer', offerRef, offerParam);
  const product = await collections(db).products.findOne({ _id: offer.product_id, store_id: store._id });
  if (!store.active) throw new ApiError('offer_unavailable', 'The store cannot sell right now.', { param: offerParam });
  if (!offer.active) throw new ApiError('offer_unavailable', 'The offer is archived or its checkout link is turned off.', { param: offerParam });
  if (product && !product.active) throw new ApiError('offer_unavailable', "The offer's product is archived.", { param: offerParam });
  if (offer.prices.length === 0) throw new ApiError('offer_unavailable', 'The offer has no price.', { param: offerParam });

  const mode = modeOfOffer(offer.type);
  if (body.mode !== undefined && body.mode !== null && body.mode !== mode) {
    throw new ApiError('mode_mismatch', `The offer is ${offer.type === 'recurring' ? 'recurring' : 'one-off'}: mode must be '${mode}', not '${body.mode}'.`, {
      param: 'mode',
    });
  }
  const currency = emptyToUndefined(body.currency) !== undefined ? checkCurrency(offer.prices, body.currency!) : null;

  let pack: number | null = null;
  if (emptyToUndefined(body.pack) !== undefined) {
    pack = checkPack(offer.packs, body.pack!, 'pack');
  } else if (emptyToUndefined(item?.quantity) !== undefined) {
    // A Stripe-style quantity of 1 on an offer sold without packs means "the offer", not a pack.
    if (!(item!.quantity === 1 && offer.packs.length === 0)) pack = checkPack(offer.packs, item!.quantity!, 'line_items[0].quantity');
  }

  let customerId: string | null = null;
  let email = normalizedEmail;
  let name = customerName ?? null;
  if (customerRef !== undefined) {
    if (!customer) throw notFound('customer', customerRef, 'customer');
    customerId = customer._id;
    email = customer.email;
    name = customer.name;
  }

  let coupon: CheckoutSessionDoc['coupon'] = null;
  if (couponCode !== undefined) {
    if (!foundCoupon || !foundCoupon.active) {
      throw new ApiError('coupon_invalid', `No active coupon '${couponCode}' in this store.`, { param: 'discounts[0].coupon' });
    }
    coupon = { id: foundCoupon._id, code: foundCoupon.code, percent_off: foundCoupon.percent_off, amount_off: foundCoupon.amount_off, currency: foundCoupon.currency };
  }

  const doc: CheckoutSessionDoc = {
    _id: newId('cs', now),
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
    customer: customerId,
    customer_email: email,
    customer_name: name,
    client_reference_id: emptyToUndefined(body.client_reference_id) ?? null,
    metadata: encodeMetadata(metadata),
    subscription_metadata: subscriptionMetadata ? encodeMetadata(subscriptionMetadata) : null,
    coupon,
    success_url: successUrl ?? null,
    cancel_url: cancelUrl ?? null,
    redirect_delay: body.redirect_delay ?? REDIRECT_DELAY_DEFAULT,
    locale: body.locale ?? null,
    order: null,
    subscription: null,
    expires_at: expiresAt,
    completed_at: null,
    checkout_base: checkoutBase(store, deps.checkoutUrl),
    store_name: store.name,
    payment: null,
    last_error: null,
    livemode: true,
    created: nowSeconds,
  };

  const input: CheckoutWorkflowInput = { storeId: store._id, sessionId: doc._id, expiresAt, recurring: offer.type === 'recurring' };
  const workflowId = checkoutSessionWorkflowId(doc._id);
  // The workflow reads the session only when it is paid or due, so both writes go out together.
  const [inserted, started] = await Promise.allSettled([
    insertCheckoutSession(db, doc),
    temporalOf(deps).workflow.start(CHECKOUT_SESSION_WORKFLOW, {
      taskQueue: deps.taskQueue,
      workflowId,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: STORE_ID_ATTRIBUTE, value: store._id },
        ...(customerId ? [{ key: CUSTOMER_ID_ATTRIBUTE, value: customerId }] : []),
      ],
    }),
  ]);
  if (inserted.status === 'rejected' || started.status === 'rejected') {
    // Half a session is none: without its workflow it could never expire or be paid, and a
    // workflow without its document has nothing to sell. Take back whichever half was made.
    if (inserted.status === 'fulfilled') await deleteCheckoutSession(db, store._id, doc._id).catch(() => undefined);
    if (started.status === 'fulfilled') {
      await temporalOf(deps).workflow.getHandle(workflowId).terminate('checkout session was not stored').catch(() => undefined);
    }
    throw inserted.status === 'rejected' ? inserted.reason : (started as PromiseRejectedResult).reason;
  }
  return doc;
}

function notOpenError(status: string): ApiError {
  return new ApiError('checkout_session_not_open', `This checkout session is ${status}; only open sessions can be expired.`, { param: 'id' });
}

function isNotOpenFailure(error: unknown): boolean {
  if (!(error instanceof WorkflowUpdateFailedError)) return false;
  const cause = error.cause as { type?: string } | undefined;
  return cause?.type === NOT_OPEN_FAILURE;
}

/** POST expire: through the session workflow, so it serializes with a payment in flight. */
export async function expireCheckoutSession(deps: CheckoutDeps, store: StoreDoc, id: string): Promise<CheckoutSessionObject> {
  const doc = await findCheckoutSession(deps.db, store._id, id);
  if (!doc) throw notFound('checkout session', id);
  if (doc.status !== 'open') throw notOpenError(doc.status);
  try {
    return await temporalOf(deps).workflow.getHandle(checkoutSessionWorkflowId(id)).executeUpdate(expireUpdate);
  } catch (error) {
    // Refused, or the workflow closed meanwhile: the stored status says which.
    const current = await findCheckoutSession(deps.db, store._id, id);
    if (isNotOpenFailure(error) || (current && current.status !== 'open')) throw notOpenError(current?.status ?? 'closed');
    throw error;
  }
}

/** A buyer opened an overdue session: the workflow marks it expired (its timer may not have fired yet). */
export async function requestOverdueExpiry(deps: { temporal: Client | null }, sessionId: string): Promise<void> {
  if (!deps.temporal) return;
  await deps.temporal.workflow
    .getHandle(checkoutSessionWorkflowId(sessionId))
    .executeUpdate(expireUpdate)
    .then(
      () => undefined,
      () => undefined,
    );
}

export interface HostedPaymentInput {
  method: 'card' | 'pix';
  email?: string | null;
  name?: string | null;
  phone?: string | null;
  document_type?: string | null;
  document_number?: string | null;
  currency?: string | null;
  installments?: number | null;
  /** Only ever in memory: handed to the provider adapter and dropped. */
  card?: { number: string; exp_month?: number; exp_year?: number; cvc?: string } | null;
}

export type HostedPaymentResult =
  | { kind: 'done' }
  | { kind: 'closed' }
  | { kind: 'error'; code: string; message: string; field: string | null };

function fieldError(error: unknown): HostedPaymentResult {
  if (error instanceof ApiError) return { kind: 'error', code: error.code, message: error.message, field: error.param };
  throw error;
}

/** A few quick retries for a call that must get through (Temporal briefly unreachable). */
async function withRetries<T>(fn: () => Promise<T>, attempts = 4): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (attempt >= attempts || error instanceof WorkflowUpdateFailedError) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
    }
  }
}

/** The hosted page's pay button: see the module header. */
export async function payCheckoutSession(
  deps: CheckoutDeps,
  session: CheckoutSessionDoc,
  input: HostedPaymentInput,
  now = Date.now(),
): Promise<HostedPaymentResult> {
  if (effectiveStatus(session, Math.floor(now / 1000)) !== 'open') return { kind: 'closed' };
  const trial = !chargesAtCheckout(session);
  if (input.method === 'pix' && trial) return { kind: 'error', code: 'method_unavailable', message: 'PIX is not available for this offer.', field: 'method' };

  const store = await findStore(deps.db, session.store_id);
  if (!store) return { kind: 'closed' };

  // What is charged: the session's currency, else the buyer's choice among the offer's prices.
  let price;
  try {
    const currency = session.currency ?? (input.currency ? checkCurrency(session.offer.prices, input.currency) : null);
    price = priceIn(session.offer.prices, currency);
  } catch (error) {
    return fieldError(error);
  }
  if (!price) return { kind: 'error', code: 'currency_unsupported', message: 'This currency is not available.', field: 'currency' };
  const amounts = chargeAmounts(price, session.pack, session.coupon);

  let installments: number | null = null;
  let cardNumber: string | null = null;
  if (input.method === 'card') {
    try {
      installments = trial ? null : checkInstallments(input.installments ?? 1, session.offer.max_installments);
    } catch (error) {
      return fieldError(error);
    }
    cardNumber = input.card ? cardDigits(input.card.number) : null;
    if (!cardNumber) return { kind: 'error', code: 'invalid_number', message: 'Enter a valid card number.', field: 'card_number' };
  }

  // The buyer: the session's customer, else found or created by e-mail (metadata {}).
  let customerId: string;
  let customerEmail: string;
  let providerCustomerId: string | null = null;
  try {
    if (session.customer) {
      const customer = await findCustomer(deps.db, store._id, session.customer);
      if (!customer) return { kind: 'closed' };
      customerId = customer._id;
      customerEmail = customer.email;
      providerCustomerId = customer.provider_customer_id;
    } else {
      const email = session.customer_email ?? input.email ?? null;
      if (!email) return { kind: 'error', code: 'parameter_missing', message: 'Enter your e-mail address.', field: 'email' };
      const documentType = (input.document_type ?? null) as DocumentType | null;
      const { customer } = await createCustomer(
        deps,
        store,
        {
          email,
          name: input.name ?? null,
          phone: input.phone ?? null,
          document: documentType && input.document_number ? { type: documentType, number: input.document_number } : undefined,
        },
        null,
      );
      customerId = customer._id;
      customerEmail = customer.email;
      providerCustomerId = customer.provider_customer_id;
    }
  } catch (error) {
    return fieldError(error);
  }

  const handle = temporalOf(deps).workflow.getHandle(checkoutSessionWorkflowId(session._id));
  const attemptId = randomBase62(16);
  let begun;
  try {
    begun = await handle.executeUpdate(beginPaymentUpdate, { args: [{ attemptId }], updateId: `begin-${attemptId}` });
  } catch (error) {
    // A closed workflow takes no updates: the session was expired or completed meanwhile.
    const current = await findCheckoutSession(deps.db, session.store_id, session._id);
    if (current && current.status !== 'open') return { kind: 'closed' };
    throw error;
  }
  if (!begun.ok) {
    if (begun.reason === 'in_progress') {
      return { kind: 'error', code: 'payment_in_progress', message: 'A payment for this checkout is already in progress.', field: null };
    }
    if (begun.reason === 'expired') void requestOverdueExpiry(deps, session._id);
    return { kind: 'closed' };
  }

  const idempotencyKey = `checkout:${session._id}:${attemptId}`;
  const notifyRef = checkoutSessionWorkflowId(session._id);
  const recurring = session.offer.type === 'recurring';
  let outcome: PaymentAttemptOutcome;
  let savedCard: PaymentResultInput['savedCard'] = null;
  try {
    if (input.method === 'pix') {
      const pix = await deps.provider.createPix({
        storeId: store._id,
        idempotencyKey,
        amount: amounts.amount_total,
        currency: amounts.currency,
        description: session.offer.name,
        customerId,
        notifyRef,
      });
      outcome =
        pix.status === 'pending'
          ? { status: 'pix_pending', transactionId: pix.transactionId, pixCode: pix.copyPaste, pixExpiresAt: pix.expiresAt }
          : { status: 'declined', code: pix.code, message: pix.message };
    } else if (trial) {
      const saved = await deps.provider.saveCard({ storeId: store._id, customerId, providerCustomerId, card: { ...input.card!, number: cardNumber! } });
      if (saved.ok) {
        outcome = { status: 'approved', transactionId: null };
        savedCard = { id: saved.card.paymentMethodId, brand: saved.card.brand, last4: saved.card.last4, chargeable: saved.card.chargeable };
      } else {
        outcome = { status: 'declined', code: saved.code, message: saved.message };
      }
    } else {
      const charged = await deps.provider.chargeCard({
        storeId: store._id,
        idempotencyKey,
        card: { ...input.card!, number: cardNumber! },
        amount: amounts.amount_total,
        currency: amounts.currency,
        description: session.offer.name,
        installments,
        saveCard: recurring,
        customerId,
        providerCustomerId,
        notifyRef,
      });
      if (charged.card) {
        savedCard = { id: charged.card.paymentMethodId, brand: charged.card.brand, last4: charged.card.last4, chargeable: charged.card.chargeable };
      }
      switch (charged.status) {
        case 'approved':
          outcome = { status: 'approved', transactionId: charged.transactionId };
          break;
        case 'review':
          outcome = { status: 'review', transactionId: charged.transactionId };
          break;
        case 'declined':
          outcome = { status: 'declined', code: charged.code ?? 'declined', message: charged.message };
          break;
        case 'refused':
          outcome = { status: 'declined', code: charged.code, message: charged.message };
          break;
      }
    }
  } catch {
    // Deliberately not logged with its input: the card must not reach any log.
    outcome = { status: 'failed', code: 'provider_unavailable', message: 'The payment provider could not be reached. Nothing was charged; try again.' };
  }

  const result: PaymentResultInput = {
    attemptId,
    orderId: newId('ord'),
    method: input.method,
    outcome,
    amounts,
    installments,
    customerId,
    customerEmail,
    savedCard,
  };
  // The provider has answered: its outcome must reach the workflow. The update id makes a repeat
  // of a call whose answer was lost return the first answer instead of applying it twice.
  let answer;
  try {
    answer = await withRetries(() => handle.executeUpdate(recordPaymentResultUpdate, { args: [result], updateId: `result-${attemptId}` }));
  } catch (error) {
    // Only after the attempt's hold ran out and the session closed: the page shows the session as it is.
    const current = await findCheckoutSession(deps.db, session.store_id, session._id);
    if (current && current.status !== 'open') return { kind: 'closed' };
    throw error;
  }
  if (!answer.applied) return { kind: 'closed' };
  if (outcome.status === 'declined' || outcome.status === 'failed') {
    return { kind: 'error', code: outcome.code, message: outcome.message, field: 'payment' };
  }
  return { kind: 'done' };
}

/** Delivers a provider notice to the workflow waiting for it (its notifyRef is the workflow id). */
export async function deliverProviderNotice(deps: { temporal: Client | null }, notice: ProviderNotice): Promise<boolean> {
  if (!notice.notifyRef || !deps.temporal) return false;
  await deps.temporal.workflow.getHandle(notice.notifyRef).signal(providerSettledSignal, notice);
  return true;
}

/** The test connection's buttons on the hosted page: settle the pending PIX or review now. */
export async function settleFromHostedPage(deps: CheckoutDeps, session: CheckoutSessionDoc, outcome: SettlementStatus): Promise<boolean> {
  if (deps.provider.livemode) return false;
  const transactionId = session.payment?.transaction_id;
  if (session.payment_status !== 'pending' || !transactionId) return false;
  const settled = await deps.provider.settle({ storeId: session.store_id, transactionId, outcome });
  if (!settled.ok) return false;
  return deliverProviderNotice(deps, settled.notice);
}
