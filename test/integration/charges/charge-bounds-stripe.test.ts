// What this tests: with the Stripe connection (stripe-mock behind the recording proxy), a charge above
// Stripe's own maximum for the currency (99,999,999 in VND) is refused by us before any request reaches
// Stripe: a one-off charge gets 400 parameter_invalid on amount (a store's bound above Stripe's included);
// a usage charge through the real charge workflow fails with amount_too_large. The same connection sends
// an amount at the maximum (the recorder sees it), so the silence is the bound's, not a wiring fault.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStripeConnection } from '../../../adapters/provider/stripe/connection';
import type { PaymentProvider } from '../../../adapters/provider/types';
import { usageChargeKey, usageIdempotencyKey } from '../../../domain/charges';
import { stripeMaxCharge } from '../../../domain/charge-bounds';
import { newId } from '../../../domain/ids';
import { startCharge } from '../../../services/charges/charges';
import { createOffer } from '../../../store/catalog';
import { collections, type OfferDoc } from '../../../store/collections';
import { chargesCollection } from '../../../store/subscription-charges';
import type { SubscriptionDoc } from '../../../store/subscriptions';
import { startHttpRecorder, type HttpRecorder } from '../../support/http-recorder';
import { FAKE_STRIPE_SECRET_KEY, startStripeMock, type RunningStripeFake } from '../../support/stripe-fakes';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { seedCatalog, seedSubscription, type TestCatalog } from '../../support/subscriptions';
import { createTestWorker } from '../../support/worker';

let mock: RunningStripeFake;
let recorder: HttpRecorder;
let stripe: PaymentProvider;
let mongo: TestMongo;
let temporal: TestTemporal;
let worker: Worker;
let running: Promise<void>;
let api: TestApi;
let store: TestStore;
let catalog: TestCatalog;
let vndTrial: OfferDoc;
const taskQueue = uniqueTaskQueue('charge-bounds-stripe');
let seq = 0;

beforeAll(async () => {
  mock = await startStripeMock();
  recorder = await startHttpRecorder(mock.url);
  stripe = createStripeConnection({ config: { secretKey: FAKE_STRIPE_SECRET_KEY, apiUrl: recorder.url, livemode: false } });
  mongo = await testMongo();
  temporal = await testTemporal();
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue, provider: stripe, testProvider: null });
  worker = await createTestWorker(mongo, temporal, taskQueue, { provider: stripe, testProvider: null });
  running = worker.run();
  store = await createTestStore(mongo.db);
  catalog = await seedCatalog(mongo.db, store.store._id);
  vndTrial = await createOffer(mongo.db, {
    storeId: store.store._id,
    productId: catalog.product._id,
    name: 'Image API VND with trial',
    type: 'recurring',
    billingCycle: 'monthly',
    prices: [{ currency: 'vnd', amount: 250_000, default: true }],
    trialDays: 7,
  });
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await api?.close();
  await temporal?.close();
  await mongo?.close();
  await recorder?.close();
  await mock?.stop();
});

/** A trialing VND subscription with a saved card (a pm_ id; its workflow is not needed for these charges). */
async function vndSubscription(owner: TestStore = store): Promise<SubscriptionDoc> {
  return seedSubscription({ db: mongo.db, taskQueue }, { store: owner.store, offer: vndTrial, product: catalog.product, currency: 'vnd' });
}

const charge = (sub: { _id: string }, amount: number, apiKey = store.key) =>
  call(api, apiKey, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
    json: { amount },
    headers: { 'idempotency-key': `stripe-bound-${Date.now()}-${++seq}` },
  });

describe("above Stripe's maximum for the currency", () => {
  it('a one-off charge of 100,000,000 VND: 400 parameter_invalid on amount naming 99999999, no request to Stripe', async () => {
    const sub = await vndSubscription();
    recorder.clear();
    const res = await charge(sub, stripeMaxCharge('vnd') + 1);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_invalid', param: 'amount' });
    expect(res.body.error.message).toContain('at most 99999999 in the minor unit of vnd');
    expect(recorder.exchanges).toEqual([]);
  });

  it("a store's own bound above Stripe's maximum is held to Stripe's: still 400, no request", async () => {
    const own = await createTestStore(mongo.db);
    await collections(mongo.db).stores.updateOne({ _id: own.store._id }, { $set: { max_charge_amount: 500_000_000 } });
    const sub = await vndSubscription(own);
    recorder.clear();
    const res = await charge(sub, 200_000_000, own.key);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'parameter_invalid', param: 'amount' });
    expect(res.body.error.message).toContain('at most 99999999');
    expect(recorder.exchanges).toEqual([]);
  });

  it('a usage charge through the charge workflow fails with amount_too_large; Stripe never asked', async () => {
    const sub = await vndSubscription();
    const periodId = newId('usp');
    recorder.clear();
    // Without the connections (as a caller that has none): the charge's activity holds Stripe's maximum itself.
    const result = await startCharge(
      { db: mongo.db, temporal: temporal.client, taskQueue },
      {
        storeId: store.store._id,
        subscriptionId: sub._id,
        key: usageChargeKey(periodId),
        amount: 150_000_000,
        source: 'usage',
        billingReason: 'usage',
        request: { id: null, idempotency_key: usageIdempotencyKey(periodId) },
      },
    );
    expect(result.charge).toMatchObject({ status: 'failed', source: 'usage', failure_code: 'amount_too_large', order: null, transaction: null });
    expect(result.charge.failure_message).toContain('above the bound of one charge in vnd, 99999999');
    expect(await chargesCollection(mongo.db).countDocuments({ store_id: store.store._id, key: usageChargeKey(periodId) })).toBe(1);
    expect(recorder.exchanges).toEqual([]);
  }, 60_000);

  it('the same connection sends an amount at the maximum (the recorder sees the PaymentIntent)', async () => {
    recorder.clear();
    // stripe-mock's payment method has no customer; ours always has one.
    recorder.setRewrite((sent, json) => (sent.path.startsWith('/v1/payment_methods/') ? { ...(json as object), customer: 'cus_bound' } : json));
    await stripe.chargeSavedCard({
      storeId: store.store._id,
      idempotencyKey: `usage/${newId('usp')}`,
      paymentMethodId: 'pm_bound',
      amount: stripeMaxCharge('vnd'),
      currency: 'vnd',
      description: null,
    });
    const intents = recorder.exchanges.filter((e) => e.method === 'POST' && e.path === '/v1/payment_intents');
    recorder.setRewrite(null);
    expect(intents.map((e) => e.form.get('amount'))).toEqual([String(stripeMaxCharge('vnd'))]);
  });
});
