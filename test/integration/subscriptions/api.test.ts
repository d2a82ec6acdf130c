// What this tests: /v1/subscriptions over real HTTP with the real worker on the Temporal dev server
// and FerretDB — list filters, retrieve, update (reference, metadata, scheduled cancellation), cancel,
// pause, resume, reactivate, change_offer, every state-table refusal (400 provider_error), the
// events each action emits, and that concurrent actions on one subscription are serialized.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSubscriptionStack, type SubscriptionStack } from '../../support/subscription-stack';
import { collections } from '../../../store/collections';
import { findSubscription, type SubscriptionDoc } from '../../../store/subscriptions';
import { ordersCollection } from '../../../store/orders';
import { insertEndpoint } from '../../../store/webhook-endpoints';
import { CustomerIdKey, StoreIdKey, SubscriptionIdKey } from '../../../services/operations/search-attributes';
import { runAdmin } from '../../../admin/cli';
import { subscriptionStateQuery, subscriptionWorkflowId } from '../../../workflows/subscription/messages';
import { waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { call, createTestStore, type TestApi, type TestStore } from '../../support/api';
import { seedCatalog, seedSubscription, type TestCatalog } from '../../support/subscriptions';

let mongo: TestMongo;
let temporal: TestTemporal;
let stack: SubscriptionStack;
let api: TestApi;
let store: TestStore;
let catalog: TestCatalog;
let taskQueue: string;

beforeAll(async () => {
  stack = await startSubscriptionStack('subscriptions-api');
  ({ mongo, temporal, api, store, catalog, taskQueue } = stack);
});

afterAll(async () => {
  await stack?.close();
});

const productOf = (offer: TestCatalog['monthly']) =>
  offer.product_id === catalog.product._id ? catalog.product : offer.product_id === catalog.sibling._id ? catalog.sibling : catalog.stranger;

/** A subscription to the monthly offer whose first cycle is paid (active). */
async function activeSubscription(card = '4242424242424242', offer = catalog.monthly): Promise<SubscriptionDoc> {
  const sub = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer, product: productOf(offer), card },
  );
  return waitFor(
    async () => {
      const doc = await findSubscription(mongo.db, store.store._id, sub._id);
      if (!doc) return null;
      if (doc.status !== 'active') return doc;
      if (doc.cycles_completed < 1) return null;
      // The workflow writes the paid cycle before it emits customer.subscription.updated: wait for the
      // event too, so a later "no new event" assertion compares against a settled list.
      return (await eventsFor(doc._id)).includes('customer.subscription.updated') ? doc : null;
    },
    { description: 'first charge and its event', timeoutMs: 20_000 },
  );
}

const get = (path: string) => call(api, store.key, 'GET', path);
const post = (path: string, json?: unknown, headers?: Record<string, string>) => call(api, store.key, 'POST', path, { json: json ?? {}, headers });

async function eventsFor(id: string): Promise<string[]> {
  const events = await collections(mongo.db).events.find({ store_id: store.store._id }).sort({ _id: 1 }).toArray();
  return events.filter((e) => (JSON.parse(e.data_json) as { object: { id: string } }).object.id === id).map((e) => e.type);
}

function expectProviderError(res: { status: number; body: any }, messagePart?: RegExp) {
  expect(res.status).toBe(400);
  expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'provider_error', param: null });
  if (messagePart) expect(res.body.error.message).toMatch(messagePart);
}

