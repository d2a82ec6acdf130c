// What this tests: POST /v1/subscriptions/{id}/charges over real HTTP with the real worker and the
// test payment connection — every code of the spec's table, approved (order + events), declined
// (402 with the charge), in review settled by the provider notice (admin CLI), refused before the
// card (recorded under the key), permanent keys (replay after Temporal forgot the run), concurrent
// requests under one key, and the charge reads.
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSubscriptionStack, type SubscriptionStack } from '../../support/subscription-stack';
import { collections } from '../../../store/collections';
import { findSubscription, type SubscriptionDoc } from '../../../store/subscriptions';
import { ordersCollection } from '../../../store/orders';
import { chargesCollection } from '../../../store/subscription-charges';
import { TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import { runAdmin } from '../../../admin/cli';
import { startCharge } from '../../../services/charges/charges';
import { requestFingerprint } from '../../../api/plugins/idempotency';
import { chargeWorkflowId } from '../../../workflows/charge/messages';
import { merchantChargeKey, usageChargeKey, usageIdempotencyKey } from '../../../domain/charges';
import { newId } from '../../../domain/ids';
import { insertEndpoint } from '../../../store/webhook-endpoints';
import { CustomerIdKey, StoreIdKey, SubscriptionIdKey } from '../../../services/operations/search-attributes';
import { waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { patchesIn, recordHistory } from '../../support/histories';
import { call, createTestStore, type TestApi, type TestStore } from '../../support/api';
import { seedSubscription, type TestCatalog } from '../../support/subscriptions';

let mongo: TestMongo;
let temporal: TestTemporal;
let stack: SubscriptionStack;
let api: TestApi;
let store: TestStore;
let catalog: TestCatalog;
let taskQueue: string;
let keySeq = 0;
const newKey = () => `charge-key-${Date.now()}-${++keySeq}`;

beforeAll(async () => {
  stack = await startSubscriptionStack('subscription-charges');
  ({ mongo, temporal, api, store, catalog, taskQueue } = stack);
});

afterAll(async () => {
  await stack?.close();
});

/**
 * A trialing subscription (no charge until the trial ends, so the card's own behaviour shows only
 * in the charges this file makes); chargeable like active ones.
 */
async function subscription(card: string | null = '4242424242424242', storeDoc = store): Promise<SubscriptionDoc> {
  return seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: storeDoc.store, offer: catalog.trial, product: catalog.product, card },
  );
}

const charge = (sub: { _id: string }, json: unknown, key: string | null = newKey(), apiKey = store.key) =>
  call(api, apiKey, 'POST', `/v1/subscriptions/${sub._id}/charges`, { json, headers: key === null ? {} : { 'idempotency-key': key } });

function expectError(res: { status: number; body: any }, status: number, type: string, code: string, param: string | null = null) {
  expect(res.status).toBe(status);
  expect(res.body.error).toMatchObject({ type, code, param });
}

async function eventsOf(objectId: string): Promise<string[]> {
  const events = await collections(mongo.db).events.find({ store_id: store.store._id }).sort({ _id: 1 }).toArray();
  return events.filter((e) => (JSON.parse(e.data_json) as { object: { id: string } }).object.id === objectId).map((e) => e.type);
}

