// The buyer e-mails, each sent at most once under its deterministic key (DESIGN principle 3): the
// store's purchase confirmation when an order is paid (checkout purchase, subscription cycle, one-off
// or usage charge), the cancellation e-mail when the store cancels (dashboard, DELETE /v1/subscriptions/{id}),
// and the late-payment refund (a capture given back: of a closed order, or of a closed checkout session).
// Each is recorded in `sent_mail` before and after the SMTP hand-off; a retry finds the record and sends nothing.
import { createHash } from 'node:crypto';
import type { Database } from '../store/database';
import { ApplicationFailure } from '@temporalio/common';
import { PermanentMailError, SMTP_DISABLED, type Mailer, type OutgoingMail } from '../adapters/email/smtp';
import {
  emailLanguage,
  renderAuthenticationRequest,
  renderCancellationEmail,
  renderLateRefundEmail,
  renderPaymentConfirmation,
  renderRefundEmail,
  type PaymentKind,
  type Period,
  type RenderedMail,
} from '../i18n/buyer-emails';
import type { Language } from '../i18n/languages';
import { decodeMetadata } from '../domain/metadata';
import type { CustomerDoc, StoreDoc } from '../store/collections';
import { findCheckoutSession, type CheckoutSessionDoc } from '../store/checkout-sessions';
import { findCustomer } from '../store/customers';
import { findOrder, type OrderDoc } from '../store/orders';
import { findProduct } from '../store/offers';
import { claimSentMail, countSendAttempt, findSentMail, settleSentMail, type SentMailDoc, type SentMailPurpose } from '../store/sent-mail';
import { findStore } from '../store/stores';
import { findSubscription, findSubscriptionOfCheckout, type SubscriptionDoc } from '../store/subscriptions';
import { findUsagePeriod } from '../store/usage';
import { takeHourlyMailSlot } from '../store/mail-quotas';
import { issueRenewalConfirmation } from '../store/renewal-confirmations';
import { portalAddress } from '../domain/checkout';

export interface BuyerEmailDeps {
  db: Database;
  mailer: Mailer;
  /** Sender address; the display name is the store's. */
  mailFrom: string;
  /** Hourly caps (default DEFAULT_BUYER_EMAIL_CAPS). */
  caps?: BuyerEmailCaps;
  /** {portal_url}: the stores' portal addresses, where a renewal's 3-D Secure is confirmed (PORTAL_URL when omitted). */
  portalUrl?: string;
}

/** PORTAL_URL, else PUBLIC_URL's /portal, else the API's default origin's (as api/config.ts reads them). */
export function portalUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  const publicUrl = (env.PUBLIC_URL ?? `http://localhost:${env.PORT ?? 3000}`).replace(/\/$/, '');
  return (env.PORTAL_URL ?? `${publicUrl}/portal`).replace(/\/$/, '');
}

/** E-mails per clock hour: per store, and per recipient address across every store. */
export interface BuyerEmailCaps {
  perStore: number;
  perRecipient: number;
}

export const DEFAULT_BUYER_EMAIL_CAPS: BuyerEmailCaps = { perStore: 500, perRecipient: 10 };

/** BUYER_EMAILS_PER_STORE_HOUR and BUYER_EMAILS_PER_RECIPIENT_HOUR (positive integers), else the defaults. */
export function buyerEmailCapsFrom(env: NodeJS.ProcessEnv): BuyerEmailCaps {
  const read = (name: string, fallback: number) => {
    const value = Number(env[name] ?? '');
    return Number.isInteger(value) && value > 0 ? value : fallback;
  };
  return {
    perStore: read('BUYER_EMAILS_PER_STORE_HOUR', DEFAULT_BUYER_EMAIL_CAPS.perStore),
    perRecipient: read('BUYER_EMAILS_PER_RECIPIENT_HOUR', DEFAULT_BUYER_EMAIL_CAPS.perRecipient),
  };
}

/** sent: accepted by the SMTP server now; already_sent: an earlier try did it (or skipped it); failed: refused for good. */
export type BuyerEmailOutcome = 'sent' | 'already_sent' | 'skipped' | 'failed';

export interface PaymentConfirmationInput {
  storeId: string;
  orderId: string;
  /** The e-mail's key, e.g. `charge/<store>/<key>/payment-confirmation`. */
  key: string;
  /** The period paid for, when the caller knows it (a subscription's new cycle). */
  period?: Period | null;
}

