// The hosted page's payment, page side: check the form against the session, resolve the buyer (an
// existing customer, or a new one prepared but written by the workflow only once the payment is
// taken), turn the card into a provider token (the number goes nowhere else), and hand the attempt to
// the session workflow's `pay` update, waiting for its outcome up to a bound. The charge itself runs
// in the workflow (services/checkout/attempts.ts), so a page that stops waiting loses nothing.
import { ApiError } from '../../domain/errors';
import { derivedId } from '../../domain/ids';
import {
  cardDigits,
  chargeAmounts,
  type PaymentAmounts,
  checkCurrency,
  checkInstallments,
  CUSTOMER_NAME_MIN,
  effectiveStatus,
  pixAllowed,
  priceIn,
  startsWithTrial,
} from '../../domain/checkout';
import type { DocumentType } from '../../domain/documents';
import type { CustomerDoc, StoreDoc } from '../../store/collections';
import { findCustomer } from '../../store/customers';
import { findStore } from '../../store/stores';
import { findCheckoutSession, type CheckoutSessionDoc } from '../../store/checkout-sessions';
import { prepareCustomer } from '../customers';
import { connectionFor, testPaymentsAvailable } from '../../adapters/provider';
import type { SettlementStatus, TransactionState } from '../../adapters/provider/types';
import { requestOverdueExpiry, type CheckoutDeps } from './sessions';
import { deliverOrGiveBack, deliverProviderNotice } from '../provider/notices';
import { checkoutSessionClient, type UnsettledAttempt } from './client';
import {
  checkoutSessionWorkflowId,
  CARD_LOCKED_FAILURE,
  NOT_OPEN_FAILURE,
  PAYMENT_IN_PROGRESS_FAILURE,
  PIX_UNAVAILABLE_FAILURE,
  type PayAnswer,
  type PayInput,
} from '../../workflows/checkout-session/messages';

const cardLocked = (): HostedPaymentResult => ({
  kind: 'error',
  code: CARD_LOCKED_FAILURE,
  message: 'Too many cards were declined on this checkout; pay by PIX or ask the store for a new link.',
  field: 'method',
});

const pixUnavailable = (): HostedPaymentResult => ({
  kind: 'error',
  code: PIX_UNAVAILABLE_FAILURE,
  message: 'PIX is only available for payments in BRL without a free trial.',
  field: 'method',
});

/** The page's error for installments the connection cannot honour in this currency: refused, never charged in full silently. */
export const INSTALLMENTS_UNAVAILABLE_CODE = 'installments_unavailable';
const installmentsUnavailable = (currency: string): HostedPaymentResult => ({
  kind: 'error',
  code: INSTALLMENTS_UNAVAILABLE_CODE,
  message: `Installments are not available for payments in ${currency.toUpperCase()}; pay in full.`,
  field: 'installments',
});

/** Whether the session's connection pays a card in this currency in installments: the page offers them only then. */
export function installmentsOffered(deps: CheckoutDeps, session: Pick<CheckoutSessionDoc, 'test_clock'>): (currency: string) => boolean {
  return (currency) => connectionFor(deps, Boolean(session.test_clock)).installmentsAvailable(currency);
}

/** How long the page waits for the workflow's answer before telling the buyer "processing". */
export const PAY_WAIT_MS = 20_000;

export interface HostedPaymentInput {
  method: 'card' | 'pix';
  email?: string | null;
  name?: string | null;
  phone?: string | null;
  document_type?: string | null;
  document_number?: string | null;
  currency?: string | null;
  installments?: number | null;
  /** Only ever in memory: handed to the provider's tokenizer and dropped. */
  card?: { number: string; exp_month?: number; exp_year?: number; cvc?: string } | null;
  /**
   * The provider's own card field is on the page (Stripe.js, PCI SAQ A): the card arrives as `paymentMethod`
   * (pm_…) and a card number is refused, never tokenized here.
   */
  providerCardField?: boolean;
  paymentMethod?: string | null;
}