describe('the error table, in its order of checks', () => {
  it('no Idempotency-Key: 400 idempotency_key_required (idempotency_error), even before an invalid body or unknown subscription', async () => {
    const res = await charge({ _id: 'sub_unknown' }, { amount: 'not a number' }, null);
    expectError(res, 400, 'idempotency_error', 'idempotency_key_required', 'Idempotency-Key');
  });

  it('a key over 255 characters: 400 idempotency_key_too_long', async () => {
    const res = await charge({ _id: 'sub_unknown' }, { amount: 500 }, 'k'.repeat(256));
    expectError(res, 400, 'idempotency_error', 'idempotency_key_too_long', 'Idempotency-Key');
  });

  it('unknown subscription: 404 resource_missing', async () => {
    expectError(await charge({ _id: 'sub_unknown' }, { amount: 500 }), 404, 'invalid_request_error', 'resource_missing', 'id');
  });

  it('paused and canceled subscriptions: 400 subscription_not_chargeable', async () => {
    const paused = await subscription();
    expect((await call(api, store.key, 'POST', `/v1/subscriptions/${paused._id}/pause`)).status).toBe(200);
    expectError(await charge(paused, { amount: 500 }), 400, 'invalid_request_error', 'subscription_not_chargeable');
    const canceled = await subscription();
    expect((await call(api, store.key, 'DELETE', `/v1/subscriptions/${canceled._id}`)).status).toBe(200);
    expectError(await charge(canceled, { amount: 500 }), 400, 'invalid_request_error', 'subscription_not_chargeable');
  });

  it('an expired subscription: 400 subscription_not_chargeable', async () => {
    // Created 120 days ago on a 3-cycle offer: its workflow charges the three overdue cycles at once,
    // then the last period (already over) ends and the subscription expires.
    const backdated = await seedSubscription(
      { db: mongo.db, temporal: temporal.client, taskQueue },
      { store: store.store, offer: catalog.limited, product: catalog.product, now: Date.now() - 120 * 86_400_000 },
    );
    const expired = await waitFor(
      async () => {
        const doc = await findSubscription(mongo.db, store.store._id, backdated._id);
        return doc?.status === 'expired' ? doc : null;
      },
      { description: 'expired at the cycle limit', timeoutMs: 20_000 },
    );
    expect(expired.cycles_completed).toBe(3);
    expectError(await charge(expired, { amount: 500 }), 400, 'invalid_request_error', 'subscription_not_chargeable');
  });

  it('no saved card: 400 no_payment_method (checked before the body amounts)', async () => {
    expectError(await charge(await subscription(null), { amount: 1 }), 400, 'invalid_request_error', 'no_payment_method');
  });

  it('3184 card at a provider refusing unattended charges: 400 payment_method_not_chargeable', async () => {
    expectError(await charge(await subscription('4000002760003184'), { amount: 1 }), 400, 'invalid_request_error', 'payment_method_not_chargeable');
  });

  it('another currency: 400 currency_mismatch naming the right one', async () => {
    const res = await charge(await subscription(), { amount: 50, currency: 'usd' });
    expectError(res, 400, 'invalid_request_error', 'currency_mismatch', 'currency');
    expect(res.body.error.message).toContain('brl');
  });

  it('below one currency unit: 400 amount_too_small', async () => {
    expectError(await charge(await subscription(), { amount: 99 }), 400, 'invalid_request_error', 'amount_too_small', 'amount');
  });

  it("above the bound of one charge (the currency's default: 10^7 reais in brl): 400 parameter_invalid on amount, nothing at the provider", async () => {
    const sub = await subscription();
    const key = newKey();
    const res = await charge(sub, { amount: 900_000_000_000 }, key);
    expectError(res, 400, 'invalid_request_error', 'parameter_invalid', 'amount');
    expect(res.body.error.message).toContain('at most 1000000000 in the minor unit of brl');
    expect(await mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ store_id: store.store._id, key: merchantChargeKey(key) })).toBe(0);
    expect((await charge(sub, { amount: 100_000_000 })).body).toMatchObject({ status: 'succeeded', amount: 100_000_000 });
  });

  it("a store's own bound (admin CLI stores set --max-charge-amount) applies on the next requests; default restores the currency's", async () => {
    const own = await createTestStore(mongo.db);
    const sub = await subscription('4242424242424242', own);
    const env = { ...process.env, MONGODB_DB: mongo.db.databaseName };
    const set = await runAdmin(['stores', 'set', own.store._id, '--max-charge-amount', '5000', '--json'], env);
    expect([set.code, JSON.parse(set.output).max_charge_amount]).toEqual([0, 5000]);
    // The API reads store flags at most a second old.
    const refused = await waitFor(
      async () => {
        const res = await charge(sub, { amount: 5001 }, newKey(), own.key);
        return res.status === 400 ? res : null;
      },
      { description: 'the bound of 5000 to apply' },
    );
    expectError(refused, 400, 'invalid_request_error', 'parameter_invalid', 'amount');
    expect((await charge(sub, { amount: 5000 }, newKey(), own.key)).status).toBe(201);
    expect((await runAdmin(['stores', 'set', own.store._id, '--max-charge-amount', '0'], env)).code).not.toBe(0);
    expect((await runAdmin(['stores', 'set', own.store._id, '--max-charge-amount', 'default'], env)).code).toBe(0);
    await waitFor(async () => ((await charge(sub, { amount: 5001 }, newKey(), own.key)).status === 201 ? true : null), {
      description: 'the default bound again',
    });
  });

  it('lines not adding up: 400 lines_total_mismatch with both values in the message', async () => {
    const res = await charge(await subscription(), { amount: 1000, lines: [{ description: 'a', quantity: 2, unit_amount: 300 }] });
    expectError(res, 400, 'invalid_request_error', 'lines_total_mismatch', 'lines');
    expect(res.body.error.message).toMatch(/600/);
    expect(res.body.error.message).toMatch(/1000/);
  });

  it('store plan overdue: 403 project_inactive (permission_error)', async () => {
    const overdue = await createTestStore(mongo.db);
    await collections(mongo.db).stores.updateOne({ _id: overdue.store._id }, { $set: { plan_overdue: true } });
    const sub = await subscription('4242424242424242', overdue);
    expectError(await charge(sub, { amount: 500 }, newKey(), overdue.key), 403, 'permission_error', 'project_inactive');
  });

  it('amount 424242: 400 provider_error, recorded failed under the key; the same key replays the same 400', async () => {
    const sub = await subscription();
    const key = newKey();
    const res = await charge(sub, { amount: 424242 }, key);
    expectError(res, 400, 'invalid_request_error', 'provider_error');
    expect(res.body.error.subscription_charge).toMatchObject({ status: 'failed', failure_code: 'provider_error', order: null, transaction: null });
    const again = await charge(sub, { amount: 424242 }, key);
    expectError(again, 400, 'invalid_request_error', 'provider_error');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.error.subscription_charge.id).toBe(res.body.error.subscription_charge.id);
    const listed = await call(api, store.key, 'GET', `/v1/subscriptions/${sub._id}/charges?status=failed`);
    expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([res.body.error.subscription_charge.id]);
  });

  it('body shape: amount missing, more than 50 lines, a description over 140 characters: 400 parameter_missing / parameter_invalid', async () => {
    const sub = await subscription();
    expectError(await charge(sub, {}), 400, 'invalid_request_error', 'parameter_missing', 'amount');
    const lines = Array.from({ length: 51 }, () => ({ description: 'x', unit_amount: 100 }));
    expectError(await charge(sub, { amount: 5100, lines }), 400, 'invalid_request_error', 'parameter_invalid', 'lines');
    expectError(await charge(sub, { amount: 5100, lines: [] }), 400, 'invalid_request_error', 'parameter_invalid', 'lines');
    expectError(await charge(sub, { amount: 500, description: 'd'.repeat(141) }), 400, 'invalid_request_error', 'parameter_invalid', 'description');
  });
});

