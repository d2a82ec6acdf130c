// What this tests: lookups by charge key through the Stripe connection against stripe-mock behind a
// recording proxy, with the charge keys' accounts pinned in FerretDB (store/charge-accounts.ts). A lookup
// that cannot be complete is unknown (it throws; the activity asks again), never "not found": search
// unavailable and the newest intents without the key; an empty search for a key pinned moments ago (the
// index lags); a pinned key's listing starts at its pin. A retried unattended charge whose lookup is unknown does not charge again; once search
// answers, the key's intent is found. After the store's connected account changed, every request under a
// key charged before (lookup, cancel, refund, and a merchant's refund of it) still goes to the account the key
// was charged under.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PaymentProvider } from '../../../adapters/provider/types';
import { createStripeConnection } from '../../../adapters/provider/stripe/connection';
import { CLOCK_SKEW_ALLOWANCE_S, LookupIncompleteError, LOOKUP_LIST_PAGES } from '../../../adapters/provider/stripe/lookup';
import { chargeAccountPins, findChargeAccount } from '../../../store/charge-accounts';
import { ensureIndexes } from '../../../store/indexes';
import { chargeSavedCardOnce } from '../../../services/provider/charge-once';
import { InjectedAnswer, startHttpRecorder, type HttpRecorder, type ResponseRewrite } from '../../support/http-recorder';
import { FAKE_STRIPE_SECRET_KEY, startStripeMock, type RunningStripeFake } from '../../support/stripe-fakes';
import { testMongo, type TestMongo } from '../../support/env';

const STORE = 'st_lookups';
const FIRST_ACCOUNT = 'acct_1LookupsFirst00';
const LATER_ACCOUNT = 'acct_1LookupsLater00';

let mock: RunningStripeFake;
let recorder: HttpRecorder;
let mongo: TestMongo;
/** The store's connected account as the admin CLI sets it. */
let storeAccount: string | null = FIRST_ACCOUNT;
let seq = 0;
const newKey = () => `usage:cs_lookups${Date.now().toString(36)}${++seq}`;

/** A connection as a process builds it; a new one reads the store's account afresh (no 30 s cache in between). */
function connection(): PaymentProvider {
  return createStripeConnection({
    config: { secretKey: FAKE_STRIPE_SECRET_KEY, apiUrl: recorder.url, livemode: false },
    accountOf: async () => storeAccount,
    chargeAccounts: chargeAccountPins(mongo.db),
  });
}

beforeAll(async () => {
  mock = await startStripeMock();
  recorder = await startHttpRecorder(mock.url);
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
});
afterAll(async () => {
  await recorder?.close();
  await mock?.stop();
  await mongo?.close();
});
afterEach(() => {
  recorder.setRewrite(null);
  recorder.clear();
  storeAccount = FIRST_ACCOUNT;
});

const only = (method: string, path: string | RegExp) =>
  recorder.exchanges.filter((e) => e.method === method && (typeof path === 'string' ? e.path === path : path.test(e.path)));

const SEARCH = '/v1/payment_intents/search';
const unavailableSearch = () =>
  new InjectedAnswer(400, { error: { type: 'invalid_request_error', message: 'Search is not available on this account.' } });
const asIs = (json: unknown) => json;
const emptySearch = (json: unknown) => ({ ...(json as object), data: [] });
/** A busy account: every page of the listing has more after it, none holding our key. */
const busyListing = (json: unknown) => ({ ...(json as object), has_more: true });
const ours = (key: string, fields: Record<string, unknown>) => (json: unknown) => {
  const answer = json as { data: Record<string, unknown>[] };
  return {
    ...answer,
    data: answer.data.slice(0, 1).map((intent) => ({ ...intent, metadata: { charge_key: key, store_id: STORE, kind: 'saved_card' }, ...fields })),
  };
};

