// The built-in test payment connection: behaves like a real provider driven by test inputs
// (DESIGN.md, "The test payment connection"). Orders paid through it have livemode false; its
// ledger and saved cards are in test-ledger.ts, how its cards behave in test-cards.ts. A charge whose
// caller gave up (its `signal` aborted) before the ledger recorded it is never recorded, as a request
// a connection stopped never reaches the provider.
import { createHash, randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { newId } from '../../domain/ids';
import { cardDecision, digitsOf, luhnValid, outcomeFor } from './test-cards';
import {
  fingerprintOf,
  MAX_TEST_REFUNDS,
  replayOf,
  TestLedger,
  traitsOf,
  type CardTraits,
  type TestChargeDoc,
  type TestRefundEntry,
} from './test-ledger';
import type {
  CancelPendingResult,
  ChargeCardInput,
  ChargeLookup,
  ChargeOutcome,
  ChargeSavedCardInput,
  CheckoutChargeOutcome,
  CreatePixInput,
  PaymentProvider,
  PixOutcome,
  ProviderNotice,
  RefundInput,
  RefundOutcome,
  RefundResult,
  RegisterCustomerResult,
  SaveCardResult,
  SavedCard,
  SettlementStatus,
  SettleResult,
  TokenizeResult,
  TransactionState,
} from './types';

export { TEST_CARDS, type TestCardBehaviour } from './test-cards';
export { TEST_CARDS_COLLECTION, TEST_CHARGES_COLLECTION, TEST_TOKENS_COLLECTION, type TestCardDoc, type TestChargeDoc } from './test-ledger';

export const REJECTED_EMAIL_DOMAIN = 'reject.test';
/** Any currency: refused before the card with provider_error. */
export const REFUSED_AMOUNT = 424242;
export const PIX_VALIDITY_SECONDS = 30 * 60;

/** The database the simulated provider keeps its ledger in (DESIGN.md: its own, not store/'s). */
export type LedgerDatabase = Db;

export interface TestConnectionOptions {
  /** Needed by everything but registerCustomer: the ledger and saved cards live there. */
  db?: LedgerDatabase | null;
  /** Milliseconds clock (PIX expiry, settlement times). */
  now?: () => number;
  /** Currencies whose card charges it pays in installments (TEST_INSTALLMENT_CURRENCIES); BRL by default, as Stripe. */
  installmentCurrencies?: readonly string[];
}

/** The test connection's installment currencies when none are configured: Stripe's. */
export const DEFAULT_TEST_INSTALLMENT_CURRENCIES: readonly string[] = ['brl'];

export function createTestConnection(options: TestConnectionOptions = {}): PaymentProvider {
  const ledger = new TestLedger(options.db, options.now ?? Date.now);
  const installmentCurrencies = (options.installmentCurrencies ?? DEFAULT_TEST_INSTALLMENT_CURRENCIES).map((c) => c.toLowerCase());
  const installmentsAvailable = (currency: string) => installmentCurrencies.includes(currency.toLowerCase());
  return {
    livemode: false,
    installmentsAvailable,
    // The simulator takes any amount: the bound it is held to is the store's or the currency's default.
    maxChargeAmount: () => null,
    registerCustomer: async (input) => registerCustomer(input),
    tokenizeCard: (input) => tokenizeCard(ledger, input),
    saveCard: (input) => saveCard(ledger, input),
    // Its cards never ask for authentication: a setup is a save.
    setupCard: async (input) => {
      const saved = await saveCard(ledger, input);
      return saved.ok ? { status: 'saved', card: saved.card } : { status: 'declined', code: saved.code, message: saved.message };
    },
    readSetup: async () => null,
    chargeSavedCard: (input) => chargeSavedCard(ledger, input),
    chargeCard: (input) => chargeCard(ledger, input, installmentsAvailable(input.currency)),
    createPix: (input) => createPix(ledger, input),
    settle: (input) => settle(ledger, input),
    getTransaction: async ({ storeId, transactionId }) => {
      const doc = await ledger.findByTransaction(storeId, transactionId);
      return doc ? ledger.transactionInfo(doc) : null;
    },
    lookupCharge: (input) => lookupCharge(ledger, input),
    refundCharge: (input) => refundCharge(ledger, input),
    cancelPending: (input) => cancelPending(ledger, input),
    refund: (input) => refund(ledger, input),
    lookupRefund: async (input) => {
      const doc = await ledger.findByTransaction(input.storeId, input.transactionId);
      const entry = doc?.refunds?.find((r) => r.key === input.refundKey);
      return entry ? refundedOutcome(entry) : null;
    },
  };
}

/** The store whose charge a test transaction is (null: no such transaction), for the operator CLI's `provider settle tx_...`. */
export async function storeOfTestTransaction(db: LedgerDatabase, transactionId: string): Promise<string | null> {
  return (await new TestLedger(db, Date.now).findAnyStoreTransaction(transactionId))?.store_id ?? null;
}

const refusedAmount = (): ChargeOutcome => ({
  status: 'refused',
  transactionId: null,
  code: 'provider_error',
  message: `The provider refused the charge request (test amount ${REFUSED_AMOUNT}).`,
});

function registerCustomer({ storeId, customerId, email }: { storeId: string; customerId: string; email: string }): RegisterCustomerResult {
  const domain = email.split('@')[1]?.toLowerCase();
  if (domain === REJECTED_EMAIL_DOMAIN) {
    return { ok: false, reason: `the test connection refuses e-mail addresses at ${REJECTED_EMAIL_DOMAIN}` };
  }
  // Deterministic: registering the same customer twice gives the same provider id.
  return { ok: true, providerCustomerId: providerId('tcus', `${storeId}:${customerId}`) };
}

function providerId(prefix: string, seed: string): string {
  return `${prefix}_${createHash('sha256').update(seed).digest('hex').slice(0, 24)}`;
}

const INVALID_NUMBER = { ok: false as const, code: 'invalid_number', message: 'The card number is not a valid card number.' };

async function tokenizeCard(ledger: TestLedger, { storeId, card }: Parameters<PaymentProvider['tokenizeCard']>[0]): Promise<TokenizeResult> {
  const digits = digitsOf(card.number);
  if (!luhnValid(digits)) return INVALID_NUMBER;
  const token = await ledger.saveToken(storeId, traitsOf(digits));
  return { ok: true, token: token._id, brand: token.brand, last4: token.last4 };
}

/** A card by its number (checked here) or by a token the fields made; null when neither names a valid card. */
async function traitsFor(
  ledger: TestLedger,
  storeId: string,
  source: { card: { number: string } } | { cardToken: string },
): Promise<CardTraits | null> {
  if ('cardToken' in source) return ledger.findToken(storeId, source.cardToken);
  const digits = digitsOf(source.card.number);
  return luhnValid(digits) ? traitsOf(digits) : null;
}

async function saveCard(ledger: TestLedger, input: Parameters<PaymentProvider['saveCard']>[0]): Promise<SaveCardResult> {
  const traits = await traitsFor(ledger, input.storeId, input);
  if (!traits) return INVALID_NUMBER;
  return { ok: true, card: await ledger.saveCard(input.storeId, input.customerId, traits) };
}

/**
 * The outcome is decided first and recorded by an insert on the key: a repeated key finds the
 * first attempt's record there and gets its outcome instead.
 */
async function chargeSavedCard(ledger: TestLedger, input: ChargeSavedCardInput): Promise<ChargeOutcome> {
  const fingerprint = fingerprintOf({ kind: 'saved_card', pm: input.paymentMethodId, amount: input.amount, currency: input.currency });
  let outcome: ChargeOutcome;
  if (input.amount === REFUSED_AMOUNT) {
    outcome = refusedAmount();
  } else {
    const card = await ledger.cards().findOne({ _id: input.paymentMethodId, store_id: input.storeId });
    outcome = card
      ? outcomeFor(cardDecision(card.behaviour, false), newId('tx', ledger.now()))
      : { status: 'refused', transactionId: null, code: 'provider_error', message: 'The provider does not know this payment method.' };
  }
  input.signal?.throwIfAborted();
  const doc = await ledger.record(ledger.entry(input, 'saved_card', fingerprint, outcome, { payment_method: input.paymentMethodId }));
  return replayOf(doc, fingerprint);
}

async function chargeCard(ledger: TestLedger, input: ChargeCardInput, installments: boolean): Promise<CheckoutChargeOutcome> {
  input.signal?.throwIfAborted();
  const existing = await ledger.findByKey(input.storeId, input.idempotencyKey);
  const token = await ledger.findToken(input.storeId, input.cardToken);
  // Only the last four digits take part in the fingerprint: the number itself is never kept.
  const fingerprint = fingerprintOf({ kind: 'card', last4: token?.last4 ?? null, amount: input.amount, currency: input.currency });
  if (existing) return { ...replayOf(existing, fingerprint), card: await ledger.cardOf(existing) };

  const { outcome, saved } = await chargeNewCard(ledger, input, token);
  const plan = installments && input.installments && input.installments > 1 ? input.installments : null;
  // The plan it confirms (what its answer says), as Stripe's payment_method_details does.
  if (plan && (outcome.status === 'approved' || outcome.status === 'review')) outcome.installments = plan;
  input.signal?.throwIfAborted();
  const doc = await ledger.record(ledger.entry(input, 'card', fingerprint, outcome, { payment_method: saved?.paymentMethodId ?? null }));
  return { ...replayOf(doc, fingerprint), card: await ledger.cardOf(doc) };
}

/** A card charged for the first time under its key, saved when asked and the charge went through (or is in review). */
async function chargeNewCard(
  ledger: TestLedger,
  input: ChargeCardInput,
  token: CardTraits | null,
): Promise<{ outcome: ChargeOutcome; saved: SavedCard | null }> {
  if (input.amount === REFUSED_AMOUNT) return { outcome: refusedAmount(), saved: null };
  if (!token) {
    return {
      outcome: { status: 'refused', transactionId: null, code: 'provider_error', message: 'The provider does not know this card token.' },
      saved: null,
    };
  }
  const outcome = outcomeFor(cardDecision(token.behaviour, true), newId('tx', ledger.now()));
  const keep = input.saveCard && (outcome.status === 'approved' || outcome.status === 'review');
  return { outcome, saved: keep ? await ledger.saveCard(input.storeId, input.customerId ?? null, token) : null };
}

async function createPix(ledger: TestLedger, input: CreatePixInput): Promise<PixOutcome> {
  const fingerprint = fingerprintOf({ kind: 'pix', amount: input.amount, currency: input.currency });
  const found = await ledger.findByKey(input.storeId, input.idempotencyKey);
  input.signal?.throwIfAborted();
  const doc = found ?? (await ledger.record(newPixEntry(ledger, input, fingerprint)));
  const outcome = replayOf(doc, fingerprint);
  if (outcome.status === 'refused') return { status: 'refused', transactionId: null, code: 'provider_error', message: outcome.message };
  return { status: 'pending', transactionId: doc.transaction_id!, copyPaste: doc.pix_code!, expiresAt: doc.expires_at! };
}

function newPixEntry(ledger: TestLedger, input: CreatePixInput, fingerprint: string): TestChargeDoc {
  if (input.amount === REFUSED_AMOUNT) return ledger.entry(input, 'pix', fingerprint, refusedAmount());
  const transactionId = newId('tx', ledger.now());
  const code = `00020126580014br.gov.bcb.pix0136${randomBytes(16).toString('hex')}5204000053039865802BR6304TEST`;
  return ledger.entry(
    input,
    'pix',
    fingerprint,
    { status: 'review', transactionId },
    {
      state: 'pix_pending',
      pix_code: code,
      expires_at: ledger.seconds() + PIX_VALIDITY_SECONDS,
    },
  );
}

const SETTLED_STATE: Record<SettlementStatus, TransactionState> = { paid: 'paid', refused: 'refused', expired: 'expired' };

/** The test buttons' settlement of a pending review or PIX, answered with the provider's notice. */
async function settle(ledger: TestLedger, { storeId, transactionId, outcome }: Parameters<PaymentProvider['settle']>[0]): Promise<SettleResult> {
  const doc = await ledger.findByTransaction(storeId, transactionId);
  if (!doc) return { ok: false, reason: `no transaction ${transactionId} at the test connection` };
  const info = ledger.transactionInfo(doc)!;
  const wanted = SETTLED_STATE[outcome];
  // Already settled: the same notice again (a provider re-sends notices), a different one is refused.
  if (info.state === 'paid' || info.state === 'refused' || info.state === 'expired') {
    if (info.state !== wanted) return { ok: false, reason: `transaction ${transactionId} is already ${info.state}` };
    return { ok: true, notice: noticeOf(doc, info.state, info.settledAt ?? ledger.seconds(), doc.code, doc.message) };
  }
  if (info.state !== 'review' && info.state !== 'pix_pending') {
    return { ok: false, reason: `transaction ${transactionId} is ${info.state}, not pending` };
  }
  if (outcome === 'expired' && doc.kind !== 'pix') return { ok: false, reason: 'only a PIX expires' };
  const code = outcome === 'refused' ? (doc.kind === 'pix' ? 'pix_refused' : 'card_declined') : null;
  const message =
    outcome === 'refused' ? 'The provider refused the payment after review.' : outcome === 'expired' ? 'The PIX code expired unpaid.' : null;
  const settledAt = ledger.seconds();
  const updated = await ledger
    .charges()
    .findOneAndUpdate(
      { _id: doc._id, state: doc.state },
      { $set: { state: wanted, code, message, settled_at: settledAt } },
      { returnDocument: 'after' },
    );
  if (!updated) return { ok: false, reason: `transaction ${transactionId} changed while settling; retry` };
  return { ok: true, notice: noticeOf(doc, wanted, settledAt, code, message) };
}

function noticeOf(doc: TestChargeDoc, state: TransactionState, settledAt: number, code: string | null, message: string | null): ProviderNotice {
  return { transactionId: doc.transaction_id!, status: state as SettlementStatus, code, message, notifyRef: doc.notify_ref, settledAt };
}

async function lookupCharge(
  ledger: TestLedger,
  { storeId, idempotencyKey }: { storeId: string; idempotencyKey: string },
): Promise<ChargeLookup | null> {
  const doc = await ledger.findByKey(storeId, idempotencyKey);
  if (!doc) return null;
  const state = ledger.stateOf(doc);
  return {
    idempotencyKey,
    outcome: doc.outcome,
    state,
    card: await ledger.cardOf(doc),
    amount: doc.amount,
    currency: doc.currency,
    settledAt: doc.settled_at ?? (state === 'expired' ? doc.expires_at : null),
  };
}

/** What giving the money back makes of each state: pending ones are voided, captured ones refunded. */
const GIVEN_BACK: Partial<Record<TransactionState, 'voided' | 'refunded'>> = {
  review: 'voided',
  pix_pending: 'voided',
  approved: 'refunded',
  paid: 'refunded',
};

/** Voids or refunds the charge under `chargeKey`; asking again answers the same (compare-and-set on its state). */
async function refundCharge(ledger: TestLedger, { storeId, chargeKey }: { storeId: string; chargeKey: string }): Promise<RefundResult> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const doc = await ledger.findByKey(storeId, chargeKey);
    if (!doc || !doc.transaction_id) return { ok: false, reason: `nothing was charged under ${chargeKey}` };
    const state = ledger.stateOf(doc);
    if (state === 'voided' || state === 'refunded') return { ok: true, status: state, transactionId: doc.transaction_id };
    const to = state ? GIVEN_BACK[state] : undefined;
    if (!to) return { ok: false, reason: `transaction ${doc.transaction_id} is ${state}: nothing to give back` };
    const at = ledger.seconds();
    const updated = await ledger
      .charges()
      .findOneAndUpdate(
        { _id: doc._id, state: doc.state },
        { $set: { state: to, refunded_at: at, settled_at: doc.settled_at ?? at, ...(to === 'refunded' ? { amount_refunded: doc.amount } : {}) } },
      );
    if (updated) return { ok: true, status: to, transactionId: doc.transaction_id };
  }
  return { ok: false, reason: `the charge under ${chargeKey} kept changing; retry` };
}

