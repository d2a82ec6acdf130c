// The hosted page's payment: find or register the buyer, hold the session for the attempt in its
// workflow (beginPayment), send the card to the provider adapter only (in memory, never stored or
// logged), and give the outcome without card data back to the workflow (recordPaymentResult). The
// provider call is bounded below the hold; a later answer is still recorded.
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApiError } from '../domain/errors';
import { derivedId, newId, randomBase62 } from '../domain/ids';
import { cardDigits, chargeAmounts, type ChargeAmounts, checkCurrency, checkInstallments, CUSTOMER_NAME_MIN, effectiveStatus, priceIn, startsWithTrial } from '../domain/checkout';
import type { DocumentType } from '../domain/documents';
import type { CustomerDoc, StoreDoc } from '../store/collections';
import { findCustomer, insertCustomer } from '../store/customers';
import { customerObject } from '../api/schemas/customer';
import { findStore } from '../store/stores';
import { findCheckoutSession, type CheckoutSessionDoc } from '../store/checkout-sessions';
import { prepareCustomer } from './customers';
import { emitEventOnce } from './emit-once';
import type { SettlementStatus } from '../adapters/provider/types';
import { requestOverdueExpiry, type CheckoutDeps } from './checkout-sessions';
import { checkoutSessionClient, type CheckoutSessionHandle } from './checkout-session-client';
import { deliverProviderNotice } from './provider-notices';
import {
  checkoutSessionWorkflowId,
  PAYMENT_HOLD_MS,
  PROVIDER_CALL_TIMEOUT_MS,
  PROVIDER_TIMEOUT_CODE,
  type PaymentAttemptOutcome,
  type PaymentResultInput,
} from '../workflows/checkout-session-messages';

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

const PROVIDER_UNREACHABLE: PaymentAttemptOutcome = {
  status: 'failed',
  code: 'provider_unavailable',
  message: 'The payment provider could not be reached. Nothing was charged; try again.',
};

/** What the provider answered for one attempt, without card data. */
interface ProviderAnswer {
  outcome: PaymentAttemptOutcome;
  savedCard: PaymentResultInput['savedCard'];
}

type Bounded<T> = { answered: true; value: T } | { answered: false; late: Promise<T> };

