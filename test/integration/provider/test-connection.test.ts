// What this tests: every row of DESIGN.md's test payment connection table against FerretDB, and that
// one idempotency key charges once (concurrently, and with a fresh connection object as after a restart),
// and that a charge whose caller gave up (its AbortSignal aborted) is never recorded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestConnection,
  PIX_VALIDITY_SECONDS,
  TEST_CARDS_COLLECTION,
  TEST_CHARGES_COLLECTION,
  TEST_TOKENS_COLLECTION,
} from '../../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../../adapters/provider/types';
import { ensureIndexes } from '../../../store/indexes';
import { testMongo, type TestMongo } from '../../support/env';

let mongo: TestMongo;
let provider: PaymentProvider;
const storeId = 'acct_provider_test';
let keySeq = 0;
const key = () => `key-${++keySeq}`;

beforeAll(async () => {
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  provider = createTestConnection({ db: mongo.db });
});
afterAll(async () => {
  await mongo?.close();
});

async function savedCard(number: string) {
  const saved = await provider.saveCard({ storeId, customerId: 'cust_x', card: { number } });
  if (!saved.ok) throw new Error(saved.message);
  return saved.card;
}

/** The provider's card fields: the number becomes a token before any checkout charge. */
async function tokenOf(number: string): Promise<string> {
  const tokenized = await provider.tokenizeCard({ storeId, card: { number } });
  if (!tokenized.ok) throw new Error(tokenized.message);
  return tokenized.token;
}

const charge = (paymentMethodId: string, amount = 5000, idempotencyKey = key()) =>
  provider.chargeSavedCard({ storeId, idempotencyKey, paymentMethodId, amount, currency: 'brl', description: 'test' });

describe('saved cards (charges without the buyer)', () => {
  it('4242 is saved with brand visa and last4, and its charge is approved with a tx_ transaction', async () => {
    const card = await savedCard('4242 4242 4242 4242');
    expect(card).toEqual({ paymentMethodId: expect.stringMatching(/^pm_/), type: 'card', brand: 'visa', last4: '4242', chargeable: true });
    expect(await charge(card.paymentMethodId)).toEqual({ status: 'approved', transactionId: expect.stringMatching(/^tx_/) });
  });

  it('0002 declines with card_declined and 9995 with insufficient_funds, each with a transaction', async () => {
    const declined = await charge((await savedCard('4000000000000002')).paymentMethodId);
    expect(declined).toMatchObject({ status: 'declined', code: 'card_declined', transactionId: expect.stringMatching(/^tx_/) });
    const poor = await charge((await savedCard('4000000000009995')).paymentMethodId);
    expect(poor).toMatchObject({ status: 'declined', code: 'insufficient_funds' });
  });

  it('0341 declines card_declined without the buyer', async () => {
    const result = await charge((await savedCard('4000000000000341')).paymentMethodId);
    expect(result).toMatchObject({ status: 'declined', code: 'card_declined' });
  });

  it('4954 is left in review, and a paid notice settles it with the notifyRef given at charge time', async () => {
    const card = await savedCard('4000000000004954');
    const result = await provider.chargeSavedCard({
      storeId,
      idempotencyKey: key(),
      paymentMethodId: card.paymentMethodId,
      amount: 700,
      currency: 'brl',
      description: null,
      notifyRef: 'charge/x/y',
    });
    expect(result).toMatchObject({ status: 'review' });
    const tx = result.transactionId!;
    expect((await provider.getTransaction({ storeId, transactionId: tx }))?.state).toBe('review');
    const settled = await provider.settle({ storeId, transactionId: tx, outcome: 'paid' });
    expect(settled).toMatchObject({ ok: true, notice: { transactionId: tx, status: 'paid', notifyRef: 'charge/x/y' } });
    // The same notice again is accepted; the opposite one is refused.
    expect((await provider.settle({ storeId, transactionId: tx, outcome: 'paid' })).ok).toBe(true);
    expect(await provider.settle({ storeId, transactionId: tx, outcome: 'refused' })).toMatchObject({ ok: false });
  });

  it('3184 is saved as not chargeable and its unattended charge is refused before the card with payment_method_not_chargeable', async () => {
    const card = await savedCard('4000 0027 6000 3184');
    expect(card.chargeable).toBe(false);
    expect(await charge(card.paymentMethodId)).toMatchObject({ status: 'refused', transactionId: null, code: 'payment_method_not_chargeable' });
  });

  it('amount 424242 is refused before the card with provider_error, whatever the card', async () => {
    const card = await savedCard('4242424242424242');
    expect(await charge(card.paymentMethodId, 424242)).toMatchObject({ status: 'refused', transactionId: null, code: 'provider_error' });
  });

  it('a number failing the Luhn check is not saved', async () => {
    expect(await provider.saveCard({ storeId, customerId: null, card: { number: '4242424242424241' } })).toMatchObject({
      ok: false,
      code: 'invalid_number',
    });
  });
});

