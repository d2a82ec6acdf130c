// What this tests: every list follows `created` (then id) exactly, in its order and its cursors, even where
// an id's own time disagrees (a checkout's subscription carries its session's time in its id; a delivery its
// event's): three objects per list get `created` out of id order, and each list is read whole, walked forward
// with starting_after and back with ending_before, one item a page. Then a real checkout: the subscription of
// a session opened first and paid last lists above one created in between.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from 'mongodb';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, waitFor, type TestMongo } from '../../support/env';
import { buyerForm, createSession, seedCheckoutCatalog, startCheckoutStack, type CheckoutStack } from '../../support/checkout-fixtures';
import { seedCatalog, seedSubscription } from '../../support/subscriptions';
import { insertCustomer, newCustomerDoc } from '../../../store/customers';
import { createProduct } from '../../../store/catalog';
import { createMeter } from '../../../store/meters';
import { insertEndpoint } from '../../../store/webhook-endpoints';
import { recordEvent } from '../../../store/events';
import { insertDeliveries, newDeliveryDoc } from '../../../store/webhook-deliveries';
import { insertTestClock } from '../../../store/test-clocks';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { newId } from '../../../domain/ids';

let mongo: TestMongo;
let api: TestApi;
const T0 = Math.floor(Date.UTC(2026, 5, 1) / 1000);

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

/** Three objects made in id order a < b < c get `created` a last, then c, then b. */
async function reorderCreated(db: Db, collection: string, [a, b, c]: string[]): Promise<void> {
  const created: [string, number][] = [
    [a, T0 + 300],
    [b, T0 + 100],
    [c, T0 + 200],
  ];
  for (const [id, at] of created) await db.collection(collection).updateOne({ _id: id as never }, { $set: { created: at } });
}

const idsOf = (res: { body: { data: { id: string }[] } }) => res.body.data.map((d) => d.id);

/** The list whole, forward one a page, and back one a page from its last item: each time `expected`. */
async function expectListOrder(store: TestStore, path: string, expected: string[]): Promise<void> {
  const sep = path.includes('?') ? '&' : '?';
  const get = (query: string) => call(api, store.key, 'GET', `${path}${sep}${query}`);
  expect(idsOf(await get('limit=100'))).toEqual(expected);
  const forward: string[] = [];
  for (let cursor: string | null = null, pages = 0; pages < 10; pages++) {
    const res = await get(`limit=1${cursor ? `&starting_after=${cursor}` : ''}`);
    forward.push(...idsOf(res));
    if (!res.body.has_more) break;
    cursor = forward[forward.length - 1];
  }
  expect(forward).toEqual(expected);
  const backward = [expected[expected.length - 1]];
  for (let pages = 0; pages < 10; pages++) {
    const res = await get(`limit=1&ending_before=${backward[0]}`);
    backward.unshift(...idsOf(res));
    if (!res.body.has_more) break;
  }
  expect(backward).toEqual(expected);
}

/** Newest first by created: a, c, b (by id it would be c, b, a). */
const newestFirst = ([a, b, c]: string[]) => [a, c, b];