export type HostedPaymentResult =
  | { kind: 'done' }
  /** The card waits for the buyer's 3-D Secure: the session stays open; the page reads the client secret once. */
  | { kind: 'action'; transactionId: string }
  | { kind: 'closed' }
  /** The workflow has the attempt (or Temporal is away): the page shows "processing" and polls. */
  | { kind: 'processing' }
  | { kind: 'error'; code: string; message: string; field: string | null };

function fieldError(error: unknown): HostedPaymentResult {
  if (error instanceof ApiError) return { kind: 'error', code: error.code, message: error.message, field: error.param };
  throw error;
}

/**
 * A new buyer's customer id, the same for every attempt with this email in one window: attempts racing
 * for one buyer (two sessions at once) register and write one customer.
 */
const BUYER_ID_WINDOW_MS = 2 * 60 * 1000;
function newBuyerCustomerId(storeId: string, email: string, now: number): string {
  const windowStart = now - (now % BUYER_ID_WINDOW_MS);
  return derivedId('cust', windowStart, `checkout-buyer:${storeId}:${email}:${windowStart}`);
}

/** Where a step may end the attempt early: with the page's answer instead of its value. */
type Step<T> = { value: T } | { stop: HostedPaymentResult };

/** What one attempt charges, decided before the buyer or the provider is involved. */
interface ChargeTerms {
  trial: boolean;
  amounts: PaymentAmounts;
  installments: number | null;
  cardNumber: string | null;
}

/** Who pays: an existing customer, or a new buyer written only once the provider takes the payment. */
interface Buyer {
  customerId: string;
  customerEmail: string;
  providerCustomerId: string | null;
  newBuyer: CustomerDoc | null;
}

/** The hosted page's pay button: see the module header. */
export async function payCheckoutSession(
  deps: CheckoutDeps,
  session: CheckoutSessionDoc,
  input: HostedPaymentInput,
  now = Date.now(),
): Promise<HostedPaymentResult> {
  if (effectiveStatus(session, Math.floor(now / 1000)) !== 'open') return { kind: 'closed' };
  const trial = startsWithTrial(session.offer);
  // The workflow refuses too; this spares a tokenization the buyer cannot use.
  if (input.method === 'card' && session.card_locked) return cardLocked();

  const store = await findStore(deps.db, session.store_id);
  if (!store) return { kind: 'closed' };
  const terms = chargeTermsFor(session, input, trial, installmentsOffered(deps, session));
  if ('stop' in terms) return terms.stop;
  const buyer = await resolveBuyer(deps, store, session, input, now);
  if ('stop' in buyer) return buyer.stop;
  const token = await tokenize(deps, session, input, terms.value);
  if ('stop' in token) return token.stop;
  const request = payInput(session, input, terms.value, buyer.value, token.value);
  const reply = await checkoutSessionClient(deps.temporal, deps.taskQueue).pay(session._id, request, deps.payWaitMs ?? PAY_WAIT_MS);
  if (reply.kind === 'answered') return pageAnswer(reply.answer);
  if (reply.kind === 'refused') return refusedAnswer(deps, session, reply.type, reply.message);
  // No answer in time: the workflow may have the attempt; a closed session shows as it is.
  const current = await findCheckoutSession(deps.db, session.store_id, session._id).catch(() => null);
  return current && current.status !== 'open' ? { kind: 'closed' } : { kind: 'processing' };
}