function answering(search: (json: unknown) => unknown, list: (json: unknown) => unknown = busyListing): ResponseRewrite {
  return (sent, json) => {
    if (sent.path === SEARCH) return search(json);
    if (sent.path === '/v1/payment_intents' && sent.method === 'GET') return list(json);
    if (sent.path.startsWith('/v1/payment_methods/')) return { ...(json as object), customer: 'cus_lookups' };
    return json;
  };
}

const savedCardCharge = (key: string) => ({
  storeId: STORE,
  idempotencyKey: key,
  paymentMethodId: 'pm_saved',
  amount: 4990,
  currency: 'brl',
  description: 'Usage',
  notifyRef: 'charge/st_lookups/x',
});

describe('a lookup that cannot be complete is unknown', () => {
  it(`search unavailable and the newest ${LOOKUP_LIST_PAGES * 100} intents without the key: lookup and give-back throw (unknown), never "nothing charged"; once search answers, the intent is found`, async () => {
    const stripe = connection();
    const key = newKey();
    recorder.setRewrite(answering(() => unavailableSearch()));
    await expect(stripe.lookupCharge({ storeId: STORE, idempotencyKey: key })).rejects.toBeInstanceOf(LookupIncompleteError);
    expect(only('GET', '/v1/payment_intents')).toHaveLength(LOOKUP_LIST_PAGES);
    await expect(stripe.refundCharge({ storeId: STORE, chargeKey: key })).rejects.toBeInstanceOf(LookupIncompleteError);
    expect(only('POST', /^\/v1\/(refunds|payment_intents\/.*\/cancel)$/)).toHaveLength(0);

    recorder.setRewrite(answering(ours(key, { status: 'succeeded', amount: 4990, currency: 'brl', latest_charge: null })));
    expect(await stripe.lookupCharge({ storeId: STORE, idempotencyKey: key })).toMatchObject({
      idempotencyKey: key,
      state: 'approved',
      amount: 4990,
    });
  });

  it('a retried unattended charge whose lookup is unknown throws instead of charging again; the retry after search recovers returns the first outcome, one intent made', async () => {
    const stripe = connection();
    const key = newKey();
    recorder.setRewrite(answering(asIs, asIs));
    const first = await stripe.chargeSavedCard(savedCardCharge(key));
    expect(only('POST', '/v1/payment_intents')).toHaveLength(1);
    recorder.setRewrite(answering(() => unavailableSearch()));
    await expect(chargeSavedCardOnce(stripe, savedCardCharge(key), { retry: true })).rejects.toBeInstanceOf(LookupIncompleteError);
    expect(only('POST', '/v1/payment_intents')).toHaveLength(1);
    recorder.setRewrite(answering(ours(key, { id: first.transactionId, status: 'succeeded', latest_charge: null })));
    expect(await chargeSavedCardOnce(stripe, savedCardCharge(key), { retry: true })).toEqual({
      status: 'approved',
      transactionId: first.transactionId,
    });
    expect(only('POST', '/v1/payment_intents')).toHaveLength(1);
  });

  it('an empty search for a key pinned moments ago (the index lags) with an incomplete listing is unknown; a key never charged is not found, nor one whose listing since its pin is complete', async () => {
    const stripe = connection();
    const key = newKey();
    recorder.setRewrite(answering(asIs, asIs));
    await stripe.chargeSavedCard(savedCardCharge(key));
    recorder.setRewrite(answering(emptySearch));
    await expect(stripe.lookupCharge({ storeId: STORE, idempotencyKey: key })).rejects.toBeInstanceOf(LookupIncompleteError);
    expect(await stripe.lookupCharge({ storeId: STORE, idempotencyKey: newKey() })).toBeNull();
    recorder.setRewrite(
      answering(
        () => unavailableSearch(),
        (json) => ({ ...(json as object), has_more: false }),
      ),
    );
    recorder.clear();
    expect(await stripe.lookupCharge({ storeId: STORE, idempotencyKey: key })).toBeNull();
    // Only intents made since the pin (less the clock allowance) can be the key's: the listing starts there.
    const pinnedAt = (await findChargeAccount(mongo.db, STORE, key))!.pinnedAt.getTime() / 1000;
    const [listing] = only('GET', '/v1/payment_intents');
    expect(Number(listing.query.get('created[gte]'))).toBe(Math.floor(pinnedAt) - CLOCK_SKEW_ALLOWANCE_S);
  });
});