describe('GET /v1/subscriptions', () => {
  it('retrieves a subscription with every spec field, and 404 resource_missing for an unknown id', async () => {
    const sub = await activeSubscription();
    const res = await get(`/v1/subscriptions/${sub._id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: sub._id,
      object: 'subscription',
      status: 'active',
      customer: sub.customer,
      customer_email: sub.customer_email,
      offer: { id: catalog.monthly._id, name: 'Image API monthly' },
      product: { id: catalog.product._id, name: 'Image API' },
      billing_cycle: 'monthly',
      custom_billing_days: null,
      currency: 'brl',
      amount: 4990,
      current_period_start: expect.any(Number),
      current_period_end: expect.any(Number),
      next_billing_at: sub.current_period_end,
      trial_start: null,
      trial_end: null,
      cycles_completed: 1,
      cycle_limit: null,
      cancel_at_period_end: false,
      canceled_at: null,
      ended_at: null,
      cancellation_details: null,
      default_payment_method: { id: expect.stringMatching(/^pm_/), type: 'card' },
      installments: null,
      past_due_details: null,
      checkout_session: null,
      client_reference_id: null,
      metadata: {},
      livemode: true,
      created: expect.any(Number),
    });
    const missing = await get('/v1/subscriptions/sub_doesnotexist');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ type: 'invalid_request_error', code: 'resource_missing', param: 'id' });
  });

  it('lists newest first, filters by customer and status, and refuses an unknown status with 400 parameter_invalid', async () => {
    const a = await activeSubscription();
    const b = await activeSubscription('4000000000000002');
    const byCustomer = await get(`/v1/subscriptions?customer=${a.customer}`);
    expect(byCustomer.body.data.map((s: { id: string }) => s.id)).toEqual([a._id]);
    const pastDue = await get('/v1/subscriptions?status=past_due&limit=100');
    expect(pastDue.body.data.map((s: { id: string }) => s.id)).toContain(b._id);
    expect(pastDue.body.data.every((s: { status: string }) => s.status === 'past_due')).toBe(true);
    const all = await get('/v1/subscriptions?limit=2');
    expect(all.body).toMatchObject({ object: 'list', url: '/v1/subscriptions', has_more: expect.any(Boolean) });
    const bad = await get('/v1/subscriptions?status=sleeping');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_invalid', param: 'status' });
  });

  it("answers 404 for another store's subscription", async () => {
    const sub = await activeSubscription();
    const other = await createTestStore(mongo.db);
    const res = await call(api, other.key, 'GET', `/v1/subscriptions/${sub._id}`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('resource_missing');
  });
});

describe('POST /v1/subscriptions/{id}', () => {
  it('saves client_reference_id and metadata without an event', async () => {
    const sub = await activeSubscription();
    const before = await eventsFor(sub._id);
    const res = await post(`/v1/subscriptions/${sub._id}`, { client_reference_id: 'crm-42', metadata: { plan: 'gold', 'a.b': 1 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ client_reference_id: 'crm-42', metadata: { plan: 'gold', 'a.b': '1' } });
    expect(await eventsFor(sub._id)).toEqual(before);
    const cleared = await post(`/v1/subscriptions/${sub._id}`, { client_reference_id: null });
    expect(cleared.body.client_reference_id).toBeNull();
  });

  it('cancel_at_period_end true schedules the cancellation (active, no renewal, no event); false is 400 parameter_invalid', async () => {
    const sub = await activeSubscription();
    const before = await eventsFor(sub._id);
    const res = await post(`/v1/subscriptions/${sub._id}`, {
      cancel_at_period_end: true,
      cancellation_details: { reason: 'switching', comment: 'found another' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'active',
      cancel_at_period_end: true,
      next_billing_at: null,
      canceled_at: expect.any(Number),
      cancellation_details: { reason: 'switching', comment: 'found another', source: 'dashboard' },
    });
    expect(await eventsFor(sub._id)).toEqual(before);

    const refused = await post(`/v1/subscriptions/${sub._id}`, { cancel_at_period_end: false });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_invalid', param: 'cancel_at_period_end' });
  });

  it('an unknown cancellation reason is ignored (null), and a comment over 500 characters is 400 parameter_invalid', async () => {
    const sub = await activeSubscription();
    const res = await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}`, {
      form: 'cancel_at_period_end=true&cancellation_details[reason]=bored',
    });
    expect(res.status).toBe(200);
    expect(res.body.cancellation_details).toEqual({ reason: null, comment: null, source: 'dashboard' });
    const long = await post(`/v1/subscriptions/${sub._id}`, { cancel_at_period_end: true, cancellation_details: { comment: 'x'.repeat(501) } });
    expect(long.status).toBe(400);
    expect(long.body.error).toMatchObject({ code: 'parameter_invalid', param: 'cancellation_details.comment' });
  });

  it('keeps the reference saved when the scheduling in the same call is refused (paused: 400 provider_error)', async () => {
    const sub = await activeSubscription();
    expect((await post(`/v1/subscriptions/${sub._id}/pause`)).status).toBe(200);
    const res = await post(`/v1/subscriptions/${sub._id}`, { client_reference_id: 'kept', cancel_at_period_end: true });
    expectProviderError(res, /paused/);
    expect((await get(`/v1/subscriptions/${sub._id}`)).body.client_reference_id).toBe('kept');
  });

  it('a client_reference_id over 200 characters is 400 parameter_invalid', async () => {
    const sub = await activeSubscription();
    const res = await post(`/v1/subscriptions/${sub._id}`, { client_reference_id: 'x'.repeat(201) });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'parameter_invalid', param: 'client_reference_id' });
  });
});