export interface RefundEmailInput {
  storeId: string;
  orderId: string;
  /** What this refund gave back (minor units, the order's currency). */
  amount: number;
  /** The e-mail's key, e.g. `refund/<store>/<refund id>/refund`: one e-mail per refund. */
  key: string;
}

export interface CancellationEmailInput {
  storeId: string;
  subscriptionId: string;
  key: string;
}

export interface AuthenticationRequestInput {
  storeId: string;
  subscriptionId: string;
  /** The renewal order whose payment the bank asked the buyer to confirm. */
  orderId: string;
  key: string;
}

interface BuyerEmail {
  storeId: string;
  key: string;
  purpose: SentMailPurpose;
  subjectId: string;
}

type Draft = { to: string; language: Language; mail: RenderedMail; storeName: string } | { skip: string; to: string | null };

const PAID_STATUSES: readonly OrderDoc['status'][] = ['paid', 'refunded', 'partially_refunded', 'charged_back'];

/** A data problem no retry fixes: the workflow logs it and goes on. Its failure type is the one operators know. */
function missing(what: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`${what} not found`, 'notice_subject_missing');
}

/** `<hash@domain>` from the key: the same e-mail always carries the same Message-ID. */
export function buyerEmailMessageId(key: string, mailFrom: string): string {
  const domain = mailFrom.split('@')[1] || 'localhost';
  // `.notice@` kept: an e-mail retried across an upgrade keeps the Message-ID its first try was sent with.
  return `<${createHash('sha256').update(key).digest('hex').slice(0, 32)}.notice@${domain}>`;
}

/** The store's purchase confirmation for a paid order. */
export function sendPaymentConfirmation(deps: BuyerEmailDeps, input: PaymentConfirmationInput): Promise<BuyerEmailOutcome> {
  const email: BuyerEmail = { storeId: input.storeId, key: input.key, purpose: 'payment_confirmation', subjectId: input.orderId };
  return deliverOnce(deps, email, async () => {
    const store = await storeOrFail(deps.db, input.storeId);
    const order = await findOrder(deps.db, input.storeId, input.orderId);
    if (!order) throw missing(`order ${input.orderId}`);
    return paymentDraft(deps.db, store, order, input.period ?? null);
  });
}

/** The refund e-mail: the buyer told what was given back of an order, once per refund. */
export function sendRefundEmail(deps: BuyerEmailDeps, input: RefundEmailInput): Promise<BuyerEmailOutcome> {
  const email: BuyerEmail = { storeId: input.storeId, key: input.key, purpose: 'refund', subjectId: input.orderId };
  return deliverOnce(deps, email, async () => {
    const store = await storeOrFail(deps.db, input.storeId);
    const order = await findOrder(deps.db, input.storeId, input.orderId);
    if (!order) throw missing(`order ${input.orderId}`);
    return refundDraft(deps.db, store, order, input.amount);
  });
}

/** The cancellation e-mail of a subscription canceled by the store. */
export function sendCancellationEmail(deps: BuyerEmailDeps, input: CancellationEmailInput): Promise<BuyerEmailOutcome> {
  const email: BuyerEmail = { storeId: input.storeId, key: input.key, purpose: 'cancellation', subjectId: input.subscriptionId };
  return deliverOnce(deps, email, async () => {
    const store = await storeOrFail(deps.db, input.storeId);
    const sub = await findSubscription(deps.db, input.storeId, input.subscriptionId);
    if (!sub) throw missing(`subscription ${input.subscriptionId}`);
    return cancellationDraft(deps.db, store, sub);
  });
}

/**
 * The renewal the buyer's bank asked them to confirm (`authentication_required` off session): a link to the
 * store's portal page where they confirm that payment with 3-D Secure. Skipped when that attempt is no longer
 * the one waiting (paid, retried, ended) or the store has no portal to open.
 */
export function sendRenewalAuthenticationRequest(deps: BuyerEmailDeps, input: AuthenticationRequestInput): Promise<BuyerEmailOutcome> {
  const email: BuyerEmail = { storeId: input.storeId, key: input.key, purpose: 'payment_authentication', subjectId: input.orderId };
  return deliverOnce(deps, email, async () => {
    const store = await storeOrFail(deps.db, input.storeId);
    const sub = await findSubscription(deps.db, input.storeId, input.subscriptionId);
    if (!sub) throw missing(`subscription ${input.subscriptionId}`);
    const order = await findOrder(deps.db, input.storeId, input.orderId);
    if (!order) throw missing(`order ${input.orderId}`);
    return authenticationDraft(deps, store, sub, order, input.key);
  });
}