describe('every list follows created, then id', () => {
  it('customers', async () => {
    const store = await createTestStore(mongo.db);
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      ids.push((await insertCustomer(mongo.db, newCustomerDoc(store.store._id, { email: `order${n}@example.com` }, {}))).customer._id);
    }
    await reorderCreated(mongo.db, 'customers', ids);
    await expectListOrder(store, '/v1/customers', newestFirst(ids));
  });

  it('subscriptions (also filtered by status) and their charges', async () => {
    const store = await createTestStore(mongo.db);
    const catalog = await seedCatalog(mongo.db, store.store._id);
    const ids: string[] = [];
    for (const _ of [1, 2, 3]) {
      ids.push(
        (await seedSubscription({ db: mongo.db, taskQueue: 'none' }, { store: store.store, offer: catalog.monthly, product: catalog.product }))._id,
      );
    }
    await reorderCreated(mongo.db, 'subscriptions', ids);
    await expectListOrder(store, '/v1/subscriptions', newestFirst(ids));
    await expectListOrder(store, '/v1/subscriptions?status=active', newestFirst(ids));

    const charges = [1, 2, 3].map((n) => chargeDoc(store.store._id, ids[0], n));
    await mongo.db.collection('subscription_charges').insertMany(charges as never[]);
    await reorderCreated(
      mongo.db,
      'subscription_charges',
      charges.map((c) => c._id),
    );
    await expectListOrder(store, `/v1/subscriptions/${ids[0]}/charges`, newestFirst(charges.map((c) => c._id)));
  });

  it('orders', async () => {
    const store = await createTestStore(mongo.db);
    const orders = [1, 2, 3].map((n) => orderDoc(store.store._id, n));
    await mongo.db.collection('orders').insertMany(orders as never[]);
    const ids = orders.map((o) => o._id);
    await reorderCreated(mongo.db, 'orders', ids);
    await expectListOrder(store, '/v1/orders', newestFirst(ids));
    await expectListOrder(store, `/v1/orders?created[gte]=${T0}`, newestFirst(ids));
  });

  it('events', async () => {
    const store = await createTestStore(mongo.db);
    const ids: string[] = [];
    for (const n of [1, 2, 3]) ids.push((await recordEvent(mongo.db, { storeId: store.store._id, type: 'customer.created', object: { n } }))._id);
    await reorderCreated(mongo.db, 'events', ids);
    await expectListOrder(store, '/v1/events', newestFirst(ids));
    await expectListOrder(store, '/v1/events?type=customer.*', newestFirst(ids));
  });

  it('checkout sessions', async () => {
    const store = await createTestStore(mongo.db);
    const catalog = await seedCheckoutCatalog(mongo.db, store.store._id);
    const ids: string[] = [];
    for (const _ of [1, 2, 3]) ids.push((await createSession(api, store, { offer: catalog.oneOff._id })).body.id);
    await reorderCreated(mongo.db, 'checkout_sessions', ids);
    await expectListOrder(store, '/v1/checkout/sessions', newestFirst(ids));
  });

  it('meters, products and test clocks', async () => {
    const store = await createTestStore(mongo.db);
    const meters: string[] = [];
    const products: string[] = [];
    const clocks: string[] = [];
    for (const n of [1, 2, 3]) {
      meters.push((await createMeter(mongo.db, { storeId: store.store._id, displayName: `M${n}`, eventName: `order_${n}` }))._id);
      products.push((await createProduct(mongo.db, { storeId: store.store._id, name: `P${n}` }))._id);
      const clock = newId('clock', Date.now() + n);
      await insertTestClock(mongo.db, {
        _id: clock,
        store_id: store.store._id,
        name: null,
        frozen_time: T0,
        now_ms: T0 * 1000,
        status: 'ready',
        created: T0,
      });
      clocks.push(clock);
    }
    await reorderCreated(mongo.db, 'billing_meters', meters);
    await reorderCreated(mongo.db, 'products', products);
    await reorderCreated(mongo.db, 'test_clocks', clocks);
    await expectListOrder(store, '/v1/billing/meters', newestFirst(meters));
    await expectListOrder(store, '/v1/products', newestFirst(products));
    await expectListOrder(store, '/v1/test_helpers/test_clocks', newestFirst(clocks));
  });

  it('webhook endpoints oldest first, and deliveries newest first (a resend naming an endpoint creates one later for an older event)', async () => {
    const store = await createTestStore(mongo.db);
    const endpoints: string[] = [];
    for (const n of [1, 2, 3]) {
      const input = {
        storeId: store.store._id,
        url: `https://hooks${n}.example.com/`,
        description: null,
        enabledEvents: ['*'],
        apiVersion: '2026-11-01' as const,
      };
      endpoints.push((await insertEndpoint(mongo.db, input, Date.now() + n))._id);
    }
    await reorderCreated(mongo.db, 'webhook_endpoints', endpoints);
    const [a, b, c] = endpoints;
    await expectListOrder(store, '/v1/webhook_endpoints', [b, c, a]);

    const deliveries = [];
    for (const n of [1, 2, 3]) {
      const event = await recordEvent(mongo.db, { storeId: store.store._id, type: 'customer.created', object: { n } }, Date.now() + n);
      deliveries.push(newDeliveryDoc(event, endpoints[0], '{}'));
    }
    await insertDeliveries(mongo.db, deliveries);
    const ids = deliveries.map((d) => d._id);
    await reorderCreated(mongo.db, 'webhook_deliveries', ids);
    await expectListOrder(store, `/v1/webhook_endpoints/${endpoints[0]}/deliveries`, newestFirst(ids));
  });
});