/** What is charged: the session's currency, else the buyer's choice among the offer's prices; a card's number and installments. */
function chargeTermsFor(
  session: CheckoutSessionDoc,
  input: HostedPaymentInput,
  trial: boolean,
  installmentsHere: (currency: string) => boolean,
): Step<ChargeTerms> {
  let price;
  try {
    const currency = session.currency ?? (input.currency ? checkCurrency(session.offer.prices, input.currency) : null);
    price = priceIn(session.offer.prices, currency);
  } catch (error) {
    return { stop: fieldError(error) };
  }
  if (!price) return { stop: { kind: 'error', code: 'currency_unsupported', message: 'This currency is not available.', field: 'currency' } };
  const amounts = chargeAmounts(price, session.pack, session.coupon);
  // The page offers PIX only where it may be used; a hand-made form is refused the same way.
  if (input.method === 'pix' && !pixAllowed(amounts.currency, trial)) {
    return { stop: pixUnavailable() };
  }
  if (input.method !== 'card') return { value: { trial, amounts, installments: null, cardNumber: null } };

  let installments: number | null;
  try {
    installments = trial ? null : checkInstallments(input.installments ?? 1, session.offer.max_installments);
  } catch (error) {
    return { stop: fieldError(error) };
  }
  // Offered only where the connection honours them (the page's select); a posted plan elsewhere is refused.
  if (installments !== null && installments > 1 && !installmentsHere(amounts.currency)) return { stop: installmentsUnavailable(amounts.currency) };
  if (input.providerCardField) return providerCardTerms(input, { trial, amounts, installments });
  const cardNumber = input.card ? cardDigits(input.card.number) : null;
  if (!cardNumber) return { stop: { kind: 'error', code: 'invalid_number', message: 'Enter a valid card number.', field: 'card_number' } };
  return { value: { trial, amounts, installments, cardNumber } };
}

/** A payment method id as Stripe.js makes it. */
const PAYMENT_METHOD_ID = /^pm_[0-9A-Za-z_]{1,200}$/;

/** With the provider's card field: a card number is refused outright (it must never reach us), a pm_ id required. */
function providerCardTerms(input: HostedPaymentInput, terms: Omit<ChargeTerms, 'cardNumber'>): Step<ChargeTerms> {
  if (input.card?.number) {
    const message = 'Card numbers are not accepted here: enter the card in the card field.';
    return { stop: { kind: 'error', code: 'card_fields_required', message, field: 'card_number' } };
  }
  if (!input.paymentMethod || !PAYMENT_METHOD_ID.test(input.paymentMethod)) {
    return { stop: { kind: 'error', code: 'card_fields_required', message: 'Enter your card in the card field.', field: 'payment_method' } };
  }
  return { value: { ...terms, cardNumber: null } };
}

/**
 * The buyer: the session's customer, else the store's customer with this e-mail, else a new one
 * registered at the provider now (customer_rejected refuses before any charge) and written by the
 * workflow only once the provider takes the payment: a declined or failed attempt leaves no customer behind.
 */
async function resolveBuyer(
  deps: CheckoutDeps,
  store: StoreDoc,
  session: CheckoutSessionDoc,
  input: HostedPaymentInput,
  now: number,
): Promise<Step<Buyer>> {
  try {
    if (session.customer) {
      const customer = await findCustomer(deps.db, store._id, session.customer);
      if (!customer) return { stop: { kind: 'closed' } };
      return {
        value: { customerId: customer._id, customerEmail: customer.email, providerCustomerId: customer.provider_customer_id, newBuyer: null },
      };
    }
    const email = session.customer_email ?? input.email ?? null;
    if (!email) return { stop: { kind: 'error', code: 'parameter_missing', message: 'Enter your e-mail address.', field: 'email' } };
    const documentType = (input.document_type ?? null) as DocumentType | null;
    const { customer, existing } = await prepareCustomer(
      deps,
      store,
      {
        email,
        name: input.name ?? null,
        phone: input.phone ?? null,
        document: documentType && input.document_number ? { type: documentType, number: input.document_number } : undefined,
      },
      // The page takes any name the session's customer_name rule allows, so the record does too.
      { nameMin: CUSTOMER_NAME_MIN, id: (normalized) => newBuyerCustomerId(store._id, normalized, now) },
    );
    return {
      value: {
        customerId: customer._id,
        customerEmail: customer.email,
        providerCustomerId: customer.provider_customer_id,
        newBuyer: existing ? null : customer,
      },
    };
  } catch (error) {
    return { stop: fieldError(error) };
  }
}