/** A payment captured after its order closed, refunded (give-back workflow): the buyer is told, once. */
export function sendLateRefundEmail(deps: BuyerEmailDeps, input: { storeId: string; orderId: string; key: string }): Promise<BuyerEmailOutcome> {
  const email: BuyerEmail = { storeId: input.storeId, key: input.key, purpose: 'late_payment_refund', subjectId: input.orderId };
  return deliverOnce(deps, email, async () => {
    const store = await storeOrFail(deps.db, input.storeId);
    const order = await findOrder(deps.db, input.storeId, input.orderId);
    if (!order) throw missing(`order ${input.orderId}`);
    return lateRefundDraft(deps.db, store, order);
  });
}

export interface SessionLateRefundEmailInput {
  storeId: string;
  sessionId: string;
  /**
   * The buyer who paid (the attempt's customer, written once its payment was taken): the address is read from
   * their record. Null when the giver does not know them (the give-back workflow): the session's customer, else its customer_email.
   */
  customerId: string | null;
  /** What the attempt took and was given back (minor units). */
  amount: number;
  currency: string;
  /** `checkout-session/<cs_id>/late-payment-refund/<n>` (lateRefundEmailKey): one e-mail per attempt, whoever gave it back. */
  key: string;
}

/**
 * An approval that reached a checkout session already closed (expired, or paid by another attempt) and was
 * given back: no order exists, so the buyer is told from the session and their customer record, once per attempt.
 */
export function sendSessionLateRefundEmail(deps: BuyerEmailDeps, input: SessionLateRefundEmailInput): Promise<BuyerEmailOutcome> {
  const email: BuyerEmail = { storeId: input.storeId, key: input.key, purpose: 'late_payment_refund', subjectId: input.sessionId };
  return deliverOnce(deps, email, async () => {
    const store = await storeOrFail(deps.db, input.storeId);
    const session = await findCheckoutSession(deps.db, input.storeId, input.sessionId);
    if (!session) throw missing(`checkout session ${input.sessionId}`);
    return sessionLateRefundDraft(deps.db, store, session, input);
  });
}

/** As lateRefundDraft, from the session: its offer names the product; a test session's page-typed address gets nothing unless opted in. */
async function sessionLateRefundDraft(
  db: Database,
  store: StoreDoc,
  session: CheckoutSessionDoc,
  input: SessionLateRefundEmailInput,
): Promise<Draft> {
  const customerId = input.customerId ?? session.customer;
  const customer = customerId ? await findCustomer(db, store._id, customerId) : null;
  const to = customer?.email ?? session.customer_email ?? null;
  if (!to) return { skip: 'no_recipient', to };
  if (session.livemode === false && session.email_from_page === true && store.test_buyer_emails !== true) return { skip: 'test_visitor_address', to };
  const language = emailLanguage([session.locale, customer?.locale], store.country);
  const mail = renderLateRefundEmail({
    ...mailFacts(store, customer, language),
    product: session.offer.product_name ?? session.offer.name,
    amount: input.amount,
    currency: input.currency,
    refundedAt: Math.floor(Date.now() / 1000),
    orderId: null,
  });
  return { to, language, mail, storeName: store.name };
}

/** Sent whatever the store's purchase confirmation setting (the buyer's money moved), except to a page visitor's address on a test purchase. */
async function lateRefundDraft(db: Database, store: StoreDoc, order: OrderDoc): Promise<Draft> {
  const customer = order.customer ? await findCustomer(db, store._id, order.customer) : null;
  const to = order.customer_email ?? customer?.email ?? null;
  if (!to) return { skip: 'no_recipient', to };
  if (await visitorAddressOnTestPurchase(db, store, order)) return { skip: 'test_visitor_address', to };
  if (order.status !== 'refunded') return { skip: 'not_refunded', to };
  const language = emailLanguage([await checkoutLocale(db, store._id, order.checkout_session), customer?.locale], store.country);
  const mail = renderLateRefundEmail({
    ...mailFacts(store, customer, language),
    product: await productLine(db, store._id, order, paymentKind(order)),
    amount: order.amount_total,
    currency: order.currency,
    refundedAt: Math.floor(Date.now() / 1000),
    orderId: order._id,
  });
  return { to, language, mail, storeName: store.name };
}