describe('idempotency by the common rules', () => {
  it('each refusal is stored under its key and replayed as it was (Idempotent-Replayed, Original-Request-Id), even once the cause is gone', async () => {
    const paused = await subscription();
    expect((await call(api, store.key, 'POST', `/v1/subscriptions/${paused._id}/pause`)).status).toBe(200);
    const overdue = await createTestStore(mongo.db);
    await collections(mongo.db).stores.updateOne({ _id: overdue.store._id }, { $set: { plan_overdue: true } });
    const overdueSub = await subscription('4242424242424242', overdue);
    const cases: [string, { _id: string }, unknown, number, string, string][] = [
      ['404', { _id: 'sub_unknown' }, { amount: 500 }, 404, 'resource_missing', store.key],
      ['paused', paused, { amount: 500 }, 400, 'subscription_not_chargeable', store.key],
      ['too small', await subscription(), { amount: 50 }, 400, 'amount_too_small', store.key],
      ['declined', await subscription('4000000000000002'), { amount: 500 }, 402, 'card_declined', store.key],
      ['overdue', overdueSub, { amount: 500 }, 403, 'project_inactive', overdue.key],
    ];
    for (const [name, sub, body, status, code, apiKey] of cases) {
      const key = newKey();
      const first = await charge(sub, body, key, apiKey);
      expect([name, first.status, first.body.error?.code]).toEqual([name, status, code]);
      const again = await charge(sub, body, key, apiKey);
      expect([name, again.status, again.body]).toEqual([name, status, first.body]);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('original-request-id')).toBe(first.headers.get('request-id'));
    }
    // Refused while paused, then resumed: the key still answers its stored refusal and charges nothing.
    const refusedKey = newKey();
    expect((await charge(paused, { amount: 700 }, refusedKey)).status).toBe(400);
    expect((await call(api, store.key, 'POST', `/v1/subscriptions/${paused._id}/resume`)).status).toBe(200);
    expect((await charge(paused, { amount: 700 }, refusedKey)).status).toBe(400);
    expect(await chargesCollection(mongo.db).countDocuments({ key: merchantChargeKey(refusedKey) })).toBe(0);
  });

  it('one key space across endpoints: a key first used on POST /customers is reused on a charge, and a charge key on POST /customers', async () => {
    const sub = await subscription();
    const customerKey = newKey();
    const created = await call(api, store.key, 'POST', '/v1/customers', {
      json: { email: `k${Date.now()}@example.com`, name: 'Key Owner', phone: '+5511987654321', document: { type: 'cpf', number: '52998224725' } },
      headers: { 'idempotency-key': customerKey },
    });
    expect(created.status).toBe(201);
    expectError(await charge(sub, { amount: 500 }, customerKey), 400, 'idempotency_error', 'idempotency_key_reused', 'Idempotency-Key');
    const chargeKey = newKey();
    expect((await charge(sub, { amount: 500 }, chargeKey)).status).toBe(201);
    const customer = await call(api, store.key, 'POST', '/v1/customers', {
      json: { email: `c${Date.now()}@example.com`, name: 'Other Owner', phone: '+5511987654321', document: { type: 'cpf', number: '52998224725' } },
      headers: { 'idempotency-key': chargeKey },
    });
    expectError(customer, 400, 'idempotency_error', 'idempotency_key_reused', 'Idempotency-Key');
    expectError(await charge(sub, { amount: 501 }, chargeKey), 400, 'idempotency_error', 'idempotency_key_reused', 'Idempotency-Key');
  });

  it('a merchant key equal to an internal one charges on its own: `usage:<period>` beside that usage charge, and a renewal-shaped key', async () => {
    const sub = await subscription();
    const periodId = newId('usp');
    const usage = await startCharge(
      { db: mongo.db, temporal: temporal.client, taskQueue },
      {
        storeId: store.store._id,
        subscriptionId: sub._id,
        key: usageChargeKey(periodId),
        amount: 700,
        source: 'usage',
        billingReason: 'usage',
        request: { id: null, idempotency_key: usageIdempotencyKey(periodId) },
      },
    );
    const merchant = await charge(sub, { amount: 700 }, usageIdempotencyKey(periodId));
    expect(merchant.status).toBe(201);
    expect(merchant.body.id).not.toBe(usage.charge.id);
    const renewalShaped = await charge(sub, { amount: 800 }, `renewal/${sub._id}/1/0`);
    expect(renewalShaped.status).toBe(201);
    const ledger = await mongo.db
      .collection(TEST_CHARGES_COLLECTION)
      .find({ store_id: store.store._id, amount: { $in: [700, 800] }, payment_method: sub.default_payment_method!.id })
      .toArray();
    expect(ledger.map((entry) => entry.key).sort()).toEqual([`api/renewal/${sub._id}/1/0`, `api/usage:${periodId}`, `usage/${periodId}`].sort());
  });
});

