// Lists over real HTTP against FerretDB: the envelope, limit bounds, cursors in both directions with
// filters kept, both cursors or an unknown one refused, a stable order for equal `created`, offers in
// alphabetical order with type/active filters; and the read-only orders, offers and products objects.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testMongo, type TestMongo } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { collections } from '../../../store/collections';
import { newCustomerDoc } from '../../../store/customers';
import { ordersCollection, type OrderDoc } from '../../../store/orders';
import { createOffer, createProduct } from '../../../store/catalog';
import { newId } from '../../../domain/ids';
import { encodeMetadata } from '../../../domain/metadata';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;
let other: TestStore;
const T0 = Date.UTC(2026, 0, 1);

function orderDoc(storeId: string, ms: number, fields: Partial<OrderDoc> = {}): OrderDoc {
  return {
    _id: newId('ord', ms),
    store_id: storeId,
    status: 'paid',
    paid_at: Math.floor(ms / 1000),
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
    created: Math.floor(ms / 1000),
    ...fields,
  };
}

/** Walks a list forward with starting_after, then back from the end with ending_before. */
async function walk(path: string, limit: number) {
  const sep = path.includes('?') ? '&' : '?';
  const forward: string[][] = [];
  let cursor: string | null = null;
  for (;;) {
    const res = await call(api, store.key, 'GET', `${path}${sep}limit=${limit}${cursor ? `&starting_after=${cursor}` : ''}`);
    expect(res.status).toBe(200);
    forward.push(res.body.data.map((d: { id: string }) => d.id));
    if (!res.body.has_more) break;
    cursor = res.body.data[res.body.data.length - 1].id;
  }
  const backward: string[][] = [];
  cursor = forward[forward.length - 1][0];
  backward.unshift(forward[forward.length - 1]);
  for (;;) {
    const res = await call(api, store.key, 'GET', `${path}${sep}limit=${limit}&ending_before=${cursor}`);
    expect(res.status).toBe(200);
    backward.unshift(res.body.data.map((d: { id: string }) => d.id));
    if (!res.body.has_more) break;
    cursor = res.body.data[0].id;
  }
  return { forward, backward };
}

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  store = await createTestStore(mongo.db);
  other = await createTestStore(mongo.db);
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

describe('customers list', () => {
  let ids: string[];
  beforeAll(async () => {
    // 23 customers, several created within the same second.
    const docs = Array.from({ length: 23 }, (_, i) =>
      newCustomerDoc(store.store._id, { email: `person${i}@example.com`, name: `Person ${i}` }, {}, T0 + Math.floor(i / 4) * 1000 + i),
    );
    await collections(mongo.db).customers.insertMany(docs);
    await collections(mongo.db).customers.insertOne(newCustomerDoc(other.store._id, { email: 'person1@example.com' }, {}, T0));
    ids = docs.map((d) => d._id).reverse();
  });

  it('answers the list envelope, newest first, 10 by default', async () => {
    const res = await call(api, store.key, 'GET', '/v1/customers');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'has_more', 'object', 'url']);
    expect(res.body).toMatchObject({ object: 'list', url: '/v1/customers', has_more: true });
    expect(res.body.data.map((c: { id: string }) => c.id)).toEqual(ids.slice(0, 10));
  });

  it('pages forward with starting_after and back with ending_before, same pages, no gaps or repeats within equal created seconds', async () => {
    const { forward, backward } = await walk('/v1/customers', 4);
    expect(forward.flat()).toEqual(ids);
    expect(forward.map((p) => p.length)).toEqual([4, 4, 4, 4, 4, 3]);
    // Back from the last page to the first: every page newest first, the whole list again.
    expect(backward.flat()).toEqual(ids);
    expect(backward.map((p) => p.length)).toEqual([4, 4, 4, 4, 4, 3]);
  });

  it('limit 100 returns everything with has_more false', async () => {
    const res = await call(api, store.key, 'GET', '/v1/customers?limit=100');
    expect(res.body.data).toHaveLength(23);
    expect(res.body.has_more).toBe(false);
  });

  it('the email filter is exact and case-insensitive, and keeps applying with a cursor', async () => {
    const res = await call(api, store.key, 'GET', '/v1/customers?email=PERSON7@Example.com');
    expect(res.body.data.map((c: { email: string }) => c.email)).toEqual(['person7@example.com']);
    const after = await call(api, store.key, 'GET', `/v1/customers?email=person7@example.com&starting_after=${ids[0]}`);
    expect(after.body.data.map((c: { email: string }) => c.email)).toEqual(['person7@example.com']);
    const past = await call(api, store.key, 'GET', `/v1/customers?email=person7@example.com&starting_after=${res.body.data[0].id}`);
    expect(past.body).toMatchObject({ data: [], has_more: false });
    expect((await call(api, store.key, 'GET', '/v1/customers?email=person7@example')).body.data).toEqual([]);
  });

  it.each([['0'], ['101'], ['abc'], ['-1'], ['1.5']])('limit=%s answers 400 parameter_invalid with param limit', async (limit) => {
    const res = await call(api, store.key, 'GET', `/v1/customers?limit=${limit}`);
    expect([res.status, res.body.error.code, res.body.error.param]).toEqual([400, 'parameter_invalid', 'limit']);
  });

  it('both cursors answer 400 parameter_invalid', async () => {
    const res = await call(api, store.key, 'GET', `/v1/customers?starting_after=${ids[3]}&ending_before=${ids[1]}`);
    expect([res.status, res.body.error.type, res.body.error.code]).toEqual([400, 'invalid_request_error', 'parameter_invalid']);
  });

  it.each([['starting_after'], ['ending_before']])('an unknown %s answers 404 resource_missing naming the cursor', async (param) => {
    const res = await call(api, store.key, 'GET', `/v1/customers?${param}=cust_doesnotexist`);
    expect([res.status, res.body.error.type, res.body.error.code, res.body.error.param]).toEqual([
      404,
      'invalid_request_error',
      'resource_missing',
      param,
    ]);
  });

  it("another store's customer is an unknown cursor and an unknown id", async () => {
    const foreign = await collections(mongo.db).customers.findOne({ store_id: other.store._id });
    const cursor = await call(api, store.key, 'GET', `/v1/customers?starting_after=${foreign!._id}`);
    expect([cursor.status, cursor.body.error.param]).toEqual([404, 'starting_after']);
    const direct = await call(api, store.key, 'GET', `/v1/customers/${foreign!._id}`);
    const missing = await call(api, store.key, 'GET', '/v1/customers/cust_doesnotexist');
    expect([direct.status, direct.body.error.code, direct.body.error.param]).toEqual([404, 'resource_missing', 'id']);
    expect(direct.body.error.message.replace(foreign!._id, 'X')).toBe(missing.body.error.message.replace('cust_doesnotexist', 'X'));
  });
});