describe('pause, resume, cancel', () => {
  it('pause gives paused with customer.subscription.paused and keeps the reason in history; a second pause is 400 provider_error', async () => {
    const sub = await activeSubscription();
    const res = await post(`/v1/subscriptions/${sub._id}/pause`, { reason: 'holiday' });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('paused');
    expect((await eventsFor(sub._id)).at(-1)).toBe('customer.subscription.paused');
    const doc = await findSubscription(mongo.db, store.store._id, sub._id);
    expect(doc!.history.at(-1)).toMatchObject({ action: 'paused', reason: 'holiday' });
    expectProviderError(await post(`/v1/subscriptions/${sub._id}/pause`), /already paused/);
  });

  it('a pause reason over 200 characters is 400 parameter_invalid with param reason', async () => {
    const sub = await activeSubscription();
    const res = await post(`/v1/subscriptions/${sub._id}/pause`, { reason: 'r'.repeat(201) });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'parameter_invalid', param: 'reason' });
  });

  it('resume gives active with customer.subscription.resumed; resuming one not paused is 400 provider_error', async () => {
    const sub = await activeSubscription();
    expectProviderError(await post(`/v1/subscriptions/${sub._id}/resume`), /paused/);
    await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/pause`);
    const res = await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/resume`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('active');
    expect((await eventsFor(sub._id)).at(-1)).toBe('customer.subscription.resumed');
  });

  it('DELETE cancels now with source dashboard and the reason from the query, emitting customer.subscription.deleted; again is 400 provider_error', async () => {
    const sub = await activeSubscription();
    const res = await call(api, store.key, 'DELETE', `/v1/subscriptions/${sub._id}?cancellation_details[reason]=too_expensive`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'canceled',
      canceled_at: expect.any(Number),
      ended_at: expect.any(Number),
      next_billing_at: null,
      cancellation_details: { reason: 'too_expensive', comment: null, source: 'dashboard' },
    });
    expect((await eventsFor(sub._id)).at(-1)).toBe('customer.subscription.deleted');
    expectProviderError(await call(api, store.key, 'DELETE', `/v1/subscriptions/${sub._id}`), /already canceled/);
    expectProviderError(await post(`/v1/subscriptions/${sub._id}/pause`), /canceled/);
  });

  it('actions on an unknown subscription are 404 resource_missing', async () => {
    for (const path of ['/pause', '/resume', '/reactivate']) {
      const res = await post(`/v1/subscriptions/sub_nope${path}`);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'resource_missing', param: 'id' });
    }
    expect((await call(api, store.key, 'DELETE', '/v1/subscriptions/sub_nope')).status).toBe(404);
  });

  it('five concurrent pauses are serialized by the workflow: one succeeds, four get 400 provider_error', async () => {
    const sub = await activeSubscription();
    const results = await Promise.all(Array.from({ length: 5 }, () => post(`/v1/subscriptions/${sub._id}/pause`)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 400 && r.body.error.code === 'provider_error')).toHaveLength(4);
    expect((await eventsFor(sub._id)).filter((t) => t === 'customer.subscription.paused')).toHaveLength(1);
  });
});

