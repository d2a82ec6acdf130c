// What this tests: the bound of one charge per currency (issue 38 point 8) over real HTTP with the real
// worker and the test payment connection: an ordinary VND charge the old bound (a million units) refused
// succeeds; above the currency's default it is 400 parameter_invalid on amount with nothing charged; a
// store's own bound (admin CLI) still overrides the default; a usage period above the bound (the default, or
// the store's own) closes with a failed charge (failure_code amount_too_large, no order, nothing at the
// provider) through the usage workflow, and one within the store's bound is charged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSubscriptionStack, type SubscriptionStack } from '../../support/subscription-stack';
import { TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import { runAdmin } from '../../../admin/cli';
import { merchantChargeKey, usageChargeKey } from '../../../domain/charges';
import { defaultChargeBound } from '../../../domain/charge-bounds';
import { createOffer, createProduct } from '../../../store/catalog';
import { collections, type OfferDoc } from '../../../store/collections';
import type { SubscriptionDoc } from '../../../store/subscriptions';
import { findUsageState } from '../../../store/usage';
import { waitFor } from '../../support/env';
import { call, createTestStore, type TestStore } from '../../support/api';
import { seedSubscription } from '../../support/subscriptions';
import { seedUsageSubscription } from '../../support/usage';

let stack: SubscriptionStack;
let vndTrial: OfferDoc;
let vndMonthly: OfferDoc;
let seq = 0;
const newKey = () => `bound-${Date.now()}-${++seq}`;

beforeAll(async () => {
  stack = await startSubscriptionStack('charge-bounds');
  const vnd = (name: string, extra: Partial<Parameters<typeof createOffer>[1]> = {}) =>
    createOffer(stack.mongo.db, {
      storeId: stack.store.store._id,
      productId: stack.catalog.product._id,
      name,
      type: 'recurring',
      billingCycle: 'monthly',
      prices: [{ currency: 'vnd', amount: 250_000, default: true }],
      ...extra,
    });
  vndTrial = await vnd('Image API VND with trial', { trialDays: 7 });
  vndMonthly = await vnd('Image API VND monthly');
});

afterAll(async () => {
  await stack?.close();
});

/** A trialing VND subscription with a saved test card (nothing charged until the charges below). */
async function vndSubscription(store: TestStore = stack.store): Promise<SubscriptionDoc> {
  const { mongo, temporal, taskQueue, catalog } = stack;
  return seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: vndTrial, product: catalog.product, currency: 'vnd' },
  );
}

const charge = (sub: { _id: string }, amount: number, key = newKey(), apiKey = stack.store.key) =>
  call(stack.api, apiKey, 'POST', `/v1/subscriptions/${sub._id}/charges`, { json: { amount }, headers: { 'idempotency-key': key } });

const ledgerCount = (storeId: string, key: string) => stack.mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ store_id: storeId, key });

describe('one-off charges in VND', () => {
  it('2,000,000,000 VND (an ordinary amount the old bound of a million units refused) is charged: 201 succeeded', async () => {
    const res = await charge(await vndSubscription(), 2_000_000_000);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'succeeded', amount: 2_000_000_000, currency: 'vnd' });
  });

  it("above the currency's default bound (10^11 VND): 400 parameter_invalid on amount naming the bound, nothing at the provider", async () => {
    const bound = defaultChargeBound('vnd');
    expect(bound).toBe(100_000_000_000);
    const sub = await vndSubscription();
    const key = newKey();
    const res = await charge(sub, bound + 1, key);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_invalid', param: 'amount' });
    expect(res.body.error.message).toContain(`at most ${bound} in the minor unit of vnd`);
    expect(await ledgerCount(stack.store.store._id, merchantChargeKey(key))).toBe(0);
    expect((await charge(sub, bound)).body).toMatchObject({ status: 'succeeded', amount: bound });
  });

  it("a store's own bound (admin CLI stores set --max-charge-amount) overrides the VND default, both ways", async () => {
    const own = await createTestStore(stack.mongo.db);
    const sub = await vndSubscription(own);
    const env = { ...process.env, MONGODB_DB: stack.mongo.db.databaseName };
    const set = async (value: string) => expect((await runAdmin(['stores', 'set', own.store._id, '--max-charge-amount', value], env)).code).toBe(0);
    await set('3000000');
    // The API reads store flags at most a second old.
    const refused = await waitFor(
      async () => {
        const res = await charge(sub, 3_000_001, newKey(), own.key);
        return res.status === 400 ? res : null;
      },
      { description: 'the bound of 3,000,000 VND to apply' },
    );
    expect(refused.body.error).toMatchObject({ code: 'parameter_invalid', param: 'amount' });
    expect((await charge(sub, 3_000_000, newKey(), own.key)).status).toBe(201);
    // Above the default too: the store's bound is the merchant's to choose.
    await set(String(defaultChargeBound('vnd') * 10));
    await waitFor(async () => ((await charge(sub, defaultChargeBound('vnd') + 1, newKey(), own.key)).status === 201 ? true : null), {
      description: "the store's bound above the default to apply",
    });
  });
});