describe('orders', () => {
  let all: OrderDoc[];
  beforeAll(async () => {
    all = Array.from({ length: 30 }, (_, i) =>
      orderDoc(store.store._id, T0 + Math.floor(i / 5) * 1000 + i, {
        customer: i % 3 === 0 ? 'cust_A' : 'cust_B',
        status: i % 2 === 0 ? 'paid' : 'failed',
        metadata: encodeMetadata({ n: String(i) }),
      }),
    );
    await ordersCollection(mongo.db).insertMany(all);
    await ordersCollection(mongo.db).insertOne(orderDoc(other.store._id, T0, { customer: 'cust_A' }));
  });
  const newestFirst = (docs: OrderDoc[]) => docs.map((d) => d._id).reverse();

  it('lists newest first and pages both ways with the customer and status filters kept', async () => {
    const expected = newestFirst(all.filter((o) => o.customer === 'cust_B' && o.status === 'paid'));
    expect(expected.length).toBeGreaterThan(6);
    const { forward, backward } = await walk('/v1/orders?customer=cust_B&status=paid', 3);
    expect(forward.flat()).toEqual(expected);
    expect(backward.flat()).toEqual(expected);
  });

  it('the created range filter (bracket notation) keeps applying with a cursor', async () => {
    const from = Math.floor((T0 + 2000) / 1000);
    const to = Math.floor((T0 + 4000) / 1000);
    const expected = newestFirst(all.filter((o) => o.created >= from && o.created < to));
    const { forward } = await walk(`/v1/orders?created[gte]=${from}&created[lt]=${to}`, 4);
    expect(forward.flat()).toEqual(expected);
  });

  it('an unknown status filter value answers 400 parameter_invalid with param status', async () => {
    const res = await call(api, store.key, 'GET', '/v1/orders?status=lost');
    expect([res.status, res.body.error.code, res.body.error.param]).toEqual([400, 'parameter_invalid', 'status']);
  });

  it('retrieves an order with the fields DESIGN.md fixes; another store’s order answers 404', async () => {
    const doc = all[4];
    const res = await call(api, store.key, 'GET', `/v1/orders/${doc._id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: doc._id,
      object: 'order',
      status: 'paid',
      paid: true,
      amount_total: 1000,
      metadata: { n: '4' },
      livemode: false,
      created: doc.created,
    });
    for (const field of [
      'customer_email',
      'offer',
      'product',
      'items',
      'payment_method_type',
      'installments',
      'external_order_id',
      'status_source',
      'client_reference_id',
      'checkout_session',
      'recurrence',
      'order_type',
      'billing_reason',
    ]) {
      expect(res.body).toHaveProperty(field);
    }
    const foreign = await ordersCollection(mongo.db).findOne({ store_id: other.store._id });
    const hidden = await call(api, store.key, 'GET', `/v1/orders/${foreign!._id}`);
    expect([hidden.status, hidden.body.error.code, hidden.body.error.param]).toEqual([404, 'resource_missing', 'id']);
  });
});

describe('offers and products', () => {
  let names: string[];
  let productId: string;
  beforeAll(async () => {
    const product = await createProduct(mongo.db, { storeId: store.store._id, name: 'Course', description: 'A course', family: 'edu' });
    productId = product._id;
    const specs: [string, 'one_off' | 'recurring', boolean][] = [
      ['Delta', 'recurring', true],
      ['alpha', 'one_off', true],
      ['Charlie', 'recurring', false],
      ['Bravo', 'one_off', true],
      ['Echo', 'recurring', true],
      ['Bravo', 'recurring', true],
      ['Foxtrot', 'one_off', false],
    ];
    for (const [name, type, active] of specs) {
      await createOffer(mongo.db, {
        storeId: store.store._id,
        productId,
        name,
        type,
        active,
        prices: [{ currency: 'brl', amount: 1990, default: true }],
        billingCycle: type === 'recurring' ? 'monthly' : null,
      });
    }
    names = specs.map((s) => s[0]);
    await createProduct(mongo.db, { storeId: other.store._id, name: 'Foreign' });
  });

  it('offers list alphabetically by name, ties by id, across pages both ways', async () => {
    const { forward, backward } = await walk('/v1/offers', 2);
    const res = await call(api, store.key, 'GET', '/v1/offers?limit=100');
    const listed = res.body.data.map((o: { name: string }) => o.name);
    expect(listed).toEqual(['alpha', 'Bravo', 'Bravo', 'Charlie', 'Delta', 'Echo', 'Foxtrot']);
    expect(names).toHaveLength(7);
    expect(forward.flat()).toEqual(res.body.data.map((o: { id: string }) => o.id));
    expect(backward.flat()).toEqual(forward.flat());
  });

  it('offers filter by type and active, also with a cursor', async () => {
    const recurring = await call(api, store.key, 'GET', '/v1/offers?type=recurring&limit=100');
    expect(recurring.body.data.map((o: { name: string }) => o.name)).toEqual(['Bravo', 'Charlie', 'Delta', 'Echo']);
    const activeRecurring = await call(api, store.key, 'GET', '/v1/offers?type=recurring&active=true&limit=100');
    expect(activeRecurring.body.data.map((o: { name: string }) => o.name)).toEqual(['Bravo', 'Delta', 'Echo']);
    const afterBravo = await call(
      api,
      store.key,
      'GET',
      `/v1/offers?type=recurring&active=true&limit=1&starting_after=${activeRecurring.body.data[0].id}`,
    );
    expect(afterBravo.body.data.map((o: { name: string }) => o.name)).toEqual(['Delta']);
    expect(afterBravo.body.has_more).toBe(true);
    const inactive = await call(api, store.key, 'GET', '/v1/offers?active=false');
    expect(inactive.body.data.map((o: { name: string }) => o.name)).toEqual(['Charlie', 'Foxtrot']);
    const bad = await call(api, store.key, 'GET', '/v1/offers?type=weekly');
    expect([bad.status, bad.body.error.code, bad.body.error.param]).toEqual([400, 'parameter_invalid', 'type']);
  });

  it('retrieves an offer with its product, prices and checkout_url', async () => {
    const list = await call(api, store.key, 'GET', '/v1/offers?limit=1');
    const res = await call(api, store.key, 'GET', `/v1/offers/${list.body.data[0].id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      object: 'offer',
      name: 'alpha',
      type: 'one_off',
      active: true,
      product: { id: productId, name: 'Course' },
      prices: [{ currency: 'brl', amount: 1990, default: true }],
      livemode: true,
    });
    expect(res.body.checkout_url).toMatch(/^http/);
  });

  it('lists and retrieves products; another store’s product answers 404', async () => {
    const list = await call(api, store.key, 'GET', '/v1/products');
    expect(list.body).toMatchObject({ object: 'list', url: '/v1/products', has_more: false });
    expect(list.body.data).toEqual([
      {
        id: productId,
        object: 'product',
        name: 'Course',
        description: 'A course',
        family: 'edu',
        active: true,
        files: [],
        livemode: true,
        created: expect.any(Number),
      },
    ]);
    const one = await call(api, store.key, 'GET', `/v1/products/${productId}`);
    expect(one.body.id).toBe(productId);
    const foreign = await collections(mongo.db).products.findOne({ store_id: other.store._id });
    const hidden = await call(api, store.key, 'GET', `/v1/products/${foreign!._id}`);
    expect([hidden.status, hidden.body.error.code]).toEqual([404, 'resource_missing']);
    const hiddenOffer = await call(api, other.key, 'GET', `/v1/offers/${list.body.data[0].id}`);
    expect(hiddenOffer.status).toBe(404);
  });
});