/** States where the ledger's money is taken (a later refund does not undo that it was paid). */
const CAPTURED: ReadonlySet<TransactionState> = new Set(['approved', 'paid', 'refunded']);

/**
 * The fence (CancelPendingResult): a pending review is voided and a pending PIX expired (compare-and-set on
 * its state, so a settle racing it either wins, and the cancel answers succeeded, or finds it closed).
 */
async function cancelPending(ledger: TestLedger, { storeId, chargeKey }: { storeId: string; chargeKey: string }): Promise<CancelPendingResult> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const doc = await ledger.findByKey(storeId, chargeKey);
    if (!doc?.transaction_id) throw new Error(`no transaction under ${chargeKey} at the test connection`);
    const state = ledger.stateOf(doc);
    const transactionId = doc.transaction_id;
    if (state && CAPTURED.has(state)) {
      return { status: 'succeeded', transactionId, amount: doc.amount, currency: doc.currency, settledAt: doc.settled_at };
    }
    if (state !== 'review' && state !== 'pix_pending') return { status: 'canceled', transactionId };
    const to = doc.kind === 'pix' ? 'expired' : 'voided';
    const message = doc.kind === 'pix' ? 'The PIX was canceled before it was paid.' : 'The payment was canceled before it settled.';
    const at = ledger.seconds();
    const updated = await ledger
      .charges()
      .findOneAndUpdate({ _id: doc._id, state: doc.state }, { $set: { state: to, code: 'canceled', message, settled_at: at } });
    if (updated) return { status: 'canceled', transactionId };
  }
  throw new Error(`the charge under ${chargeKey} kept changing; ask again`);
}

