// The test connection's records in MongoDB: one charge document per store and idempotency key (the
// insert on that key is the charge, so a key charges once even across restarts, like a real provider)
// and saved cards keeping only pm_ id, brand, last4 and the test behaviour.
import { createHash } from 'node:crypto';
import type { Db } from 'mongodb';
import { newId } from '../../domain/ids';
import { behaviourOf, brandOf, type TestCardBehaviour } from './test-cards';
import type { ChargeOutcome, SavedCard, TransactionInfo, TransactionState } from './types';

/** The simulated provider keeps its own database apart from store/ (DESIGN.md, rooms): its own DuplicateKey check. */
const isDuplicateKeyError = (error: unknown) => (error as { code?: unknown } | null)?.code === 11000;

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
  /** Unix seconds the money was given back (voided while pending, refunded once captured). */
  refunded_at?: number | null;
  /** Minor units refunded so far (partial refunds); the whole amount once refunded. */
  amount_refunded?: number | null;
  /** Each refund made (at most MAX_TEST_REFUNDS), once per refund key. */
  refunds?: TestRefundEntry[];
  created: number;
}

/** One refund of a captured test charge, filed under the refund key it was asked with. */
export interface TestRefundEntry {
  key: string;
  id: string;
  amount: number;
  reason: string | null;
  created: number;
}

/** Refunds one test charge may have: the bound of its `refunds` list. */
export const MAX_TEST_REFUNDS = 100;

/** A card as the test connection's fields tokenized it: what the number told, never the number. */
export interface TestTokenDoc {
  _id: string;
  store_id: string;
  brand: string;
  last4: string;
  behaviour: TestCardBehaviour;
  created: number;
}

export const TEST_CHARGES_COLLECTION = 'provider_test_charges';
export const TEST_CARDS_COLLECTION = 'provider_test_cards';
export const TEST_TOKENS_COLLECTION = 'provider_test_tokens';

/** What a card number tells the test connection: all it keeps of it. */
export interface CardTraits {
  brand: string;
  last4: string;
  behaviour: TestCardBehaviour;
}

export function traitsOf(digits: string): CardTraits {
  return { brand: brandOf(digits), last4: digits.slice(-4), behaviour: behaviourOf(digits) };
}

/** What a ledger entry is filed under and for how much. */
export interface LedgerRequest {
  storeId: string;
  idempotencyKey: string;
  amount: number;
  currency: string;
  notifyRef?: string | null;
}

export function fingerprintOf(parts: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** A repeated key gets the first attempt's outcome, unless it asks for something else. */
export function replayOf(existing: TestChargeDoc, fingerprint: string): ChargeOutcome {
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

export function toSavedCard(doc: TestCardDoc): SavedCard {
  return { paymentMethodId: doc._id, type: 'card', brand: doc.brand, last4: doc.last4, chargeable: doc.behaviour !== 'not_chargeable_unattended' };
}

export class TestLedger {
  constructor(
    private readonly db: Db | null | undefined,
    /** Milliseconds clock (PIX expiry, settlement times). */
    readonly now: () => number,
  ) {}

  seconds(): number {
    return Math.floor(this.now() / 1000);
  }

  charges() {
    return this.database().collection<TestChargeDoc>(TEST_CHARGES_COLLECTION);
  }

  cards() {
    return this.database().collection<TestCardDoc>(TEST_CARDS_COLLECTION);
  }

  tokens() {
    return this.database().collection<TestTokenDoc>(TEST_TOKENS_COLLECTION);
  }

  async saveToken(storeId: string, traits: CardTraits): Promise<TestTokenDoc> {
    const doc: TestTokenDoc = { _id: newId('tok', this.now()), store_id: storeId, ...traits, created: this.seconds() };
    await this.tokens().insertOne(doc);
    return doc;
  }

  findToken(storeId: string, token: string): Promise<TestTokenDoc | null> {
    return this.tokens().findOne({ _id: token, store_id: storeId });
  }

  private database(): Db {
    if (!this.db) throw new Error('the test payment connection needs a database for cards and charges (createTestConnection({ db }))');
    return this.db;
  }

  async saveCard(storeId: string, customerId: string | null, traits: CardTraits): Promise<SavedCard> {
    const doc: TestCardDoc = {
      _id: newId('pm', this.now()),
      store_id: storeId,
      customer_id: customerId,
      brand: traits.brand,
      last4: traits.last4,
      behaviour: traits.behaviour,
      created: this.seconds(),
    };
    await this.cards().insertOne(doc);
    return toSavedCard(doc);
  }

  /** The saved card a charge kept, if any. */
  async cardOf(charge: TestChargeDoc): Promise<SavedCard | null> {
    const card = charge.payment_method ? await this.cards().findOne({ _id: charge.payment_method }) : null;
    return card ? toSavedCard(card) : null;
  }

  findByKey(storeId: string, idempotencyKey: string): Promise<TestChargeDoc | null> {
    return this.charges().findOne({ _id: `${storeId}:${idempotencyKey}` });
  }

  /** The charge behind a transaction, whichever store made it (the operator CLI names only the tx_ id). */
  findAnyStoreTransaction(transactionId: string): Promise<TestChargeDoc | null> {
    return this.charges().findOne({ transaction_id: transactionId });
  }

  findByTransaction(storeId: string, transactionId: string): Promise<TestChargeDoc | null> {
    return this.charges().findOne({ store_id: storeId, transaction_id: transactionId });
  }

  /**
   * Records the attempt under its key, or returns the attempt already recorded under it: the
   * insert on the unique `_id` is the charge, so concurrent callers with one key get one result.
   */
  async record(doc: TestChargeDoc): Promise<TestChargeDoc> {
    try {
      await this.charges().insertOne(doc);
      return doc;
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
      const existing = await this.charges().findOne({ _id: doc._id });
      if (!existing) throw error;
      return existing;
    }
  }

  entry(
    input: LedgerRequest,
    kind: TestChargeDoc['kind'],
    fingerprint: string,
    outcome: ChargeOutcome,
    extra: Partial<TestChargeDoc> = {},
  ): TestChargeDoc {
    const settled = outcome.status === 'approved' || outcome.status === 'declined' || outcome.status === 'refused';
    const refusal = outcome.status === 'declined' || outcome.status === 'refused' ? outcome : null;
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
      code: refusal ? refusal.code : null,
      message: refusal ? refusal.message : null,
      settled_at: settled ? this.seconds() : null,
      created: this.seconds(),
      ...extra,
    };
  }

  /** The state now; an unpaid PIX past its validity reads as expired (the provider's notice would say so). */
  stateOf(doc: TestChargeDoc): TransactionState | null {
    if (doc.state === 'refused_before_card') return null;
    if (doc.state === 'pix_pending' && doc.expires_at !== null && doc.expires_at <= this.seconds()) return 'expired';
    return doc.state;
  }

  transactionInfo(doc: TestChargeDoc): TransactionInfo | null {
    const state = this.stateOf(doc);
    if (!doc.transaction_id || state === null) return null;
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
}