describe('reactivate', () => {
  it('undoes a scheduled cancellation with customer.subscription.updated, restoring next_billing_at', async () => {
    const sub = await activeSubscription();
    await post(`/v1/subscriptions/${sub._id}`, { cancel_at_period_end: true });
    const res = await post(`/v1/subscriptions/${sub._id}/reactivate`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'active',
      cancel_at_period_end: false,
      canceled_at: null,
      cancellation_details: null,
      next_billing_at: sub.current_period_end,
    });
    expect((await eventsFor(sub._id)).at(-1)).toBe('customer.subscription.updated');
  });

  it('reactivates a canceled subscription by charging a new cycle at once (renewal order, new period)', async () => {
    const sub = await activeSubscription();
    await call(api, store.key, 'DELETE', `/v1/subscriptions/${sub._id}`);
    const res = await post(`/v1/subscriptions/${sub._id}/reactivate`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'active', cycles_completed: 2, ended_at: null, canceled_at: null, cancellation_details: null });
    expect(res.body.current_period_start).toBeGreaterThanOrEqual(sub.current_period_start!);
    const orders = await ordersCollection(mongo.db).find({ subscription: sub._id }).toArray();
    expect(orders.map((o) => [o.billing_reason, o.status])).toEqual([
      ['renewal', 'paid'],
      ['renewal', 'paid'],
    ]);
    expect((await eventsFor(sub._id)).at(-1)).toBe('customer.subscription.updated');
  });

  it('a declined reactivation charge is 400 provider_error and changes nothing', async () => {
    // 0341: approved with the buyer present, declined without: its first cycle fails, so set it canceled.
    const sub = await activeSubscription('4000000000000341');
    await call(api, store.key, 'DELETE', `/v1/subscriptions/${sub._id}`);
    const before = await findSubscription(mongo.db, store.store._id, sub._id);
    expectProviderError(await post(`/v1/subscriptions/${sub._id}/reactivate`), /card_declined/);
    const after = await findSubscription(mongo.db, store.store._id, sub._id);
    expect(after!.status).toBe('canceled');
    expect(after!.version).toBe(before!.version);
  });

  describe('with the reactivation charge left in review (4954)', () => {
    const settle = (ref: string, outcome: 'paid' | 'refused') =>
      runAdmin(['provider', 'settle', ref, '--outcome', outcome], { ...process.env, MONGODB_DB: mongo.db.databaseName });

    /** A canceled subscription whose saved card the provider leaves in review, and the answer to its reactivation. */
    async function reactivatedIntoReview() {
      // Trialing, so nothing is charged before the cancellation.
      const sub = await seedSubscription(
        { db: mongo.db, temporal: temporal.client, taskQueue },
        { store: store.store, offer: catalog.trial, product: catalog.product, card: '4000000000004954' },
      );
      expect((await call(api, store.key, 'DELETE', `/v1/subscriptions/${sub._id}`)).status).toBe(200);
      const canceled = (await findSubscription(mongo.db, store.store._id, sub._id))!;
      const res = await post(`/v1/subscriptions/${sub._id}/reactivate`);
      const orders = await ordersCollection(mongo.db).find({ subscription: sub._id }).toArray();
      return { sub, canceled, res, orders };
    }

    it('answers 200 with the subscription unchanged and a pending renewal order; the paid notice reactivates it with customer.subscription.updated', async () => {
      const { sub, canceled, res, orders } = await reactivatedIntoReview();
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: sub._id, status: 'canceled', ended_at: canceled.ended_at });
      expect(orders.map((o) => [o.billing_reason, o.status])).toEqual([['renewal', 'pending']]);
      // Another reactivation while the payment is in review would start a second charge.
      expectProviderError(await post(`/v1/subscriptions/${sub._id}/reactivate`), /in review/);

      expect((await settle(orders[0]._id, 'paid')).code).toBe(0);
      const active = await waitFor(
        async () => {
          const doc = await findSubscription(mongo.db, store.store._id, sub._id);
          return doc?.status === 'active' ? doc : null;
        },
        { description: 'reactivated by the paid notice' },
      );
      expect(active).toMatchObject({
        cycles_completed: 1,
        ended_at: null,
        canceled_at: null,
        cancellation_details: null,
        cancel_at_period_end: false,
      });
      expect(active.current_period_end).toBeGreaterThan(active.current_period_start!);
      expect(active.next_billing_at).toBe(active.current_period_end);
      expect((await ordersCollection(mongo.db).findOne({ _id: orders[0]._id }))!.status).toBe('paid');
      await waitFor(async () => (await eventsFor(sub._id)).at(-1) === 'customer.subscription.updated', { description: 'reactivation event' });
      expect(await eventsFor(orders[0]._id)).toEqual(['invoice.paid']);
    });

    it('the refused notice fails the order (invoice.payment_failed) and leaves the subscription canceled', async () => {
      const { sub, canceled, res, orders } = await reactivatedIntoReview();
      expect(res.status).toBe(200);
      expect((await settle(orders[0]._id, 'refused')).code).toBe(0);
      await waitFor(async () => (await eventsFor(orders[0]._id)).includes('invoice.payment_failed'), { description: 'order failed' });
      const handle = temporal.client.workflow.getHandle(subscriptionWorkflowId(sub._id));
      await waitFor(async () => (await handle.query(subscriptionStateQuery)).awaitingSettlement === null, { description: 'notice handled' });
      const after = (await findSubscription(mongo.db, store.store._id, sub._id))!;
      expect(after).toMatchObject({ status: 'canceled', version: canceled.version, ended_at: canceled.ended_at });
      expect((await ordersCollection(mongo.db).findOne({ _id: orders[0]._id }))!.status).toBe('failed');
      expect((await eventsFor(sub._id)).at(-1)).toBe('customer.subscription.deleted');
    });
  });

  it('reactivating an active subscription without a scheduled cancellation is 400 provider_error', async () => {
    const sub = await activeSubscription();
    expectProviderError(await post(`/v1/subscriptions/${sub._id}/reactivate`), /active/);
  });
});