describe("card tokens (the provider's fields)", () => {
  it('a valid number becomes a tok_ with brand and last4; an invalid one is refused with invalid_number before any charge', async () => {
    expect(await provider.tokenizeCard({ storeId, card: { number: '4242 4242 4242 4242' } })).toEqual({
      ok: true,
      token: expect.stringMatching(/^tok_/),
      brand: 'visa',
      last4: '4242',
    });
    expect(await provider.tokenizeCard({ storeId, card: { number: '4242424242424241' } })).toMatchObject({ ok: false, code: 'invalid_number' });
  });

  it('a token of another store, or an unknown one, is refused with provider_error and charges nothing', async () => {
    const foreign = await createTestConnection({ db: mongo.db }).tokenizeCard({ storeId: 'acct_other', card: { number: '4242424242424242' } });
    const result = await provider.chargeCard({
      storeId,
      idempotencyKey: key(),
      cardToken: (foreign as { token: string }).token,
      amount: 5000,
      currency: 'brl',
      description: null,
    });
    expect(result).toMatchObject({ status: 'refused', transactionId: null, code: 'provider_error' });
  });

  it('a saved card can be made from a token (trial checkout)', async () => {
    const saved = await provider.saveCard({ storeId, customerId: null, cardToken: await tokenOf('4000000000000341') });
    expect(saved).toMatchObject({ ok: true, card: { brand: 'visa', last4: '0341', chargeable: true } });
  });
});

describe('lookup by key and money given back', () => {
  it('an unknown key looks up as null; a charged one as its first answer and its state now', async () => {
    expect(await provider.lookupCharge({ storeId, idempotencyKey: key() })).toBeNull();
    const k = key();
    const result = await provider.chargeCard({
      storeId,
      idempotencyKey: k,
      cardToken: await tokenOf('4000000000004954'),
      amount: 800,
      currency: 'brl',
      description: null,
      saveCard: true,
    });
    expect(await provider.lookupCharge({ storeId, idempotencyKey: k })).toMatchObject({
      outcome: { status: 'review' },
      state: 'review',
      amount: 800,
      card: { last4: '4954' },
      settledAt: null,
    });
    await provider.settle({ storeId, transactionId: result.transactionId!, outcome: 'paid' });
    expect(await provider.lookupCharge({ storeId, idempotencyKey: k })).toMatchObject({
      outcome: { status: 'review' },
      state: 'paid',
      settledAt: expect.any(Number),
    });
  });

  it('a refusal before the card looks up with no state (nothing charged)', async () => {
    const k = key();
    await provider.chargeCard({
      storeId,
      idempotencyKey: k,
      cardToken: await tokenOf('4242424242424242'),
      amount: 424242,
      currency: 'brl',
      description: null,
    });
    expect(await provider.lookupCharge({ storeId, idempotencyKey: k })).toMatchObject({ outcome: { status: 'refused' }, state: null });
  });

  it('an approval is refunded, a review voided (its later notice refused), each once however often asked; a decline has nothing to give back', async () => {
    const approvedKey = key();
    await provider.chargeCard({
      storeId,
      idempotencyKey: approvedKey,
      cardToken: await tokenOf('4242424242424242'),
      amount: 900,
      currency: 'brl',
      description: null,
    });
    const refunds = await Promise.all([1, 2, 3].map(() => provider.refundCharge({ storeId, chargeKey: approvedKey })));
    expect(refunds.map((r) => r.ok && r.status)).toEqual(['refunded', 'refunded', 'refunded']);
    expect(await provider.lookupCharge({ storeId, idempotencyKey: approvedKey })).toMatchObject({ state: 'refunded' });

    const reviewKey = key();
    const review = await provider.chargeCard({
      storeId,
      idempotencyKey: reviewKey,
      cardToken: await tokenOf('4000000000004954'),
      amount: 900,
      currency: 'brl',
      description: null,
    });
    expect(await provider.refundCharge({ storeId, chargeKey: reviewKey })).toMatchObject({ ok: true, status: 'voided' });
    expect(await provider.settle({ storeId, transactionId: review.transactionId!, outcome: 'paid' })).toMatchObject({ ok: false });

    const declinedKey = key();
    await provider.chargeCard({
      storeId,
      idempotencyKey: declinedKey,
      cardToken: await tokenOf('4000000000000002'),
      amount: 900,
      currency: 'brl',
      description: null,
    });
    expect(await provider.refundCharge({ storeId, chargeKey: declinedKey })).toMatchObject({ ok: false });
    expect(await provider.refundCharge({ storeId, chargeKey: key() })).toMatchObject({ ok: false });
  });
});