describe('approved', () => {
  it('201 with the charge, an order (manual, api, unscheduled, items kind charge, external_order_id), invoice.paid and subscription_charge.succeeded', async () => {
    const sub = await subscription();
    const key = newKey();
    const res = await charge(
      sub,
      {
        amount: 2500,
        description: 'Extra credits',
        lines: [
          { description: '100 credits', quantity: 2, unit_amount: 1000 },
          { description: 'Setup', unit_amount: 500 },
        ],
        metadata: { ticket: 'T-1' },
      },
      key,
    );
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^sch_/),
      object: 'subscription_charge',
      status: 'succeeded',
      subscription: sub._id,
      customer: sub.customer,
      amount: 2500,
      currency: 'brl',
      description: 'Extra credits',
      lines: [
        { description: '100 credits', quantity: 2, unit_amount: 1000, amount: 2000 },
        { description: 'Setup', quantity: 1, unit_amount: 500, amount: 500 },
      ],
      order: expect.stringMatching(/^ord_/),
      transaction: expect.stringMatching(/^tx_/),
      failure_code: null,
      failure_message: null,
      source: 'api',
      metadata: { ticket: 'T-1' },
      livemode: true,
      created: expect.any(Number),
      settled_at: expect.any(Number),
    });
    const order = await call(api, store.key, 'GET', `/v1/orders/${res.body.order}`);
    expect(order.body).toMatchObject({
      status: 'paid',
      billing_reason: 'manual',
      order_type: 'api',
      recurrence: 'unscheduled',
      subscription: sub._id,
      external_order_id: res.body.id,
      amount_total: 2500,
      livemode: false,
      items: [
        { kind: 'charge', description: '100 credits', quantity: 2, unit_amount: 1000, amount: 2000 },
        { kind: 'charge', description: 'Setup', quantity: 1, unit_amount: 500, amount: 500 },
      ],
    });
    await waitFor(async () => (await eventsOf(res.body.id)).includes('subscription_charge.succeeded'), { description: 'charge events' });
    expect(await eventsOf(res.body.order)).toEqual(['invoice.paid']);
    expect(await eventsOf(res.body.id)).toEqual(['subscription_charge.succeeded']);
    const stored = await collections(mongo.db).events.findOne({
      store_id: store.store._id,
      type: 'subscription_charge.succeeded',
      'request.idempotency_key': key,
    });
    expect(stored).not.toBeNull();

    // The same key replays the same charge: 200 + Idempotent-Replayed, nothing charged again.
    const again = await charge(
      sub,
      {
        amount: 2500,
        description: 'Extra credits',
        lines: [
          { description: '100 credits', quantity: 2, unit_amount: 1000 },
          { description: 'Setup', unit_amount: 500 },
        ],
        metadata: { ticket: 'T-1' },
      },
      key,
    );
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('original-request-id')).toBe(res.headers.get('request-id'));
    expect(again.body).toEqual(res.body);
    expect(await mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ key: merchantChargeKey(key) })).toBe(1);

    const reused = await charge(sub, { amount: 2600 }, key);
    expectError(reused, 400, 'idempotency_error', 'idempotency_key_reused', 'Idempotency-Key');
    // Started at input version 2: its patches are taken without markers or TemporalChangeVersion upserts.
    const history = await temporal.client.workflow.getHandle(chargeWorkflowId(store.store._id, merchantChargeKey(key))).fetchHistory();
    expect(patchesIn(history)).toEqual({ markers: 0, changeVersionUpserts: 0 });
    await recordHistory(temporal.client, chargeWorkflowId(store.store._id, merchantChargeKey(key)), 'charge-approved');
  });

  it('an active subscription (first cycle paid) is charged like a trialing one: 201 succeeded with a paid order', async () => {
    const sub = await seedSubscription(
      { db: mongo.db, temporal: temporal.client, taskQueue },
      { store: store.store, offer: catalog.monthly, product: catalog.product },
    );
    await waitFor(async () => (await findSubscription(mongo.db, store.store._id, sub._id))?.status === 'active', { description: 'first cycle paid' });
    const res = await charge(sub, { amount: 1800, description: 'Extra seats' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'succeeded', subscription: sub._id, amount: 1800, order: expect.stringMatching(/^ord_/) });
    expect(await ordersCollection(mongo.db).findOne({ _id: res.body.order })).toMatchObject({
      status: 'paid',
      billing_reason: 'manual',
      subscription: sub._id,
    });
  });

  it('the charge workflow carries StoreId, CustomerId and SubscriptionId', async () => {
    const sub = await subscription();
    const key = newKey();
    expect((await charge(sub, { amount: 600 }, key)).status).toBe(201);
    const description = await temporal.client.workflow.getHandle(chargeWorkflowId(store.store._id, merchantChargeKey(key))).describe();
    expect(description.typedSearchAttributes.get(StoreIdKey)).toBe(store.store._id);
    expect(description.typedSearchAttributes.get(CustomerIdKey)).toBe(sub.customer);
    expect(description.typedSearchAttributes.get(SubscriptionIdKey)).toBe(sub._id);
  });

  it('with an endpoint on the original catalog (2026-09-01), an approved charge emits order.paid for its order', async () => {
    const legacy = await createTestStore(mongo.db);
    // Stored for the original catalog, delivered nowhere (the endpoint subscribes to something else).
    await insertEndpoint(mongo.db, {
      storeId: legacy.store._id,
      url: 'https://hooks.example.com/legacy',
      description: null,
      enabledEvents: ['order.refunded'],
      apiVersion: '2026-09-01',
    });
    const sub = await seedSubscription(
      { db: mongo.db, temporal: temporal.client, taskQueue },
      { store: legacy.store, offer: catalog.trial, product: catalog.product, card: '4242424242424242' },
    );
    const res = await charge(sub, { amount: 2100 }, newKey(), legacy.key);
    expect(res.status).toBe(201);
    const orderPaid = await waitFor(
      async () => {
        const listed = await call(api, legacy.key, 'GET', '/v1/events?type=order.paid');
        return (listed.body.data as { data: { object: { id: string } } }[]).find((e) => e.data.object.id === res.body.order) ?? null;
      },
      { description: 'order.paid' },
    );
    expect(orderPaid).toMatchObject({
      type: 'order.paid',
      api_version: '2026-09-01',
      data: { object: { id: res.body.order, status: 'paid', billing_reason: 'manual' } },
    });
  });

  it('without lines: lines [] on the charge and one order item named by the description', async () => {
    const sub = await subscription();
    const res = await charge(sub, { amount: 700, description: 'One-off' });
    expect(res.status).toBe(201);
    expect(res.body.lines).toEqual([]);
    const order = await ordersCollection(mongo.db).findOne({ _id: res.body.order });
    expect(order!.items).toEqual([{ kind: 'charge', description: 'One-off', quantity: 1, unit_amount: 700, amount: 700 }]);
  });

  it('a form-encoded charge with bracket lines works like JSON, and description defaults to the first line', async () => {
    const sub = await subscription();
    const res = await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
      form: 'amount=300&lines[0][description]=Pack&lines[0][quantity]=3&lines[0][unit_amount]=100',
      headers: { 'idempotency-key': newKey() },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ description: 'Pack', lines: [{ description: 'Pack', quantity: 3, unit_amount: 100, amount: 300 }] });
  });

  it('a key is permanent in MongoDB: without any Temporal client (as after the run is long gone) the key still answers with its charge', async () => {
    const sub = await subscription();
    const key = newKey();
    const first = await charge(sub, { amount: 900 }, key);
    expect(first.status).toBe(201);
    const path = `/v1/subscriptions/${sub._id}/charges`;
    const replay = await startCharge(
      // A client of no server: the answer must come from MongoDB alone.
      { db: mongo.db, temporal: new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }), taskQueue },
      {
        storeId: store.store._id,
        subscriptionId: sub._id,
        key: merchantChargeKey(key),
        amount: 900,
        source: 'api',
        billingReason: 'manual',
        fingerprint: requestFingerprint('POST', path, { amount: 900 }),
      },
    );
    expect(replay).toMatchObject({ replayed: true, outcome: 'approved', originalRequestId: first.headers.get('request-id') });
    expect(replay.charge).toEqual(first.body);
  });

  it('ten concurrent requests with one key: one provider charge, one order, one 201; the others 409 idempotency_key_in_use while it runs (or 200 replays after); a retry then replays it', async () => {
    const sub = await subscription();
    const key = newKey();
    const results = await Promise.all(Array.from({ length: 10 }, () => charge(sub, { amount: 1200 }, key)));
    const created = results.filter((r) => r.status === 201);
    expect(created).toHaveLength(1);
    for (const other of results.filter((r) => r.status !== 201)) {
      if (other.status === 409) expect(other.body.error).toMatchObject({ type: 'idempotency_error', code: 'idempotency_key_in_use' });
      else expect([other.status, other.body.id]).toEqual([200, created[0].body.id]);
    }
    const retry = await charge(sub, { amount: 1200 }, key);
    expect([retry.status, retry.body.id, retry.headers.get('idempotent-replayed')]).toEqual([200, created[0].body.id, 'true']);
    expect(await mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ key: merchantChargeKey(key) })).toBe(1);
    expect(await ordersCollection(mongo.db).countDocuments({ external_order_id: created[0].body.id })).toBe(1);
    expect(await chargesCollection(mongo.db).countDocuments({ key: merchantChargeKey(key) })).toBe(1);
  });
});

