// Checkout test fixtures: a store's catalog for selling (a one-off offer with packs, currencies and
// installments, recurring offers with and without trial, an archived offer, coupons) and the whole
// stack a checkout needs (FerretDB, Temporal, a billing worker on its own task queue, the API).
import { Writable } from 'node:stream';
import type { Worker } from '@temporalio/worker';
import { buildApp } from '../../api/app';
import { createTestConnection } from '../../adapters/provider/test-connection';
import { freePort } from '../../temporal-dev/servers';
import type { Db } from 'mongodb';
import { createCoupon, createOffer, createProduct } from '../../store/catalog';
import { collections, type CouponDoc, type OfferDoc, type ProductDoc } from '../../store/collections';
import type { ApiConfig } from '../../api/config';
import { createBillingWorker } from '../../worker/main';
import { startTestApi, createTestStore, call, type TestApi, type TestStore } from './api';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from './env';

export interface CheckoutCatalog {
  product: ProductDoc;
  oneOff: OfferDoc;
  monthly: OfferDoc;
  trial: OfferDoc;
  archived: OfferDoc;
  coupon: CouponDoc;
  inactiveCoupon: CouponDoc;
}

export async function seedCheckoutCatalog(db: Db, storeId: string, tag = Math.random().toString(36).slice(2, 8)): Promise<CheckoutCatalog> {
  const product = await createProduct(db, { storeId, name: 'Photography Course', family: 'courses' });
  const oneOff = await createOffer(db, {
    storeId,
    productId: product._id,
    name: 'Photography Course (lifetime)',
    type: 'one_off',
    slug: `photo-${tag}`,
    prices: [
      { currency: 'brl', amount: 19700, default: true },
      { currency: 'usd', amount: 3900, default: false },
    ],
    packs: [1, 5, 10],
    maxInstallments: 12,
  });
  const monthly = await createOffer(db, {
    storeId,
    productId: product._id,
    name: 'Photo Club (monthly)',
    type: 'recurring',
    billingCycle: 'monthly',
    prices: [
      { currency: 'brl', amount: 4990, default: true },
      { currency: 'usd', amount: 990, default: false },
    ],
  });
  const trial = await createOffer(db, {
    storeId,
    productId: product._id,
    name: 'Photo Club (7-day trial)',
    type: 'recurring',
    billingCycle: 'monthly',
    trialDays: 7,
    prices: [{ currency: 'brl', amount: 4990, default: true }],
  });
  const archived = await createOffer(db, {
    storeId,
    productId: product._id,
    name: 'Old offer',
    type: 'one_off',
    prices: [{ currency: 'brl', amount: 1000, default: true }],
    active: false,
  });
  const coupon = await createCoupon(db, { storeId, code: `Welcome10${tag}`, percentOff: 10 });
  const inactiveCoupon = await createCoupon(db, { storeId, code: `Gone${tag}`, percentOff: 50 });
  await collections(db).coupons.updateOne({ _id: inactiveCoupon._id }, { $set: { active: false } });
  return { product, oneOff, monthly, trial, archived, coupon, inactiveCoupon: { ...inactiveCoupon, active: false } };
}

export interface CheckoutStack {
  mongo: TestMongo;
  temporal: TestTemporal;
  worker: Worker;
  api: TestApi;
  taskQueue: string;
  close(): Promise<void>;
}

/** FerretDB + Temporal + a running billing worker + the API on a free port, all for one test file. */
export async function startCheckoutStack(name: string, config: Partial<ApiConfig> = {}): Promise<CheckoutStack> {
  const mongo = await testMongo();
  const temporal = await testTemporal();
  const taskQueue = uniqueTaskQueue(name);
  const worker = await createBillingWorker({
    connection: temporal.nativeConnection,
    namespace: temporal.namespace,
    taskQueue,
    db: mongo.db,
    temporal: temporal.client,
  });
  const running = worker.run();
  const api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue, config });
  return {
    mongo,
    temporal,
    worker,
    api,
    taskQueue,
    async close() {
      await api.close();
      worker.shutdown();
      await running;
      await temporal.close();
      await mongo.close();
    },
  };
}

/** POST /v1/checkout/sessions with a JSON body. */
export function createSession(api: TestApi, store: TestStore, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return call(api, store.key, 'POST', '/v1/checkout/sessions', { json: body, headers });
}

/** A second API on the stack's database and Temporal whose log (level trace) is captured: what a log would leak. */
export async function startLoggedApi(stack: CheckoutStack): Promise<{ url: string; logged: () => string; close: () => Promise<void> }> {
  let logged = '';
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logged += chunk.toString();
      done();
    },
  });
  const port = await freePort();
  const app = await buildApp(
    {
      db: stack.mongo.db,
      config: { ...stack.api.config, port },
      temporal: stack.temporal.client,
      provider: createTestConnection({ db: stack.mongo.db }),
    },
    { logger: { level: 'trace', stream: sink } },
  );
  await app.listen({ port, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${port}`, logged: () => logged, close: () => app.close() };
}

let buyerSeq = 0;

/** The hosted page's buyer fields (a new e-mail each time, valid name, phone and CPF), plus `extra`. */
export function buyerForm(extra: Record<string, string> = {}): Record<string, string> {
  buyerSeq += 1;
  return {
    email: `buyer${buyerSeq}-${Date.now()}@example.com`,
    name: 'Maria da Silva',
    phone: '+55 11 98765-4321',
    document_type: 'cpf',
    document_number: '529.982.247-25',
    ...extra,
  };
}

export { createTestStore, call };