async function storeOrFail(db: Database, storeId: string): Promise<StoreDoc> {
  const store = await findStore(db, storeId);
  if (!store) throw missing(`store ${storeId}`);
  return store;
}

/** Checked before sending and recorded before and after the hand-off, so a retry never sends an e-mail already sent. */
async function deliverOnce(deps: BuyerEmailDeps, email: BuyerEmail, draft: () => Promise<Draft>): Promise<BuyerEmailOutcome> {
  const { db, mailer } = deps;
  const seen = await findSentMail(db, email.storeId, email.key);
  if (seen && seen.status !== 'sending') return 'already_sent';
  const drafted = await draft();
  const skipReason = 'skip' in drafted ? drafted.skip : mailer.target === SMTP_DISABLED ? 'mail_disabled' : null;
  const messageId = buyerEmailMessageId(email.key, deps.mailFrom);
  const record = sentMailDoc(email, drafted, messageId);
  if (skipReason) {
    const stored = await claimSentMail(db, { ...record, status: 'skipped', skipped_reason: skipReason });
    if (stored.status === 'sending') await settleSentMail(db, email.storeId, email.key, { status: 'skipped', skipped_reason: skipReason });
    if (skipReason === 'mail_disabled') console.warn(`buyer e-mail ${email.key}: not sent (SMTP_URL=${SMTP_DISABLED})`);
    return 'skipped';
  }
  const ready = drafted as Exclude<Draft, { skip: string }>;
  const stored = await claimSentMail(db, record);
  if (stored.status !== 'sending') return 'already_sent';
  const capped = await hourlyCapReached(deps, email.storeId, ready.to);
  if (capped) {
    await settleSentMail(db, email.storeId, email.key, { status: 'skipped', skipped_reason: capped });
    console.warn(`buyer e-mail ${email.key}: not sent (${capped})`);
    return 'skipped';
  }
  await countSendAttempt(db, email.storeId, email.key);
  const mail: OutgoingMail = {
    from: { name: ready.storeName, address: deps.mailFrom },
    to: ready.to,
    ...ready.mail,
    messageId,
    language: ready.language,
  };
  try {
    const accepted = await mailer.send(mail);
    await settleSentMail(db, email.storeId, email.key, {
      status: 'sent',
      smtp_response: accepted?.response ?? null,
      sent_at: Math.floor(Date.now() / 1000),
    });
    return 'sent';
  } catch (error) {
    // Anything but a refusal for good (5xx) is retried by the activity: the server may be back later.
    if (!(error instanceof PermanentMailError)) throw error;
    await settleSentMail(db, email.storeId, email.key, { status: 'failed', smtp_response: error.message });
    console.warn(`buyer e-mail ${email.key}: refused by ${mailer.target} (${error.message})`);
    return 'failed';
  }
}

/** The store's or the recipient's e-mails of this hour are spent: the skip reason, else null (a slot of each is taken). */
async function hourlyCapReached(deps: BuyerEmailDeps, storeId: string, to: string): Promise<string | null> {
  const caps = deps.caps ?? DEFAULT_BUYER_EMAIL_CAPS;
  if (!(await takeHourlyMailSlot(deps.db, `store:${storeId}`, caps.perStore))) return 'store_hourly_cap';
  if (!(await takeHourlyMailSlot(deps.db, `to:${to.trim().toLowerCase()}`, caps.perRecipient))) return 'recipient_hourly_cap';
  return null;
}

function sentMailDoc(email: BuyerEmail, drafted: Draft, messageId: string): SentMailDoc {
  const mail = 'mail' in drafted ? drafted : null;
  return {
    _id: email.key,
    store_id: email.storeId,
    purpose: email.purpose,
    subject_id: email.subjectId,
    to: drafted.to,
    language: mail?.language ?? null,
    subject: mail?.mail.subject ?? null,
    message_id: mail ? messageId : null,
    status: 'sending',
    skipped_reason: null,
    smtp_response: null,
    attempts: 0,
    created: Math.floor(Date.now() / 1000),
    sent_at: null,
  };
}

/** The spec's "purchase confirmation e-mail when it is active": a store may turn it off (admin CLI); on unless it did. */
const confirmationsOn = (store: StoreDoc) => store.purchase_confirmation_email !== false;