interface ClosedPeriod {
  id: string;
  close_reason: string;
  amount_total: number;
  charge: string;
}

/**
 * A usage period of `units` at `unitAmount` on a new subscription of `owner`, closed at its threshold by
 * the usage workflow and charged; the period and its charge as the API shows them.
 */
async function chargedUsagePeriod(owner: TestStore, offer: OfferDoc, currency: string, unitAmount: number, units: number) {
  const { mongo, taskQueue } = stack;
  const post = (path: string, json: unknown) => call(stack.api, owner.key, 'POST', path, { json });
  const { subscription: sub, customer } = await seedUsageSubscription({ db: mongo.db, taskQueue }, { store: owner.store, offer, currency });
  const periods = async () => (await call(stack.api, owner.key, 'GET', `/v1/subscriptions/${sub._id}/usage`)).body.data;
  const meter = (await post('/v1/billing/meters', { display_name: 'Renders', event_name: `bound.render.${seq++}` })).body;
  // A threshold of one minor unit: the workflow closes the period a few seconds after the events.
  const item = await post(`/v1/subscriptions/${sub._id}/usage_items`, { meter: meter.id, unit_amount: unitAmount, billing_threshold: 1 });
  expect(item.status).toBeLessThan(300);
  // Ingestion signals the workflow only once it has priced the item (the state knows the threshold);
  // an event before that waits for the 10-minute recompute.
  await waitFor(async () => (await findUsageState(mongo.db, owner.store._id, sub._id))?.threshold ?? null, {
    timeoutMs: 30_000,
    description: 'period open with its threshold',
  });
  const event = await post('/v1/billing/meter_events', { event_name: meter.event_name, payload: { customer_id: customer._id, value: units } });
  expect(event.status).toBe(201);
  const period: ClosedPeriod = await waitFor(
    // The next period opens at once: the closed one is the one with a charge.
    async () => (await periods()).find((p: { status: string; charge: string | null }) => p.status === 'closed' && p.charge) ?? null,
    { timeoutMs: 60_000, description: 'period closed and charged at the threshold' },
  );
  const charge = (await call(stack.api, owner.key, 'GET', `/v1/subscription_charges/${period.charge}`)).body;
  return { period, charge };
}

describe('usage charges', () => {
  it('a usage period above the bound closes with a failed charge amount_too_large: no order, nothing at the provider', async () => {
    // 101 units at 10^9 VND: 1.01 x 10^11, above the VND default of 10^11.
    const { period, charge } = await chargedUsagePeriod(stack.store, vndMonthly, 'vnd', 1_000_000_000, 101);
    expect(period).toMatchObject({ close_reason: 'threshold', amount_total: 101_000_000_000 });
    expect(charge).toMatchObject({
      status: 'failed',
      source: 'usage',
      amount: 101_000_000_000,
      failure_code: 'amount_too_large',
      order: null,
      transaction: null,
    });
    expect(charge.failure_message).toContain(`above the bound of one charge in vnd, ${defaultChargeBound('vnd')}`);
    expect(await ledgerCount(stack.store.store._id, usageChargeKey(period.id))).toBe(0);
  }, 90_000);

  it("a store's own bound holds usage charges too: above it failed amount_too_large, within it charged", async () => {
    const own = await createTestStore(stack.mongo.db);
    await collections(stack.mongo.db).stores.updateOne({ _id: own.store._id }, { $set: { max_charge_amount: 5_000_000 } });
    const offer = await createOffer(stack.mongo.db, {
      storeId: own.store._id,
      productId: (await createProduct(stack.mongo.db, { storeId: own.store._id, name: 'Renders', family: 'platform' }))._id,
      name: 'Renders VND monthly',
      type: 'recurring',
      billingCycle: 'monthly',
      prices: [{ currency: 'vnd', amount: 250_000, default: true }],
    });
    const over = await chargedUsagePeriod(own, offer, 'vnd', 1_000_000, 6);
    expect(over.charge).toMatchObject({ status: 'failed', amount: 6_000_000, failure_code: 'amount_too_large', order: null });
    expect(over.charge.failure_message).toContain('above the bound of one charge in vnd, 5000000');
    const within = await chargedUsagePeriod(own, offer, 'vnd', 1_000_000, 5);
    expect(within.charge).toMatchObject({ status: 'succeeded', amount: 5_000_000, failure_code: null });
  }, 120_000);
});