describe('declined', () => {
  it('0002: 402 card_error card_declined with error.subscription_charge; failed order; subscription_charge.failed and invoice.payment_failed; replays the same 402', async () => {
    const sub = await subscription('4000000000000002');
    const key = newKey();
    const res = await charge(sub, { amount: 1500 }, key);
    expectError(res, 402, 'card_error', 'card_declined');
    const failed = res.body.error.subscription_charge;
    expect(failed).toMatchObject({
      object: 'subscription_charge',
      status: 'failed',
      failure_code: 'card_declined',
      order: expect.stringMatching(/^ord_/),
      settled_at: expect.any(Number),
    });
    expect((await ordersCollection(mongo.db).findOne({ _id: failed.order }))!.status).toBe('failed');
    await waitFor(async () => (await eventsOf(failed.id)).includes('subscription_charge.failed'), { description: 'failed event' });
    expect(await eventsOf(failed.order)).toEqual(['invoice.payment_failed']);
    const again = await charge(sub, { amount: 1500 }, key);
    expectError(again, 402, 'card_error', 'card_declined');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.error.subscription_charge.id).toBe(failed.id);
    await recordHistory(temporal.client, chargeWorkflowId(store.store._id, merchantChargeKey(key)), 'charge-declined');
  });

  it('9995: 402 card_error insufficient_funds', async () => {
    expectError(await charge(await subscription('4000000000009995'), { amount: 1500 }), 402, 'card_error', 'insufficient_funds');
  });

  it('0341 (approved only with the buyer present): 402 card_declined', async () => {
    expectError(await charge(await subscription('4000000000000341'), { amount: 1500 }), 402, 'card_error', 'card_declined');
  });
});