const refundedOutcome = (entry: TestRefundEntry): RefundOutcome => ({ status: 'refunded', refundId: entry.id, amount: entry.amount });

const refundFailed = (input: RefundInput, code: string, message: string): RefundOutcome => ({
  status: 'failed',
  refundId: null,
  amount: input.amount,
  code,
  message,
});

/** Why a captured charge cannot take this refund now (null: it can). */
function refundRefusal(ledger: TestLedger, doc: TestChargeDoc, input: RefundInput): RefundOutcome | null {
  const state = ledger.stateOf(doc);
  if (state === 'refunded') return refundFailed(input, 'charge_already_refunded', `transaction ${input.transactionId} is refunded whole`);
  if (state !== 'approved' && state !== 'paid') return refundFailed(input, 'charge_not_refundable', `transaction ${input.transactionId} is ${state}`);
  const remaining = doc.amount - (doc.amount_refunded ?? 0);
  if (!Number.isInteger(input.amount) || input.amount <= 0 || input.amount > remaining) {
    return refundFailed(input, 'amount_too_large', `${input.amount} is more than the ${remaining} left to refund on ${input.transactionId}`);
  }
  if ((doc.refunds?.length ?? 0) >= MAX_TEST_REFUNDS)
    return refundFailed(input, 'too_many_refunds', `at most ${MAX_TEST_REFUNDS} refunds per charge`);
  return null;
}