describe('idempotency of charges', () => {
  it('20 concurrent charges with one key give one transaction and one ledger entry', async () => {
    const card = await savedCard('4242424242424242');
    const k = key();
    const results = await Promise.all(Array.from({ length: 20 }, () => charge(card.paymentMethodId, 1234, k)));
    const ids = new Set(results.map((r) => r.transactionId));
    expect(ids.size).toBe(1);
    expect(await mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ store_id: storeId, key: k })).toBe(1);
  });

  it('a new connection object (as after a worker restart) returns the first result for the key', async () => {
    const card = await savedCard('4000000000000002');
    const k = key();
    const first = await charge(card.paymentMethodId, 900, k);
    const again = await createTestConnection({ db: mongo.db }).chargeSavedCard({
      storeId,
      idempotencyKey: k,
      paymentMethodId: card.paymentMethodId,
      amount: 900,
      currency: 'brl',
      description: 'test',
    });
    expect(again).toEqual(first);
  });

  it('the same key with a different amount is refused with provider_error instead of charging', async () => {
    const card = await savedCard('4242424242424242');
    const k = key();
    await charge(card.paymentMethodId, 1000, k);
    expect(await charge(card.paymentMethodId, 2000, k)).toMatchObject({ status: 'refused', code: 'provider_error' });
  });

  it('a charge whose caller gave up (its signal aborted) is refused with the abort and never recorded; the key then charges once', async () => {
    const card = await savedCard('4242424242424242');
    const token = await tokenOf('4242424242424242');
    const [saved, checkout, pix] = [key(), key(), key()];
    const gaveUp = new AbortController();
    gaveUp.abort(new Error('the activity timed out'));
    const signal = gaveUp.signal;
    const common = { storeId, amount: 700, currency: 'brl', description: 'test', signal };
    await expect(provider.chargeSavedCard({ ...common, idempotencyKey: saved, paymentMethodId: card.paymentMethodId })).rejects.toThrow(
      'the activity timed out',
    );
    await expect(provider.chargeCard({ ...common, idempotencyKey: checkout, cardToken: token })).rejects.toThrow('the activity timed out');
    await expect(provider.createPix({ ...common, idempotencyKey: pix })).rejects.toThrow('the activity timed out');
    for (const k of [saved, checkout, pix]) expect(await provider.lookupCharge({ storeId, idempotencyKey: k })).toBeNull();
    expect(await charge(card.paymentMethodId, 700, saved)).toMatchObject({ status: 'approved' });
  });
});