function paymentKind(order: OrderDoc): PaymentKind {
  if (order.order_type === 'checkout') return 'purchase';
  if (order.order_type === 'renewal') return 'renewal';
  return order.billing_reason === 'usage' ? 'usage' : 'charge';
}

async function paymentDraft(db: Database, store: StoreDoc, order: OrderDoc, knownPeriod: Period | null): Promise<Draft> {
  const customer = order.customer ? await findCustomer(db, store._id, order.customer) : null;
  const to = order.customer_email ?? customer?.email ?? null;
  if (!to) return { skip: 'no_recipient', to };
  if (!confirmationsOn(store)) return { skip: 'store_disabled', to };
  if (await visitorAddressOnTestPurchase(db, store, order)) return { skip: 'test_visitor_address', to };
  if (!PAID_STATUSES.includes(order.status)) return { skip: 'not_paid', to };
  // A free-trial sign-up's order charged nothing: there is no payment to confirm.
  if (order.amount_total === 0) return { skip: 'nothing_charged', to };
  const kind = paymentKind(order);
  const sub = order.subscription ? await findSubscription(db, store._id, order.subscription) : await subscriptionOfCheckout(db, store._id, order);
  const sessionLocale = await checkoutLocale(db, store._id, order.checkout_session ?? sub?.checkout_session ?? null);
  // A checkout's buyer chose the page's language; later e-mails follow the customer's, then that first page's.
  const locales = kind === 'purchase' ? [sessionLocale, customer?.locale] : [customer?.locale, sessionLocale];
  const language = emailLanguage(locales, store.country);
  const product = await productLine(db, store._id, order, kind);
  const mail = renderPaymentConfirmation({
    ...mailFacts(store, customer, language),
    kind,
    product,
    amount: order.amount_total,
    currency: order.currency,
    paidAt: order.paid_at ?? order.created,
    period: knownPeriod ?? (await paidPeriod(db, store._id, order, kind, sub)),
    orderId: order._id,
  });
  return { to, language, mail, storeName: store.name };
}

/**
 * A test purchase (test connection) whose address only the page's visitor typed: anyone could make the
 * platform mail any address through an offer link, so nothing goes there unless the store opted in
 * (admin CLI `stores set <id> --test-buyer-emails true`).
 */
async function visitorAddressOnTestPurchase(db: Database, store: StoreDoc, order: OrderDoc): Promise<boolean> {
  if (order.livemode !== false || store.test_buyer_emails === true) return false;
  const sub = !order.checkout_session && order.subscription ? await findSubscription(db, store._id, order.subscription) : null;
  const sessionId = order.checkout_session ?? sub?.checkout_session ?? null;
  const session = sessionId ? await findCheckoutSession(db, store._id, sessionId) : null;
  return session?.email_from_page === true;
}

async function refundDraft(db: Database, store: StoreDoc, order: OrderDoc, amount: number): Promise<Draft> {
  const customer = order.customer ? await findCustomer(db, store._id, order.customer) : null;
  const to = order.customer_email ?? customer?.email ?? null;
  if (!to) return { skip: 'no_recipient', to };
  if (await visitorAddressOnTestPurchase(db, store, order)) return { skip: 'test_visitor_address', to };
  const kind = paymentKind(order);
  const sub = order.subscription ? await findSubscription(db, store._id, order.subscription) : await subscriptionOfCheckout(db, store._id, order);
  const sessionLocale = await checkoutLocale(db, store._id, order.checkout_session ?? sub?.checkout_session ?? null);
  const locales = kind === 'purchase' ? [sessionLocale, customer?.locale] : [customer?.locale, sessionLocale];
  const language = emailLanguage(locales, store.country);
  const product = await productLine(db, store._id, order, kind);
  const mail = renderRefundEmail({ ...mailFacts(store, customer, language), product, amount, currency: order.currency, orderId: order._id });
  return { to, language, mail, storeName: store.name };
}

/** A subscription's buyer: its customer, the address its e-mails go to, and their language (the customer's, else its checkout's). */
async function subscriptionBuyer(db: Database, store: StoreDoc, sub: SubscriptionDoc) {
  const customer = sub.customer ? await findCustomer(db, store._id, sub.customer) : null;
  const to = sub.customer_email ?? customer?.email ?? null;
  const language = async () => emailLanguage([customer?.locale, await checkoutLocale(db, store._id, sub.checkout_session)], store.country);
  return { customer, to, language };
}