describe('change_offer', () => {
  it('moves to another offer of the same product: offer, amount and cycle change, next_billing_at stays at the paid period end', async () => {
    const sub = await activeSubscription();
    const res = await post(`/v1/subscriptions/${sub._id}/change_offer`, { offer: catalog.monthlyPremium._id });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'active',
      offer: { id: catalog.monthlyPremium._id, name: 'Image API premium' },
      amount: 9990,
      billing_cycle: 'monthly',
      next_billing_at: sub.current_period_end,
    });
    expect((await eventsFor(sub._id)).at(-1)).toBe('customer.subscription.updated');
  });

  it('accepts an offer of another product of the same family', async () => {
    const sub = await activeSubscription();
    const res = await post(`/v1/subscriptions/${sub._id}/change_offer`, { offer: catalog.siblingOffer._id });
    expect(res.status).toBe(200);
    expect(res.body.product).toEqual({ id: catalog.sibling._id, name: 'Video API' });
  });

  it('refuses an offer of another product family with 400 provider_error', async () => {
    const sub = await activeSubscription();
    expectProviderError(await post(`/v1/subscriptions/${sub._id}/change_offer`, { offer: catalog.strangerOffer._id }), /family/);
  });

  it('an unknown offer, a slug or a missing offer: 404 resource_missing param offer / 400 parameter_missing', async () => {
    const sub = await activeSubscription();
    const unknown = await post(`/v1/subscriptions/${sub._id}/change_offer`, { offer: 'ofr_nope' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'resource_missing', param: 'offer' });
    const slug = await post(`/v1/subscriptions/${sub._id}/change_offer`, { offer: 'some-slug' });
    expect(slug.status).toBe(404);
    expect(slug.body.error).toMatchObject({ code: 'resource_missing', param: 'offer' });
    const none = await post(`/v1/subscriptions/${sub._id}/change_offer`, {});
    expect(none.status).toBe(400);
    expect(none.body.error).toMatchObject({ code: 'parameter_missing', param: 'offer' });
  });
});

describe('OpenAPI', () => {
  it('describes the subscription and charge routes with their schemas, 402 included', async () => {
    const doc = await call(api, null, 'GET', '/v1/openapi.json');
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/subscriptions',
        '/v1/subscriptions/{id}',
        '/v1/subscriptions/{id}/pause',
        '/v1/subscriptions/{id}/charges',
        '/v1/subscription_charges/{id}',
      ]),
    );
    expect(doc.body.paths['/v1/subscriptions/{id}/charges'].post.responses).toHaveProperty('402');
    expect(doc.body.components.schemas).toHaveProperty('Subscription');
    expect(doc.body.components.schemas).toHaveProperty('SubscriptionCharge');
  });
});

describe('admin CLI', () => {
  it('subscriptions create saves the test card at the provider and starts the workflow, which charges the first cycle', async () => {
    const customer = await call(api, store.key, 'POST', '/v1/customers', {
      json: { email: 'cli@example.com', name: 'Cli Buyer', phone: '+5511988887777', document: { type: 'cpf', number: '123.456.789-09' } },
    });
    expect(customer.status).toBe(201);
    const env = { ...process.env, MONGODB_DB: mongo.db.databaseName, TEMPORAL_TASK_QUEUE: taskQueue };
    const args = ['subscriptions', 'create', '--store', store.store._id, '--customer', customer.body.id, '--offer', catalog.monthly._id, '--json'];
    // The card number never goes in the arguments (the process list shows them): refused there, read from standard input.
    const inArgs = await runAdmin([...args, '--card', '4242424242424242'], env, async () => '');
    expect([inArgs.code, JSON.parse(inArgs.output).error]).toEqual([1, expect.stringContaining('standard input')]);
    expect((await runAdmin(args, env, async () => '')).code).toBe(1);
    const out = await runAdmin(args, env, async () => '4242 4242 4242 4242\n');
    expect(out.code).toBe(0);
    const created = JSON.parse(out.output);
    expect(created).toMatchObject({ object: 'subscription', customer: customer.body.id, default_payment_method: { type: 'card' } });
    const active = await waitFor(
      async () => {
        const doc = await findSubscription(mongo.db, store.store._id, created.id);
        return doc?.cycles_completed === 1 ? doc : null;
      },
      { description: 'CLI subscription charged' },
    );
    expect(active.status).toBe('active');
    // Only the pm_ id, brand and last4 are kept: never the number.
    expect(JSON.stringify(active)).not.toContain('4242424242424242');
  });
});