/**
 * A whole or partial refund of a captured test charge, once per refund key: kept in the charge's own
 * document by a compare-and-set on what was refunded before, so concurrent refunds never exceed the charge.
 */
async function refund(ledger: TestLedger, input: RefundInput): Promise<RefundOutcome> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const doc = await ledger.findByTransaction(input.storeId, input.transactionId);
    if (!doc) return refundFailed(input, 'resource_missing', `no transaction ${input.transactionId} at the test connection`);
    const known = doc.refunds?.find((r) => r.key === input.refundKey);
    if (known) return refundedOutcome(known);
    const refusal = refundRefusal(ledger, doc, input);
    if (refusal) return refusal;
    input.signal?.throwIfAborted();
    const entry: TestRefundEntry = {
      key: input.refundKey,
      id: newId('re', ledger.now()),
      amount: input.amount,
      reason: input.reason,
      created: ledger.seconds(),
    };
    const after = (doc.amount_refunded ?? 0) + input.amount;
    const whole = after >= doc.amount;
    const updated = await ledger.charges().findOneAndUpdate(
      { _id: doc._id, state: doc.state, amount_refunded: doc.amount_refunded ?? null },
      {
        $set: { amount_refunded: after, ...(whole ? { state: 'refunded' as const, refunded_at: entry.created } : {}) },
        $push: { refunds: entry },
      },
    );
    if (updated) return refundedOutcome(entry);
  }
  throw new Error(`the charge ${input.transactionId} kept changing while refunding; retry`);
}