describe('in review', () => {
  it('4954: 201 pending without settled_at; the provider notice (admin CLI provider settle) settles it with its events', async () => {
    const sub = await subscription('4000000000004954');
    const res = await charge(sub, { amount: 3300 });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'pending', settled_at: null, order: expect.stringMatching(/^ord_/) });
    expect((await ordersCollection(mongo.db).findOne({ _id: res.body.order }))!.status).toBe('pending');
    expect(await eventsOf(res.body.id)).toEqual([]);

    const env = { ...process.env, MONGODB_DB: mongo.db.databaseName };
    const settled = await runAdmin(['provider', 'settle', res.body.id, '--outcome', 'paid', '--json'], env);
    expect(settled.code).toBe(0);
    expect(JSON.parse(settled.output)).toMatchObject({
      notice: { status: 'paid' },
      signaled: chargeWorkflowId(store.store._id, (await chargesCollection(mongo.db).findOne({ _id: res.body.id }))!.key),
    });

    const done = await waitFor(
      async () => {
        const got = await call(api, store.key, 'GET', `/v1/subscription_charges/${res.body.id}`);
        return got.body.status === 'succeeded' ? got.body : null;
      },
      { description: 'charge settled' },
    );
    expect(done.settled_at).toEqual(expect.any(Number));
    expect((await ordersCollection(mongo.db).findOne({ _id: res.body.order }))!.status).toBe('paid');
    await waitFor(async () => (await eventsOf(res.body.id)).includes('subscription_charge.succeeded'), { description: 'settled events' });
    expect(await eventsOf(res.body.order)).toEqual(['invoice.paid']);
    await recordHistory(
      temporal.client,
      chargeWorkflowId(store.store._id, (await chargesCollection(mongo.db).findOne({ _id: res.body.id }))!.key),
      'charge-review-settled-by-notice',
    );
  });

  it('a refused notice (by order id) fails the charge with subscription_charge.failed and invoice.payment_failed', async () => {
    const sub = await subscription('4000000000004954');
    const res = await charge(sub, { amount: 3400 });
    const env = { ...process.env, MONGODB_DB: mongo.db.databaseName };
    expect((await runAdmin(['provider', 'settle', res.body.order, '--outcome', 'refused'], env)).code).toBe(0);
    const done = await waitFor(
      async () => {
        const got = await call(api, store.key, 'GET', `/v1/subscription_charges/${res.body.id}`);
        return got.body.status === 'failed' ? got.body : null;
      },
      { description: 'charge refused' },
    );
    expect(done.failure_code).toBe('card_declined');
    await waitFor(async () => (await eventsOf(res.body.id)).includes('subscription_charge.failed'), { description: 'failed event' });
    expect(await eventsOf(res.body.order)).toEqual(['invoice.payment_failed']);
  });

  it('a replay of a charge answered 201 pending and refused after review is 200 + Idempotent-Replayed with the charge now failed (not 402)', async () => {
    const sub = await subscription('4000000000004954');
    const key = newKey();
    const first = await charge(sub, { amount: 3500 }, key);
    expect(first.status).toBe(201);
    const env = { ...process.env, MONGODB_DB: mongo.db.databaseName };
    expect((await runAdmin(['provider', 'settle', first.body.id, '--outcome', 'refused'], env)).code).toBe(0);
    await waitFor(async () => (await call(api, store.key, 'GET', `/v1/subscription_charges/${first.body.id}`)).body.status === 'failed', {
      description: 'charge refused',
    });
    const replayOf = async () => {
      const again = await charge(sub, { amount: 3500 }, key);
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toMatchObject({ id: first.body.id, status: 'failed', failure_code: 'card_declined', settled_at: expect.any(Number) });
    };
    await replayOf();
    // Also once the charge workflow has closed and MongoDB alone answers.
    await waitFor(
      async () =>
        (await temporal.client.workflow.getHandle(chargeWorkflowId(store.store._id, merchantChargeKey(key))).describe()).status.name === 'COMPLETED',
      { description: 'charge workflow closed' },
    );
    await replayOf();
  });
});

