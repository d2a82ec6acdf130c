// The built-in test payment connection: behaves like a real provider driven by test inputs
// (DESIGN.md, "The test payment connection"). Orders paid through it have livemode false.
// Its charge ledger lives in MongoDB (`provider_test_charges`, one document per store and
// idempotency key) so a key charges once even across worker restarts, exactly like a real
// provider's idempotency. Saved cards keep only pm_ id, brand, last4 and the test behaviour.
import { createHash, randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { newId } from '../../domain/ids';
import type {
  CardInput,
  ChargeOutcome,
  PaymentProvider,
  ProviderNotice,
  SavedCard,
  SettlementStatus,
  TransactionInfo,
  TransactionState,
} from './types';

export const REJECTED_EMAIL_DOMAIN = 'reject.test';
/** Any currency: refused before the card with provider_error. */
export const REFUSED_AMOUNT = 424242;
export const PIX_VALIDITY_SECONDS = 30 * 60;

/** How a test card behaves; derived once from its number, which is then forgotten. */
export type TestCardBehaviour =
  | 'approve'
  | 'decline_card_declined'
  | 'decline_insufficient_funds'
  | 'approve_present_only'
  | 'review'
  | 'not_chargeable_unattended';

export const TEST_CARDS: Record<string, TestCardBehaviour> = {
  '4242424242424242': 'approve',
  '4000000000000002': 'decline_card_declined',
  '4000000000009995': 'decline_insufficient_funds',
  '4000000000000341': 'approve_present_only',
  '4000000000004954': 'review',
  '4000002760003184': 'not_chargeable_unattended',
};

export interface TestCardDoc {
  _id: string;
  store_id: string;
  customer_id: string | null;
  brand: string;
  last4: string;
  behaviour: TestCardBehaviour;
  created: number;
}

export interface TestChargeDoc {
  /** `<store>:<idempotency key>`: the uniqueness that makes a key charge once. */
  _id: string;
  store_id: string;
  key: string;
  kind: TransactionInfo['kind'];
  transaction_id: string | null;
  /** What the request asked for; a retry must ask for the same. */
  fingerprint: string;
  state: TransactionState | 'refused_before_card';
  outcome: ChargeOutcome;
  amount: number;
  currency: string;
  payment_method: string | null;
  notify_ref: string | null;
  pix_code: string | null;
  expires_at: number | null;
  code: string | null;
  message: string | null;
  settled_at: number | null;
  created: number;
}

export const TEST_CHARGES_COLLECTION = 'provider_test_charges';
export const TEST_CARDS_COLLECTION = 'provider_test_cards';

function providerId(prefix: string, seed: string): string {
  return `${prefix}_${createHash('sha256').update(seed).digest('hex').slice(0, 24)}`;
}

function digitsOf(number: string): string {
  return number.replace(/[\s-]/g, '');
}

function luhnValid(digits: string): boolean {
  if (!/^\d{12,19}$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

function brandOf(digits: string): string {
  if (digits.startsWith('4')) return 'visa';
  const two = Number(digits.slice(0, 2));
  const four = Number(digits.slice(0, 4));
  if ((two >= 51 && two <= 55) || (four >= 2221 && four <= 2720)) return 'mastercard';
  if (two === 34 || two === 37) return 'amex';
  if (digits.startsWith('6011') || digits.startsWith('65')) return 'discover';
  if (digits.startsWith('636368') || digits.startsWith('438935') || digits.startsWith('504175')) return 'elo';
  return 'unknown';
}

/** Known test numbers behave per the table; any other valid number is approved like 4242. */
function behaviourOf(digits: string): TestCardBehaviour {
  return TEST_CARDS[digits] ?? 'approve';
}

const DECLINE_MESSAGES: Record<string, string> = {
  card_declined: 'The card was declined.',
  insufficient_funds: 'The card has insufficient funds.',
};

/** What a card does when charged, with the buyer present (checkout) or not (saved card). */
function cardDecision(behaviour: TestCardBehaviour, buyerPresent: boolean): 'approved' | 'review' | { declined: string } | 'not_chargeable' {
  switch (behaviour) {
    case 'approve':
      return 'approved';
    case 'decline_card_declined':
      return { declined: 'card_declined' };
    case 'decline_insufficient_funds':
      return { declined: 'insufficient_funds' };
    case 'approve_present_only':
      return buyerPresent ? 'approved' : { declined: 'card_declined' };
    case 'review':
      return 'review';
    case 'not_chargeable_unattended':
      return buyerPresent ? 'approved' : 'not_chargeable';
  }
}

function isDuplicateKey(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: number }).code === 11000;
}

function fingerprintOf(parts: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

export interface TestConnectionOptions {
  /** Needed by everything but registerCustomer: the ledger and saved cards live there. */
  db?: Db | null;
  /** Milliseconds clock (PIX expiry, settlement times). */
  now?: () => number;
}

export function createTestConnection(options: TestConnectionOptions = {}): PaymentProvider {
  const now = options.now ?? Date.now;
  const seconds = () => Math.floor(now() / 1000);

  function database(): Db {
    if (!options.db) throw new Error('the test payment connection needs a database for cards and charges (createTestConnection({ db }))');
    return options.db;
  }
  const charges = () => database().collection<TestChargeDoc>(TEST_CHARGES_COLLECTION);
  const cards = () => database().collection<TestCardDoc>(TEST_CARDS_COLLECTION);

  async function saveTestCard(storeId: string, customerId: string | null, digits: string): Promise<SavedCard> {
    const behaviour = behaviourOf(digits);
    const doc: TestCardDoc = {
      _id: newId('pm', now()),
      store_id: storeId,
      customer_id: customerId,
      brand: brandOf(digits),
      last4: digits.slice(-4),
      behaviour,
      created: seconds(),
    };
    await cards().insertOne(doc);
    return toSavedCard(doc);
  }

  function toSavedCard(doc: TestCardDoc): SavedCard {
    return {
      paymentMethodId: doc._id,
      type: 'card',
      brand: doc.brand,
      last4: doc.last4,
      chargeable: doc.behaviour !== 'not_chargeable_unattended',
    };
  }

  /**
   * Records the attempt under its key, or returns the attempt already recorded under it: the
   * insert on the unique `_id` is the charge, so concurrent callers with one key get one result.
   */
  async function record(doc: TestChargeDoc): Promise<TestChargeDoc> {
    try {
      await charges().insertOne(doc);
      return doc;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      const existing = await charges().findOne({ _id: doc._id });
      if (!existing) throw error;
      return existing;
    }
  }

  function ledgerDoc(
    input: { storeId: string; idempotencyKey: string; amount: number; currency: string; notifyRef?: string | null },
    kind: TestChargeDoc['kind'],
    fingerprint: string,
    outcome: ChargeOutcome,
    extra: Partial<TestChargeDoc> = {},
  ): TestChargeDoc {
    const settled = outcome.status === 'approved' || outcome.status === 'declined' || outcome.status === 'refused';
    return {
      _id: `${input.storeId}:${input.idempotencyKey}`,
      store_id: input.storeId,
      key: input.idempotencyKey,
      kind,
      transaction_id: outcome.transactionId,
      fingerprint,
      state: outcome.status === 'refused' ? 'refused_before_card' : outcome.status,
      outcome,
      amount: input.amount,
      currency: input.currency,
      payment_method: null,
      notify_ref: input.notifyRef ?? null,
      pix_code: null,
      expires_at: null,
      code: outcome.status === 'declined' || outcome.status === 'refused' ? outcome.code : null,
      message: outcome.status === 'declined' || outcome.status === 'refused' ? outcome.message : null,
      settled_at: settled ? seconds() : null,
      created: seconds(),
      ...extra,
    };
  }

  function replayOf(existing: TestChargeDoc, fingerprint: string): ChargeOutcome {
    if (existing.fingerprint !== fingerprint) {
      return {
        status: 'refused',
        transactionId: null,
        code: 'provider_error',
        message: 'The provider refused the request: this idempotency key was used with different parameters.',
      };
    }
    return existing.outcome;
  }

  function outcomeFor(decision: ReturnType<typeof cardDecision>, transactionId: string): ChargeOutcome {
    if (decision === 'approved') return { status: 'approved', transactionId };
    if (decision === 'review') return { status: 'review', transactionId };
    if (decision === 'not_chargeable') {
      return {
        status: 'refused',
        transactionId: null,
        code: 'payment_method_not_chargeable',
        message: 'The provider holding this card does not accept charges without the customer present.',
      };
    }
    return { status: 'declined', transactionId, code: decision.declined, message: DECLINE_MESSAGES[decision.declined] ?? 'The card was declined.' };
  }

  const refusedAmount = (): ChargeOutcome => ({
    status: 'refused',
    transactionId: null,
    code: 'provider_error',
    message: `The provider refused the charge request (test amount ${REFUSED_AMOUNT}).`,
  });

  function transactionInfo(doc: TestChargeDoc): TransactionInfo | null {
    if (!doc.transaction_id) return null;
    let state = doc.state as TransactionState;
    // An unpaid PIX past its validity reads as expired (the provider's notice would say so).
    if (state === 'pix_pending' && doc.expires_at !== null && doc.expires_at <= seconds()) state = 'expired';
    return {
      transactionId: doc.transaction_id,
      storeId: doc.store_id,
      idempotencyKey: doc.key,
      kind: doc.kind,
      state,
      amount: doc.amount,
      currency: doc.currency,
      notifyRef: doc.notify_ref,
      code: doc.code,
      message: doc.message,
      settledAt: doc.settled_at ?? (state === 'expired' ? doc.expires_at : null),
    };
  }

  return {
    livemode: false,

    async registerCustomer({ storeId, customerId, email }) {
      const domain = email.split('@')[1]?.toLowerCase();
      if (domain === REJECTED_EMAIL_DOMAIN) {
        return { ok: false, reason: `the test connection refuses e-mail addresses at ${REJECTED_EMAIL_DOMAIN}` };
      }
      // Deterministic: registering the same customer twice gives the same provider id.
      return { ok: true, providerCustomerId: providerId('tcus', `${storeId}:${customerId}`) };
    },

    async saveCard({ storeId, customerId, card }) {
      const digits = digitsOf(card.number);
      if (!luhnValid(digits)) return { ok: false, code: 'invalid_number', message: 'The card number is not a valid card number.' };
      return { ok: true, card: await saveTestCard(storeId, customerId, digits) };
    },

    async chargeSavedCard(input) {
      const fingerprint = fingerprintOf({ kind: 'saved_card', pm: input.paymentMethodId, amount: input.amount, currency: input.currency });
      // The outcome is decided first and recorded by an insert on the key: a repeated key finds the
      // first attempt's record there and gets its outcome instead.
      let outcome: ChargeOutcome;
      if (input.amount === REFUSED_AMOUNT) {
        outcome = refusedAmount();
      } else {
        const card = await cards().findOne({ _id: input.paymentMethodId, store_id: input.storeId });
        if (!card) {
          outcome = { status: 'refused', transactionId: null, code: 'provider_error', message: 'The provider does not know this payment method.' };
        } else {
          outcome = outcomeFor(cardDecision(card.behaviour, false), newId('tx', now()));
        }
      }
      const doc = await record(ledgerDoc(input, 'saved_card', fingerprint, outcome, { payment_method: input.paymentMethodId }));
      return replayOf(doc, fingerprint);
    },

    async chargeCard(input) {
      const digits = digitsOf(input.card.number);
      // Only the last four digits take part in the fingerprint: the number itself is never kept.
      const fingerprint = fingerprintOf({ kind: 'card', last4: digits.slice(-4), amount: input.amount, currency: input.currency });
      const key = `${input.storeId}:${input.idempotencyKey}`;
      const existing = await charges().findOne({ _id: key });
      if (existing) {
        const card = existing.payment_method ? await cards().findOne({ _id: existing.payment_method }) : null;
        return { ...replayOf(existing, fingerprint), card: card ? toSavedCard(card) : null };
      }

      let outcome: ChargeOutcome;
      let saved: SavedCard | null = null;
      if (input.amount === REFUSED_AMOUNT) {
        outcome = refusedAmount();
      } else if (!luhnValid(digits)) {
        outcome = { status: 'declined', transactionId: newId('tx', now()), code: 'invalid_number', message: 'The card number is not a valid card number.' };
      } else {
        outcome = outcomeFor(cardDecision(behaviourOf(digits), true), newId('tx', now()));
        if (input.saveCard && (outcome.status === 'approved' || outcome.status === 'review')) {
          saved = await saveTestCard(input.storeId, input.customerId ?? null, digits);
        }
      }
      const doc = await record(ledgerDoc(input, 'card', fingerprint, outcome, { payment_method: saved?.paymentMethodId ?? null }));
      const card = doc.payment_method ? await cards().findOne({ _id: doc.payment_method }) : null;
      return { ...replayOf(doc, fingerprint), card: card ? toSavedCard(card) : null };
    },

    async createPix(input) {
      const fingerprint = fingerprintOf({ kind: 'pix', amount: input.amount, currency: input.currency });
      const key = `${input.storeId}:${input.idempotencyKey}`;
      let doc = await charges().findOne({ _id: key });
      if (!doc) {
        if (input.amount === REFUSED_AMOUNT) {
          doc = await record(ledgerDoc(input, 'pix', fingerprint, refusedAmount()));
        } else {
          const transactionId = newId('tx', now());
          const code = `00020126580014br.gov.bcb.pix0136${randomBytes(16).toString('hex')}5204000053039865802BR6304TEST`;
          doc = await record(
            ledgerDoc(input, 'pix', fingerprint, { status: 'review', transactionId }, {
              state: 'pix_pending',
              pix_code: code,
              expires_at: seconds() + PIX_VALIDITY_SECONDS,
            }),
          );
        }
      }
      const outcome = replayOf(doc, fingerprint);
      if (outcome.status === 'refused') return { status: 'refused', transactionId: null, code: 'provider_error', message: outcome.message };
      return { status: 'pending', transactionId: doc.transaction_id!, copyPaste: doc.pix_code!, expiresAt: doc.expires_at! };
    },

    async settle({ storeId, transactionId, outcome }) {
      const doc = await charges().findOne({ store_id: storeId, transaction_id: transactionId });
      if (!doc) return { ok: false, reason: `no transaction ${transactionId} at the test connection` };
      const info = transactionInfo(doc)!;
      const wanted: Record<SettlementStatus, TransactionState> = { paid: 'paid', refused: 'refused', expired: 'expired' };
      const notice = (state: TransactionState, settledAt: number, code: string | null, message: string | null): ProviderNotice => ({
        transactionId,
        status: state as SettlementStatus,
        code,
        message,
        notifyRef: doc.notify_ref,
        settledAt,
      });
      // Already settled: the same notice again (a provider re-sends notices), a different one is refused.
      if (info.state === 'paid' || info.state === 'refused' || info.state === 'expired') {
        if (info.state !== wanted[outcome]) return { ok: false, reason: `transaction ${transactionId} is already ${info.state}` };
        return { ok: true, notice: notice(info.state, info.settledAt ?? seconds(), doc.code, doc.message) };
      }
      if (info.state !== 'review' && info.state !== 'pix_pending') {
        return { ok: false, reason: `transaction ${transactionId} is ${info.state}, not pending` };
      }
      if (outcome === 'expired' && doc.kind !== 'pix') return { ok: false, reason: 'only a PIX expires' };
      const code = outcome === 'refused' ? (doc.kind === 'pix' ? 'pix_refused' : 'card_declined') : null;
      const message = outcome === 'refused' ? 'The provider refused the payment after review.' : outcome === 'expired' ? 'The PIX code expired unpaid.' : null;
      const settledAt = seconds();
      const updated = await charges().findOneAndUpdate(
        { _id: doc._id, state: doc.state },
        { $set: { state: wanted[outcome], code, message, settled_at: settledAt } },
        { returnDocument: 'after' },
      );
      if (!updated) return { ok: false, reason: `transaction ${transactionId} changed while settling; retry` };
      return { ok: true, notice: notice(wanted[outcome], settledAt, code, message) };
    },

    async getTransaction({ storeId, transactionId }) {
      const doc = await charges().findOne({ store_id: storeId, transaction_id: transactionId });
      return doc ? transactionInfo(doc) : null;
    },
  };
}