async function cancellationDraft(db: Database, store: StoreDoc, sub: SubscriptionDoc): Promise<Draft> {
  const { customer, to, language: languageOf } = await subscriptionBuyer(db, store, sub);
  if (!to) return { skip: 'no_recipient', to };
  const language = await languageOf();
  const mail = renderCancellationEmail({
    ...mailFacts(store, customer, language),
    product: sub.product.name || sub.offer.name,
    amount: sub.amount,
    currency: sub.currency,
    cycle: sub.billing_cycle,
    customBillingDays: sub.custom_billing_days,
    canceledAt: sub.canceled_at ?? sub.ended_at ?? Math.floor(Date.now() / 1000),
    period: periodOf(sub),
    subscriptionId: sub._id,
  });
  return { to, language, mail, storeName: store.name };
}

async function authenticationDraft(deps: BuyerEmailDeps, store: StoreDoc, sub: SubscriptionDoc, order: OrderDoc, key: string): Promise<Draft> {
  const { db } = deps;
  const { customer, to, language: languageOf } = await subscriptionBuyer(db, store, sub);
  if (!to) return { skip: 'no_recipient', to };
  const asked = sub.status === 'past_due' ? sub.past_due_details?.authentication : null;
  if (!asked || asked.order_id !== order._id) return { skip: 'nothing_to_confirm', to };
  const address = store.portal_enabled ? portalAddress(store, deps.portalUrl ?? portalUrlFromEnv()) : null;
  if (!address) return { skip: 'no_portal', to };
  if (await visitorAddressOnTestPurchase(db, store, order)) return { skip: 'test_visitor_address', to };
  const token = await issueRenewalConfirmation(db, {
    store_id: store._id,
    subscription_id: sub._id,
    customer: sub.customer,
    order_id: order._id,
    transaction_id: asked.transaction_id,
    email_key: key,
  });
  const language = await languageOf();
  const mail = renderAuthenticationRequest({
    ...mailFacts(store, customer, language),
    product: sub.product.name || sub.offer.name,
    amount: order.amount_total,
    currency: order.currency,
    orderId: order._id,
    link: `${address}/payments/${token}`,
  });
  return { to, language, mail, storeName: store.name };
}

function mailFacts(store: StoreDoc, customer: CustomerDoc | null, language: Language) {
  return { language, storeName: store.name, timeZone: store.timezone, customerName: customer?.name ?? null };
}

async function checkoutLocale(db: Database, storeId: string, sessionId: string | null): Promise<string | null> {
  if (!sessionId) return null;
  return (await findCheckoutSession(db, storeId, sessionId))?.locale ?? null;
}

/** A recurring checkout's subscription (created right after its order is paid). */
async function subscriptionOfCheckout(db: Database, storeId: string, order: OrderDoc): Promise<SubscriptionDoc | null> {
  if (order.order_type !== 'checkout' || order.recurrence !== 'scheduled' || !order.checkout_session) return null;
  return findSubscriptionOfCheckout(db, storeId, order.checkout_session);
}

/** The product's name; for a one-off or usage charge, with what was charged when that says more. */
async function productLine(db: Database, storeId: string, order: OrderDoc, kind: PaymentKind): Promise<string> {
  const product = order.product ? await findProduct(db, storeId, order.product) : null;
  const item = order.items[0]?.description ?? null;
  const name = product?.name ?? item ?? order._id;
  if ((kind === 'charge' || kind === 'usage') && item && item !== name && order.items.length === 1) return `${name}: ${item}`;
  return name;
}

function periodOf(sub: SubscriptionDoc | null): Period | null {
  if (!sub || sub.current_period_start === null || sub.current_period_end === null) return null;
  return { start: sub.current_period_start, end: sub.current_period_end };
}

/** What an order paid for: a subscription's period, a usage period, or nothing (a one-time payment). */
async function paidPeriod(db: Database, storeId: string, order: OrderDoc, kind: PaymentKind, sub: SubscriptionDoc | null): Promise<Period | null> {
  if (kind === 'renewal' || (kind === 'purchase' && order.recurrence === 'scheduled')) return periodOf(sub);
  if (kind !== 'usage') return null;
  const periodId = decodeMetadata(order.metadata).usage_period;
  const period = periodId ? await findUsagePeriod(db, storeId, periodId) : null;
  if (!period) return null;
  // A period closed early (threshold, subscription ended) ends when it closed.
  return { start: period.period_start, end: Math.min(period.period_end, period.closed_at ?? period.period_end) };
}