describe('requests under a key go to the account it was charged under', () => {
  it("after the store's account changed, lookup, cancel and refund of a key charged before still ask under the first account; a new key goes to the new one", async () => {
    const key = newKey();
    recorder.setRewrite(answering(asIs, asIs));
    await connection().chargeSavedCard(savedCardCharge(key));
    expect(only('POST', '/v1/payment_intents')[0].headers['stripe-account']).toBe(FIRST_ACCOUNT);
    expect(await findChargeAccount(mongo.db, STORE, key)).toMatchObject({ account: FIRST_ACCOUNT });

    storeAccount = LATER_ACCOUNT;
    const stripe = connection();
    recorder.clear();
    recorder.setRewrite(answering(ours(key, { status: 'requires_capture' })));
    expect(await stripe.lookupCharge({ storeId: STORE, idempotencyKey: key })).toMatchObject({ state: 'review' });
    expect(await stripe.refundCharge({ storeId: STORE, chargeKey: key })).toMatchObject({ ok: true, status: 'voided' });
    recorder.setRewrite(answering(ours(key, { status: 'succeeded', latest_charge: null })));
    expect(await stripe.refundCharge({ storeId: STORE, chargeKey: key })).toMatchObject({ ok: true, status: 'refunded' });
    // A retry of the charge itself, too.
    await stripe.chargeSavedCard(savedCardCharge(key));
    for (const exchange of recorder.exchanges) expect(exchange.headers['stripe-account'], `${exchange.method} ${exchange.path}`).toBe(FIRST_ACCOUNT);
    expect(only('POST', /\/cancel$/)).toHaveLength(1);
    expect(only('POST', '/v1/refunds')).toHaveLength(1);

    recorder.clear();
    recorder.setRewrite(answering(asIs));
    const fresh = newKey();
    await stripe.chargeSavedCard(savedCardCharge(fresh));
    expect(recorder.exchanges.map((e) => e.headers['stripe-account'])).toEqual([LATER_ACCOUNT, LATER_ACCOUNT]);
    expect(await findChargeAccount(mongo.db, STORE, fresh)).toMatchObject({ account: LATER_ACCOUNT });
  });

  it("a merchant's refund (and its lookup by refund key) of a payment charged before the store's account changed goes to the first account", async () => {
    const key = newKey();
    recorder.setRewrite(answering(asIs, asIs));
    const charged = await connection().chargeSavedCard(savedCardCharge(key));
    storeAccount = LATER_ACCOUNT;
    const stripe = connection();
    recorder.clear();
    const refund = { storeId: STORE, transactionId: charged.transactionId!, refundKey: `refund/rf_${key}`, chargeKey: key };
    expect(await stripe.refund({ ...refund, amount: 1000, reason: 'requested_by_customer' })).toMatchObject({ status: 'refunded' });
    await stripe.lookupRefund(refund);
    expect(only('POST', '/v1/refunds')).toHaveLength(1);
    expect(only('GET', '/v1/refunds')).toHaveLength(1);
    for (const exchange of recorder.exchanges) expect(exchange.headers['stripe-account'], `${exchange.method} ${exchange.path}`).toBe(FIRST_ACCOUNT);

    // A refund whose payment's key is unknown (an order from before keys were recorded) asks under the store's account.
    recorder.clear();
    await stripe.lookupRefund({ ...refund, chargeKey: null });
    expect(recorder.exchanges.map((e) => e.headers['stripe-account'])).toEqual([LATER_ACCOUNT]);
  });
});