/** The card becomes the provider's token here, as its client-side fields would; PIX needs none. */
async function tokenize(
  deps: CheckoutDeps,
  session: CheckoutSessionDoc,
  input: HostedPaymentInput,
  terms: ChargeTerms,
): Promise<Step<string | null>> {
  if (input.method !== 'card') return { value: null };
  // Stripe.js made the payment method in the page: it is the token.
  if (input.providerCardField) return { value: input.paymentMethod! };
  let tokenized;
  try {
    // The card goes where the session's attempts will charge it: a test clock's session, the test connection.
    tokenized = await connectionFor(deps, Boolean(session.test_clock)).tokenizeCard({
      storeId: session.store_id,
      card: { ...input.card!, number: terms.cardNumber! },
    });
  } catch {
    // Deliberately not logged with its input: the card must not reach any log.
    return { stop: { kind: 'error', code: 'provider_unavailable', message: 'The payment provider could not be reached.', field: 'payment' } };
  }
  if (tokenized.ok) return { value: tokenized.token };
  return {
    stop: { kind: 'error', code: tokenized.code, message: tokenized.message, field: tokenized.code === 'invalid_number' ? 'card_number' : 'payment' },
  };
}

function payInput(session: CheckoutSessionDoc, input: HostedPaymentInput, terms: ChargeTerms, buyer: Buyer, cardToken: string | null): PayInput {
  return {
    method: input.method,
    cardToken,
    amounts: terms.amounts,
    installments: terms.installments,
    description: session.offer.name,
    customerId: buyer.customerId,
    customerEmail: buyer.customerEmail,
    providerCustomerId: buyer.providerCustomerId,
    newBuyer: buyer.newBuyer,
    trial: terms.trial,
    saveCard: session.offer.type === 'recurring',
  };
}

/** The attempt's outcome as the page shows it. */
function pageAnswer(answer: PayAnswer): HostedPaymentResult {
  const { attempt } = answer;
  // Never sent: an earlier card's 3-D Secure paid the session first.
  if (attempt.status === 'failed' && answer.session !== 'open') return { kind: 'closed' };
  if (attempt.status === 'declined' || attempt.status === 'failed') {
    return { kind: 'error', code: attempt.code ?? 'declined', message: answer.message ?? '', field: 'payment' };
  }
  if (attempt.status === 'action_required' && attempt.transaction_id) {
    return answer.session === 'open' ? { kind: 'action', transactionId: attempt.transaction_id } : { kind: 'closed' };
  }
  // No answer from the provider yet: money may have been taken, so the buyer waits instead of paying again.
  if (attempt.status === 'unknown') return answer.session === 'open' ? { kind: 'processing' } : { kind: 'closed' };
  // Taken and applied; or landed on a session that closed meanwhile (given back): the session shows which.
  return answer.session === 'complete' && attempt.status !== 'voided' && attempt.status !== 'refunded' ? { kind: 'done' } : { kind: 'closed' };
}

async function refusedAnswer(deps: CheckoutDeps, session: CheckoutSessionDoc, type: string, message: string): Promise<HostedPaymentResult> {
  if (type === PAYMENT_IN_PROGRESS_FAILURE) return { kind: 'processing' };
  if (type === CARD_LOCKED_FAILURE) return cardLocked();
  if (type === PIX_UNAVAILABLE_FAILURE) return pixUnavailable();
  if (type === NOT_OPEN_FAILURE) {
    // Refused at the deadline before the timer marked it: the workflow expires it now.
    if (effectiveStatus(session, Math.floor(Date.now() / 1000)) === 'expired') void requestOverdueExpiry(deps, session._id);
    return { kind: 'closed' };
  }
  return { kind: 'error', code: type, message, field: 'payment' };
}