async function within<T>(promise: Promise<T>, ms: number): Promise<{ done: true; value: T } | { done: false }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ done: false }>((resolve) => {
    timer = setTimeout(() => resolve({ done: false }), ms);
  });
  try {
    return await Promise.race([promise.then((value) => ({ done: true as const, value })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The provider's answer within `boundMs`, asking once more when the first call is slow: the same
 * idempotency key never charges twice, so the repeat makes the only charge or learns the first's.
 * Without an answer by then, `late` is whichever call answers first.
 */
async function askWithinBound<T>(ask: () => Promise<T>, boundMs: number): Promise<Bounded<T>> {
  const first = ask();
  const firstAnswer = await within(first, boundMs);
  if (firstAnswer.done) return { answered: true, value: firstAnswer.value };
  const either = Promise.any([first, ask()]);
  const answer = await within(either, boundMs);
  return answer.done ? { answered: true, value: answer.value } : { answered: false, late: either };
}

/**
 * A new buyer's customer id, the same for every attempt with this email in one window: attempts racing
 * for one buyer register, save cards under and write one customer. Windows as long as an attempt's hold
 * keep the id's time close to the customer's creation.
 */
function newBuyerCustomerId(storeId: string, email: string, now: number): string {
  const windowStart = now - (now % PAYMENT_HOLD_MS);
  return derivedId('cust', windowStart, `checkout-buyer:${storeId}:${email}:${windowStart}`);
}

/** The provider took the payment (or holds it pending): the order is filled, so the buyer's customer must exist. */
function takesPayment(outcome: PaymentAttemptOutcome): boolean {
  return outcome.status === 'approved' || outcome.status === 'review' || outcome.status === 'pix_pending';
}

/**
 * Writes a new buyer's customer (metadata {}) once the payment is taken; an attempt racing it with the
 * same email finds the one written (unique email), so customer.created is emitted once.
 */
async function writeNewBuyer(deps: CheckoutDeps, prepared: CustomerDoc): Promise<CustomerDoc> {
  const { customer, created } = await withRetries(() => insertCustomer(deps.db, { ...prepared, created: Math.floor(Date.now() / 1000) }));
  if (created) {
    const event = { storeId: customer.store_id, type: 'customer.created', object: customerObject(customer), request: null };
    try {
      await withRetries(() => emitEventOnce(deps, `customer.created:${customer._id}`, event));
    } catch (error) {
      // The payment's result must still reach the workflow.
      console.error(`customer ${customer._id}: customer.created was not emitted (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  return customer;
}

/** Where a step may end the attempt early: with the page's answer instead of its value. */
type Step<T> = { value: T } | { stop: HostedPaymentResult };

/** What one attempt charges, decided before the buyer or the provider is involved. */
interface ChargeTerms {
  trial: boolean;
  amounts: ChargeAmounts;
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

/** One attempt, held by the session workflow under its own id. */
interface Attempt {
  deps: CheckoutDeps;
  session: CheckoutSessionDoc;
  input: HostedPaymentInput;
  terms: ChargeTerms;
  buyer: Buyer;
  attemptId: string;
  handle: CheckoutSessionHandle;
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
  if (input.method === 'pix' && trial) return { kind: 'error', code: 'method_unavailable', message: 'PIX is not available for this offer.', field: 'method' };

  const store = await findStore(deps.db, session.store_id);
  if (!store) return { kind: 'closed' };
  const terms = chargeTermsFor(session, input, trial);
  if ('stop' in terms) return terms.stop;
  const buyer = await resolveBuyer(deps, store, session, input, now);
  if ('stop' in buyer) return buyer.stop;
  const held = await holdSession(deps, session);
  if ('stop' in held) return held.stop;

  const attempt: Attempt = { deps, session, input, terms: terms.value, buyer: buyer.value, ...held.value };
  const { answer, late } = await askProviderInTime(attempt);
  return recordOutcome(attempt, answer, late);
}

/** What is charged: the session's currency, else the buyer's choice among the offer's prices; a card's number and installments. */
function chargeTermsFor(session: CheckoutSessionDoc, input: HostedPaymentInput, trial: boolean): Step<ChargeTerms> {
  let price;
  try {
    const currency = session.currency ?? (input.currency ? checkCurrency(session.offer.prices, input.currency) : null);
    price = priceIn(session.offer.prices, currency);
  } catch (error) {
    return { stop: fieldError(error) };
  }
  if (!price) return { stop: { kind: 'error', code: 'currency_unsupported', message: 'This currency is not available.', field: 'currency' } };
  const amounts = chargeAmounts(price, session.pack, session.coupon);
  if (input.method !== 'card') return { value: { trial, amounts, installments: null, cardNumber: null } };

  let installments: number | null;
  try {
    installments = trial ? null : checkInstallments(input.installments ?? 1, session.offer.max_installments);
  } catch (error) {
    return { stop: fieldError(error) };
  }
  const cardNumber = input.card ? cardDigits(input.card.number) : null;
  if (!cardNumber) return { stop: { kind: 'error', code: 'invalid_number', message: 'Enter a valid card number.', field: 'card_number' } };
  return { value: { trial, amounts, installments, cardNumber } };
}

/**
 * The buyer: the session's customer, else the store's customer with this e-mail, else a new one
 * registered at the provider now (customer_rejected refuses before any charge) and written only once
 * the provider takes the payment: a declined or failed attempt leaves no customer behind.
 */
async function resolveBuyer(deps: CheckoutDeps, store: StoreDoc, session: CheckoutSessionDoc, input: HostedPaymentInput, now: number): Promise<Step<Buyer>> {
  try {
    if (session.customer) {
      const customer = await findCustomer(deps.db, store._id, session.customer);
      if (!customer) return { stop: { kind: 'closed' } };
      return { value: { customerId: customer._id, customerEmail: customer.email, providerCustomerId: customer.provider_customer_id, newBuyer: null } };
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
      value: { customerId: customer._id, customerEmail: customer.email, providerCustomerId: customer.provider_customer_id, newBuyer: existing ? null : customer },
    };
  } catch (error) {
    return { stop: fieldError(error) };
  }
}

/** The session workflow holds the session for a new attempt, or says why it cannot. */
async function holdSession(deps: CheckoutDeps, session: CheckoutSessionDoc): Promise<Step<{ attemptId: string; handle: CheckoutSessionHandle }>> {
  const handle = checkoutSessionClient(deps.temporal, deps.taskQueue).session(session._id);
  const attemptId = randomBase62(16);
  let begun;
  try {
    begun = await handle.beginPayment(attemptId, `begin-${attemptId}`);
  } catch (error) {
    // A closed workflow takes no updates: the session was expired or completed meanwhile.
    const current = await findCheckoutSession(deps.db, session.store_id, session._id);
    if (current && current.status !== 'open') return { stop: { kind: 'closed' } };
    throw error;
  }
  if (begun.ok) return { value: { attemptId, handle } };
  if (begun.reason === 'in_progress') {
    return { stop: { kind: 'error', code: 'payment_in_progress', message: 'A payment for this checkout is already in progress.', field: null } };
  }
  if (begun.reason === 'expired') void requestOverdueExpiry(deps, session._id);
  return { stop: { kind: 'closed' } };
}

/** The provider's answer within the bound; without one, a timed-out outcome now and the answer still to come. */
async function askProviderInTime(attempt: Attempt): Promise<{ answer: ProviderAnswer; late: Promise<ProviderAnswer> | null }> {
  try {
    const asked = await askWithinBound(() => askProvider(attempt), attempt.deps.providerCallTimeoutMs ?? PROVIDER_CALL_TIMEOUT_MS);
    if (asked.answered) return { answer: asked.value, late: null };
    const outcome: PaymentAttemptOutcome = {
      status: 'failed',
      code: PROVIDER_TIMEOUT_CODE,
      message: 'The payment provider has not answered yet. If the payment goes through, this checkout completes by itself.',
    };
    return { answer: { outcome, savedCard: null }, late: asked.late };
  } catch {
    // Deliberately not logged with its input: the card must not reach any log.
    return { answer: { outcome: PROVIDER_UNREACHABLE, savedCard: null }, late: null };
  }
}

/** One call to the provider for the attempt; asked again with the same key when slow, a key never charges twice. */
function askProvider(attempt: Attempt): Promise<ProviderAnswer> {
  if (attempt.input.method === 'pix') return askForPix(attempt);
  if (attempt.terms.trial) return saveTrialCard(attempt);
  return chargeCard(attempt);
}

const idempotencyKeyOf = (attempt: Attempt) => `checkout:${attempt.session._id}:${attempt.attemptId}`;

async function askForPix(attempt: Attempt): Promise<ProviderAnswer> {
  const { deps, session, terms, buyer } = attempt;
  const pix = await deps.provider.createPix({
    storeId: session.store_id,
    idempotencyKey: idempotencyKeyOf(attempt),
    amount: terms.amounts.amount_total,
    currency: terms.amounts.currency,
    description: session.offer.name,
    customerId: buyer.customerId,
    notifyRef: checkoutSessionWorkflowId(session._id),
  });
  return {
    outcome:
      pix.status === 'pending'
        ? { status: 'pix_pending', transactionId: pix.transactionId, pixCode: pix.copyPaste, pixExpiresAt: pix.expiresAt }
        : { status: 'declined', code: pix.code, message: pix.message },
    savedCard: null,
  };
}

/** A trial charges nothing now: the card is only saved for the first renewal. */
async function saveTrialCard({ deps, session, input, terms, buyer }: Attempt): Promise<ProviderAnswer> {
  const saved = await deps.provider.saveCard({
    storeId: session.store_id,
    customerId: buyer.customerId,
    providerCustomerId: buyer.providerCustomerId,
    card: { ...input.card!, number: terms.cardNumber! },
  });
  return saved.ok
    ? {
        outcome: { status: 'approved', transactionId: null },
        savedCard: { id: saved.card.paymentMethodId, brand: saved.card.brand, last4: saved.card.last4, chargeable: saved.card.chargeable },
      }
    : { outcome: { status: 'declined', code: saved.code, message: saved.message }, savedCard: null };
}

async function chargeCard(attempt: Attempt): Promise<ProviderAnswer> {
  const { deps, session, input, terms, buyer } = attempt;
  const tokenized = await deps.provider.tokenizeCard({ storeId: session.store_id, card: { ...input.card!, number: terms.cardNumber! } });
  if (!tokenized.ok) return { outcome: { status: 'declined', code: tokenized.code, message: tokenized.message }, savedCard: null };
  const charged = await deps.provider.chargeCard({
    storeId: session.store_id,
    idempotencyKey: idempotencyKeyOf(attempt),
    cardToken: tokenized.token,
    amount: terms.amounts.amount_total,
    currency: terms.amounts.currency,
    description: session.offer.name,
    installments: terms.installments,
    saveCard: session.offer.type === 'recurring',
    customerId: buyer.customerId,
    providerCustomerId: buyer.providerCustomerId,
    notifyRef: checkoutSessionWorkflowId(session._id),
  });
  const savedCard = charged.card
    ? { id: charged.card.paymentMethodId, brand: charged.card.brand, last4: charged.card.last4, chargeable: charged.card.chargeable }
    : null;
  switch (charged.status) {
    case 'approved':
      return { outcome: { status: 'approved', transactionId: charged.transactionId }, savedCard };
    case 'review':
      return { outcome: { status: 'review', transactionId: charged.transactionId }, savedCard };
    case 'declined':
      return { outcome: { status: 'declined', code: charged.code ?? 'declined', message: charged.message }, savedCard };
    case 'refused':
      return { outcome: { status: 'declined', code: charged.code, message: charged.message }, savedCard };
  }
}

/**
 * The provider has answered: its outcome must reach the workflow (a new buyer written first when the
 * payment was taken), and a late answer follows it. The page is told what the workflow applied.
 */
async function recordOutcome(attempt: Attempt, answer: ProviderAnswer, late: Promise<ProviderAnswer> | null): Promise<HostedPaymentResult> {
  const { deps, session, input, terms, buyer, attemptId, handle } = attempt;
  const { outcome, savedCard } = answer;
  const answeredResult: PaymentResultInput = {
    attemptId,
    orderId: newId('ord'),
    method: input.method,
    outcome,
    amounts: terms.amounts,
    installments: terms.installments,
    customerId: buyer.customerId,
    customerEmail: buyer.customerEmail,
    savedCard,
  };
  const withBuyer = (result: PaymentResultInput) => withNewBuyer(deps, buyer.newBuyer, result);
  const result = await withBuyer(answeredResult);
  // The update id makes a repeat of a call whose answer was lost return the first answer instead of applying it twice.
  let applied;
  try {
    applied = await withRetries(() => handle.recordPaymentResult(result, `result-${attemptId}`));
  } catch (error) {
    // Only after the attempt's hold ran out and the session closed: the page shows the session as it is.
    const current = await findCheckoutSession(deps.db, session.store_id, session._id);
    if (current && current.status !== 'open') return { kind: 'closed' };
    throw error;
  }
  if (late) recordLateAnswer(handle, result, late, withBuyer);
  if (!applied.applied) return { kind: 'closed' };
  if (outcome.status === 'declined' || outcome.status === 'failed') {
    return { kind: 'error', code: outcome.code, message: outcome.message, field: 'payment' };
  }
  return { kind: 'done' };
}

/** A new buyer's customer comes into existence with the payment taken, never before. */
async function withNewBuyer(deps: CheckoutDeps, newBuyer: CustomerDoc | null, attempt: PaymentResultInput): Promise<PaymentResultInput> {
  if (!newBuyer || !takesPayment(attempt.outcome)) return attempt;
  const customer = await writeNewBuyer(deps, newBuyer);
  return { ...attempt, customerId: customer._id, customerEmail: customer.email };
}

/**
 * The provider's answer that came after the bound goes to the workflow, which still holds the session
 * for this attempt: an approval completes it, anything else releases the hold. A new buyer's customer
 * is written first when the answer took the payment.
 */
function recordLateAnswer(
  handle: CheckoutSessionHandle,
  timedOut: PaymentResultInput,
  late: Promise<ProviderAnswer>,
  withBuyer: (result: PaymentResultInput) => Promise<PaymentResultInput>,
): void {
  void late
    .then(
      (answer) => ({ ...timedOut, outcome: answer.outcome, savedCard: answer.savedCard }),
      () => ({ ...timedOut, outcome: PROVIDER_UNREACHABLE }),
    )
    .then(withBuyer)
    .then((result) => withRetries(() => handle.recordPaymentResult(result, `late-${result.attemptId}`)))
    .then(
      (answer) => {
        if (!answer.applied) console.error(`checkout ${handle.workflowId}: the provider's late answer for attempt ${timedOut.attemptId} came after the session closed`);
      },
      (error: unknown) => {
        console.error(`checkout ${handle.workflowId}: the provider's late answer for attempt ${timedOut.attemptId} was not recorded (${error instanceof Error ? error.message : String(error)})`);
      },
    );
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