describe('reads', () => {
  it('GET /v1/subscriptions/{id}/charges lists newest first with the status filter; unknown status is 400; unknown subscription 404', async () => {
    const sub = await subscription();
    const a = await charge(sub, { amount: 100 });
    const b = await charge(sub, { amount: 424242 });
    const c = await charge(sub, { amount: 200 });
    const all = await call(api, store.key, 'GET', `/v1/subscriptions/${sub._id}/charges`);
    expect(all.body).toMatchObject({ object: 'list', url: `/v1/subscriptions/${sub._id}/charges`, has_more: false });
    expect(all.body.data.map((x: { id: string }) => x.id)).toEqual([c.body.id, b.body.error.subscription_charge.id, a.body.id]);
    const ok = await call(api, store.key, 'GET', `/v1/subscriptions/${sub._id}/charges?status=succeeded`);
    expect(ok.body.data.map((x: { id: string }) => x.id)).toEqual([c.body.id, a.body.id]);
    expectError(
      await call(api, store.key, 'GET', `/v1/subscriptions/${sub._id}/charges?status=done`),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'status',
    );
    expectError(await call(api, store.key, 'GET', '/v1/subscriptions/sub_nope/charges'), 404, 'invalid_request_error', 'resource_missing', 'id');
  });

  it("GET /v1/subscription_charges/{id}: the charge; 404 for an unknown id or another store's charge", async () => {
    const sub = await subscription();
    const created = await charge(sub, { amount: 100 });
    expect((await call(api, store.key, 'GET', `/v1/subscription_charges/${created.body.id}`)).body).toEqual(created.body);
    expectError(await call(api, store.key, 'GET', '/v1/subscription_charges/sch_nope'), 404, 'invalid_request_error', 'resource_missing', 'id');
    const other = await createTestStore(mongo.db);
    expect((await call(api, other.key, 'GET', `/v1/subscription_charges/${created.body.id}`)).status).toBe(404);
  });
});

describe('subscription unaffected', () => {
  it('a charge does not change the subscription', async () => {
    const sub = await subscription();
    await charge(sub, { amount: 100 });
    const after = await findSubscription(mongo.db, store.store._id, sub._id);
    expect(after!.version).toBe(sub.version);
  });
});