describe('a checkout subscription paid later', () => {
  let stack: CheckoutStack;
  beforeAll(async () => {
    stack = await startCheckoutStack('list-order');
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('lists above a subscription created after its session opened, though its id is older', async () => {
    const store = await createTestStore(stack.mongo.db);
    const catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
    const session = (await createSession(stack.api, store, { offer: catalog.monthly._id })).body;
    const subs = await seedCatalog(stack.mongo.db, store.store._id);
    const between = await seedSubscription(
      { db: stack.mongo.db, taskQueue: 'none' },
      { store: store.store, offer: subs.monthly, product: subs.product },
    );
    // `created` is in seconds: the payment must land in a later second than `between` to be newer.
    await waitFor(async () => Math.floor(Date.now() / 1000) > between.created || null, { description: 'the next second' });
    const form = { ...buyerForm(), method: 'card', card_number: '4242424242424242' };
    const paid = await fetch(`${stack.api.url}/c/${session.id}/pay`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
    expect(paid.status).toBe(303);
    const subscription = await waitFor(async () => (await findCheckoutSession(stack.mongo.db, store.store._id, session.id))?.subscription ?? null, {
      description: 'the session has its subscription',
    });
    expect(subscription < between._id).toBe(true);
    const list = await call(stack.api, store.key, 'GET', '/v1/subscriptions?limit=1');
    expect(idsOf(list)).toEqual([subscription]);
    const next = await call(stack.api, store.key, 'GET', `/v1/subscriptions?limit=1&starting_after=${subscription}`);
    expect(idsOf(next)).toEqual([between._id]);
  });
});

function orderDoc(storeId: string, n: number) {
  return {
    _id: newId('ord', Date.now() + n),
    store_id: storeId,
    status: 'paid',
    paid_at: T0,
    currency: 'brl',
    amount_subtotal: 1000,
    amount_discount: 0,
    amount_total: 1000,
    billing_reason: 'purchase',
    order_type: 'checkout',
    recurrence: 'one_off',
    subscription: null,
    customer: null,
    customer_email: null,
    offer: null,
    product: null,
    items: [{ kind: 'offer', description: 'Plan', quantity: 1, unit_amount: 1000, amount: 1000 }],
    payment_method_type: 'card',
    installments: 1,
    external_order_id: null,
    status_source: 'provider',
    client_reference_id: null,
    checkout_session: null,
    coupon: null,
    metadata: [],
    livemode: false,
    created: T0,
  };
}

function chargeDoc(storeId: string, subscription: string, n: number) {
  return {
    _id: newId('sch', Date.now() + n),
    store_id: storeId,
    key: `order-${n}-${Math.random()}`,
    fingerprint: 'x',
    status: 'succeeded',
    outcome: 'approved',
    subscription,
    customer: null,
    amount: 1000,
    currency: 'brl',
    description: null,
    lines: [],
    order: null,
    transaction: null,
    failure_code: null,
    failure_message: null,
    source: 'api',
    billing_reason: 'manual',
    metadata: [],
    livemode: true,
    created: T0,
    settled_at: T0,
    request_id: null,
    idempotency_key: null,
  };
}