describe('original catalog (2026-09-01) names of real actions', () => {
  let legacy: TestStore;
  let legacyCatalog: TestCatalog;

  beforeAll(async () => {
    legacy = await createTestStore(mongo.db);
    legacyCatalog = await seedCatalog(mongo.db, legacy.store._id);
    // An endpoint on the original catalog makes its events stored; subscribed to nothing here, so none is delivered.
    await insertEndpoint(mongo.db, {
      storeId: legacy.store._id,
      url: 'https://hooks.example.com/legacy',
      description: null,
      enabledEvents: ['order.refunded'],
      apiVersion: '2026-09-01',
    });
  });

  /** The store's original-catalog event types about one object, oldest first (read through GET /v1/events). */
  async function legacyTypesOf(id: string): Promise<string[]> {
    const res = await call(api, legacy.key, 'GET', '/v1/events?limit=100');
    expect(res.status).toBe(200);
    return (res.body.data as { type: string; api_version: string; data: { object: { id: string } } }[])
      .filter((e) => e.api_version === '2026-09-01' && e.data.object.id === id)
      .map((e) => e.type)
      .reverse();
  }

  async function legacyActive(): Promise<SubscriptionDoc> {
    const sub = await seedSubscription(
      { db: mongo.db, temporal: temporal.client, taskQueue },
      { store: legacy.store, offer: legacyCatalog.monthly, product: legacyCatalog.product },
    );
    return waitFor(
      async () => {
        const doc = await findSubscription(mongo.db, legacy.store._id, sub._id);
        return doc?.status === 'active' && (await legacyTypesOf(sub._id)).includes('subscription.updated') ? doc : null;
      },
      { description: 'first cycle paid', timeoutMs: 20_000 },
    );
  }

  it('DELETE emits subscription.cancelled and reactivate subscription.reactivated', async () => {
    const sub = await legacyActive();
    expect((await call(api, legacy.key, 'DELETE', `/v1/subscriptions/${sub._id}`)).status).toBe(200);
    expect((await legacyTypesOf(sub._id)).at(-1)).toBe('subscription.cancelled');
    const res = await call(api, legacy.key, 'POST', `/v1/subscriptions/${sub._id}/reactivate`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('active');
    expect((await legacyTypesOf(sub._id)).at(-1)).toBe('subscription.reactivated');
  });

  it('change_offer to a dearer offer emits subscription.upgraded, to a cheaper one subscription.downgraded', async () => {
    const sub = await legacyActive();
    const change = (offer: string) => call(api, legacy.key, 'POST', `/v1/subscriptions/${sub._id}/change_offer`, { json: { offer } });
    expect((await change(legacyCatalog.monthlyPremium._id)).status).toBe(200);
    expect((await legacyTypesOf(sub._id)).at(-1)).toBe('subscription.upgraded');
    expect((await change(legacyCatalog.monthlyCheaper._id)).status).toBe(200);
    expect((await legacyTypesOf(sub._id)).at(-1)).toBe('subscription.downgraded');
  });
});

describe('search attributes', () => {
  it('the subscription workflow carries StoreId, CustomerId and SubscriptionId', async () => {
    const sub = await activeSubscription();
    const description = await temporal.client.workflow.getHandle(subscriptionWorkflowId(sub._id)).describe();
    expect(description.typedSearchAttributes.get(StoreIdKey)).toBe(store.store._id);
    expect(description.typedSearchAttributes.get(CustomerIdKey)).toBe(sub.customer);
    expect(description.typedSearchAttributes.get(SubscriptionIdKey)).toBe(sub._id);
  });
});