/**
 * The page of an open session after a submit: `charging`, `unknown` (being confirmed with the provider),
 * false when no attempt is unsettled, null when the workflow could not be asked.
 */
export function attemptInFlight(deps: CheckoutDeps, sessionId: string): Promise<UnsettledAttempt | false | null> {
  return checkoutSessionClient(deps.temporal, deps.taskQueue).attemptInFlight(sessionId, 3_000);
}

/** The hosted page shows the test connection's buttons where the session pays through one: a test default, or a test clock's session. */
export function testButtonsShown(deps: CheckoutDeps, session: Pick<CheckoutSessionDoc, 'test_clock'>): boolean {
  return session.test_clock ? testPaymentsAvailable(deps) : !deps.provider.livemode;
}

/** A pending transaction's state as a settlement: null while the provider still decides. */
function settlementOf(state: TransactionState | null | undefined): SettlementStatus | null {
  if (state === 'paid' || state === 'approved') return 'paid';
  if (state === 'refused' || state === 'declined' || state === 'voided' || state === 'refunded') return 'refused';
  return state === 'expired' ? 'expired' : null;
}

/**
 * The transaction a page confirm re-checks: an open session's card waiting for 3-D Secure, or (runs begun
 * before 3-D Secure kept sessions open) a completed card payment still pending.
 */
export function transactionToRecheck(session: CheckoutSessionDoc): string | null {
  if (session.status === 'open') return session.pending_action?.transaction_id ?? null;
  const transactionId = session.payment?.transaction_id;
  return session.payment_status === 'pending' && session.payment?.method === 'card' && transactionId ? transactionId : null;
}

/**
 * The page finished the provider's next action (3-D Secure): the provider is asked once, now, and what it
 * decided (paid; failed or cancelled authentication: refused with its code) reaches the session's workflow
 * as the notice its event would carry, so a late event leaves no buyer waiting. Nothing the page sends is
 * believed: the notice is the provider's record. The caller bounds it (page payment limit, page provider reads).
 */
export async function recheckPendingCard(deps: CheckoutDeps, session: CheckoutSessionDoc): Promise<boolean> {
  const transactionId = transactionToRecheck(session);
  if (!transactionId) return false;
  const connection = connectionFor(deps, Boolean(session.test_clock));
  const found = await connection.getTransaction({ storeId: session.store_id, transactionId });
  const status = settlementOf(found?.state);
  if (!found || !status) return false;
  const notifyRef = checkoutSessionWorkflowId(session._id);
  const settledAt = found.settledAt ?? Math.floor(Date.now() / 1000);
  return deliverProviderNotice(deps, { transactionId, status, code: found.code, message: found.message, notifyRef, settledAt });
}

/** After a confirm delivered its notice: the session's 3-D Secure has landed (paid, or declined and cleared) within `waitMs`. */
export async function awaitActionLanded(deps: CheckoutDeps, session: CheckoutSessionDoc, transactionId: string, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const now = await findCheckoutSession(deps.db, session.store_id, session._id);
    if (!now || now.status !== 'open' || now.pending_action?.transaction_id !== transactionId) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The test connection's buttons on the hosted page: settle the pending PIX or review now. */
export async function settleFromHostedPage(deps: CheckoutDeps, session: CheckoutSessionDoc, outcome: SettlementStatus): Promise<boolean> {
  if (!testButtonsShown(deps, session)) return false;
  const transactionId = session.payment?.transaction_id;
  if (session.payment_status !== 'pending' || !transactionId) return false;
  const settled = await connectionFor(deps, Boolean(session.test_clock)).settle({ storeId: session.store_id, transactionId, outcome });
  if (!settled.ok) return false;
  return deliverOrGiveBack(deps, settled.notice, session.store_id, Boolean(session.test_clock) || !deps.provider.livemode);
}