describe('charges with the buyer present (checkout) and PIX', () => {
  it('0341 is approved at checkout and saved; its later unattended charge declines card_declined', async () => {
    const result = await provider.chargeCard({
      storeId,
      idempotencyKey: key(),
      cardToken: await tokenOf('4000000000000341'),
      amount: 5000,
      currency: 'brl',
      description: null,
      saveCard: true,
    });
    expect(result).toMatchObject({ status: 'approved', card: { brand: 'visa', last4: '0341', chargeable: true } });
    expect(await charge(result.card!.paymentMethodId)).toMatchObject({ status: 'declined', code: 'card_declined' });
  });

  it('3184 is approved at checkout with the buyer present', async () => {
    const result = await provider.chargeCard({
      storeId,
      idempotencyKey: key(),
      cardToken: await tokenOf('4000002760003184'),
      amount: 5000,
      currency: 'brl',
      description: null,
      saveCard: true,
    });
    expect(result).toMatchObject({ status: 'approved', card: { last4: '3184', chargeable: false } });
  });

  it('0002 and 9995 decline at checkout, 4954 goes to review, 424242 is refused', async () => {
    const at = async (number: string, amount = 5000) =>
      provider.chargeCard({ storeId, idempotencyKey: key(), cardToken: await tokenOf(number), amount, currency: 'brl', description: null });
    expect(await at('4000000000000002')).toMatchObject({ status: 'declined', code: 'card_declined', card: null });
    expect(await at('4000000000009995')).toMatchObject({ status: 'declined', code: 'insufficient_funds' });
    expect(await at('4000000000004954')).toMatchObject({ status: 'review' });
    expect(await at('4242424242424242', 424242)).toMatchObject({ status: 'refused', code: 'provider_error' });
  });

  it('the card number is kept nowhere in the database: only pm_ id, brand and last4', async () => {
    await provider.chargeCard({
      storeId,
      idempotencyKey: key(),
      cardToken: await tokenOf('4242424242424242'),
      amount: 5000,
      currency: 'brl',
      description: null,
      saveCard: true,
    });
    for (const name of [TEST_CARDS_COLLECTION, TEST_CHARGES_COLLECTION, TEST_TOKENS_COLLECTION]) {
      const docs = await mongo.db.collection(name).find({}).toArray();
      expect(JSON.stringify(docs)).not.toContain('4242424242424242');
    }
  });

  it('PIX is pending with a copy-paste code valid 30 minutes, and expires unpaid after that', async () => {
    let clock = Date.UTC(2026, 0, 1);
    const timed = createTestConnection({ db: mongo.db, now: () => clock });
    const pix = await timed.createPix({ storeId, idempotencyKey: key(), amount: 3000, currency: 'brl', description: null });
    expect(pix).toMatchObject({ status: 'pending', copyPaste: expect.any(String), expiresAt: clock / 1000 + PIX_VALIDITY_SECONDS });
    const tx = (pix as { transactionId: string }).transactionId;
    expect((await timed.getTransaction({ storeId, transactionId: tx }))?.state).toBe('pix_pending');
    clock += PIX_VALIDITY_SECONDS * 1000;
    expect((await timed.getTransaction({ storeId, transactionId: tx }))?.state).toBe('expired');
    expect(await timed.settle({ storeId, transactionId: tx, outcome: 'paid' })).toMatchObject({ ok: false });
  });

  it('cancelPending fences a pending PIX: canceled (a later payment refused, asking again answers the same); a PIX paid first answers succeeded', async () => {
    const pixKey = key();
    const pix = await provider.createPix({ storeId, idempotencyKey: pixKey, amount: 3000, currency: 'brl', description: null });
    const tx = (pix as { transactionId: string }).transactionId;
    expect(await provider.cancelPending({ storeId, chargeKey: pixKey })).toEqual({ status: 'canceled', transactionId: tx });
    expect(await provider.settle({ storeId, transactionId: tx, outcome: 'paid' })).toMatchObject({ ok: false });
    expect(await provider.cancelPending({ storeId, chargeKey: pixKey })).toEqual({ status: 'canceled', transactionId: tx });
    expect((await provider.getTransaction({ storeId, transactionId: tx }))?.state).toBe('expired');

    const paidKey = key();
    const paid = await provider.createPix({ storeId, idempotencyKey: paidKey, amount: 3000, currency: 'brl', description: null });
    const paidTx = (paid as { transactionId: string }).transactionId;
    expect((await provider.settle({ storeId, transactionId: paidTx, outcome: 'paid' })).ok).toBe(true);
    expect(await provider.cancelPending({ storeId, chargeKey: paidKey })).toMatchObject({ status: 'succeeded', transactionId: paidTx, amount: 3000 });
    await expect(provider.cancelPending({ storeId, chargeKey: key() })).rejects.toThrow(/no transaction/);
  });

  it('installments: BRL by default, the configured currencies otherwise; the approved outcome carries the plan only where honoured', async () => {
    expect(provider.installmentsAvailable('BRL')).toBe(true);
    expect(provider.installmentsAvailable('usd')).toBe(false);
    const configured = createTestConnection({ db: mongo.db, installmentCurrencies: ['usd'] });
    expect(configured.installmentsAvailable('usd')).toBe(true);
    const card = { storeId, amount: 9000, description: null, installments: 3 };
    const brl = await provider.chargeCard({ ...card, idempotencyKey: key(), currency: 'brl', cardToken: await tokenOf('4242424242424242') });
    expect(brl).toMatchObject({ status: 'approved', installments: 3 });
    const usd = await provider.chargeCard({ ...card, idempotencyKey: key(), currency: 'usd', cardToken: await tokenOf('4242424242424242') });
    expect(usd.status).toBe('approved');
    expect(usd).not.toHaveProperty('installments');
  });

  it('a PIX paid notice settles it as paid', async () => {
    const pix = await provider.createPix({ storeId, idempotencyKey: key(), amount: 3000, currency: 'brl', description: null });
    const tx = (pix as { transactionId: string }).transactionId;
    expect(await provider.settle({ storeId, transactionId: tx, outcome: 'paid' })).toMatchObject({ ok: true, notice: { status: 'paid' } });
  });
});

describe('customer registration', () => {
  it('refuses e-mails at reject.test', async () => {
    expect(await provider.registerCustomer({ storeId, customerId: 'cust_1', email: 'a@reject.test', name: null })).toMatchObject({ ok: false });
  });
});
