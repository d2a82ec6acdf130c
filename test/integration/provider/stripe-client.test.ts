// The `stripe` npm package as a client of this API (custom host, port and protocol, our key): it creates,
// updates, retrieves and auto-paginates customers with its own form encoding and headers (Stripe-Version,
// automatic Idempotency-Key), and our errors surface as its error classes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { testMongo, type TestMongo } from '../../support/env';
import { createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { collections } from '../../../store/collections';
import { newCustomerDoc } from '../../../store/customers';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;

function client(key: string, target: TestApi = api): Stripe {
  const { port } = new URL(target.url);
  return new Stripe(key, { host: '127.0.0.1', port, protocol: 'http', maxNetworkRetries: 0, telemetry: false });
}

// Our customers need a phone and a document, which Stripe's types do not know.
type CustomerParams = Stripe.CustomerCreateParams & { document?: { type: string; number: string } };
const createParams = (email: string, extra: Partial<CustomerParams> = {}) =>
  ({
    email,
    name: 'Stripe Client',
    phone: '+5511987654321',
    document: { type: 'cpf', number: '529.982.247-25' },
    ...extra,
  }) as Stripe.CustomerCreateParams;

async function caught(promise: Promise<unknown>): Promise<Stripe.errors.StripeError> {
  try {
    await promise;
  } catch (error) {
    return error as Stripe.errors.StripeError;
  }
  throw new Error('expected the call to fail');
}

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  store = await createTestStore(mongo.db);
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

describe('stripe package as a client', () => {
  it('creates, retrieves and updates a customer (metadata as form brackets, an empty value removes a key)', async () => {
    const stripe = client(store.key);
    const created = await stripe.customers.create(createParams('Stripe.Client@Example.com', { metadata: { plan: 'gold', seats: '3' } }));
    expect(created).toMatchObject({
      object: 'customer',
      email: 'stripe.client@example.com',
      name: 'Stripe Client',
      metadata: { plan: 'gold', seats: '3' },
    });
    expect(created.id).toMatch(/^cust_/);
    expect(created.lastResponse.statusCode).toBe(201);
    expect(created.lastResponse.requestId).toMatch(/^req_[0-9a-f]{20}$/);

    const retrieved = await stripe.customers.retrieve(created.id);
    expect(retrieved).toMatchObject({ id: created.id, email: 'stripe.client@example.com' });

    const updated = await stripe.customers.update(created.id, { name: 'Renamed Client', metadata: { plan: '', tier: 'b' } });
    expect(updated).toMatchObject({ id: created.id, name: 'Renamed Client', phone: '+5511987654321', metadata: { tier: 'b' } });
  });

  it('auto-paginates the customer list across pages, newest first', async () => {
    const other = await createTestStore(mongo.db);
    const docs = Array.from({ length: 25 }, (_, i) =>
      newCustomerDoc(other.store._id, { email: `auto${i}@example.com` }, {}, Date.UTC(2026, 0, 1) + i * 1000),
    );
    await collections(mongo.db).customers.insertMany(docs);
    const stripe = client(other.key);
    const seen = await stripe.customers.list({ limit: 4 }).autoPagingToArray({ limit: 1000 });
    expect(seen.map((c) => c.id)).toEqual(docs.map((d) => d._id).reverse());
    const filtered = await stripe.customers.list({ email: 'AUTO7@example.com' });
    expect(filtered.data.map((c) => c.email)).toEqual(['auto7@example.com']);
    expect(filtered.has_more).toBe(false);
  });

  it('an idempotent create through the client replays the first response', async () => {
    const stripe = client(store.key);
    const first = await stripe.customers.create(createParams('idem-stripe@example.com'), { idempotencyKey: 'stripe-idem-1' });
    const second = await stripe.customers.create(createParams('idem-stripe@example.com'), { idempotencyKey: 'stripe-idem-1' });
    expect(second.id).toBe(first.id);
    expect(second.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect(second.lastResponse.headers['original-request-id']).toBe(first.lastResponse.requestId);
  });

  it('a missing customer and an invalid parameter are StripeInvalidRequestError with our code and param', async () => {
    const stripe = client(store.key);
    const missing = await caught(stripe.customers.retrieve('cust_nope'));
    expect(missing).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect([missing.statusCode, missing.code, missing.param, missing.type]).toEqual([404, 'resource_missing', 'id', 'StripeInvalidRequestError']);
    expect(missing.requestId).toMatch(/^req_/);

    const invalid = await caught(stripe.customers.create(createParams('bad-phone@example.com', { phone: '12' })));
    expect(invalid).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect([invalid.statusCode, invalid.code, invalid.param]).toEqual([400, 'parameter_invalid', 'phone']);

    const nested = await caught(
      stripe.customers.create({ ...createParams('nested@example.com'), document: { type: 'cpf' } } as Stripe.CustomerCreateParams),
    );
    expect([nested.statusCode, nested.code, nested.param]).toEqual([400, 'parameter_missing', 'document.number']);
  });

  it('a wrong key is StripeAuthenticationError; a read-only key writing is StripePermissionError', async () => {
    const wrong = await caught(client(`vk_live_${'a'.repeat(44)}`).customers.list());
    expect(wrong).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    expect([wrong.statusCode, wrong.code]).toEqual([401, 'invalid_api_key']);

    const { key } = await store.makeKey(['read']);
    const denied = await caught(client(key).customers.create(createParams('denied@example.com')));
    expect(denied).toBeInstanceOf(Stripe.errors.StripePermissionError);
    expect([denied.statusCode, denied.code]).toEqual([403, 'insufficient_scope']);
  });

  it('a reused idempotency key is StripeIdempotencyError', async () => {
    const stripe = client(store.key);
    await stripe.customers.create(createParams('reuse-a@example.com'), { idempotencyKey: 'stripe-reuse' });
    const reused = await caught(stripe.customers.create(createParams('reuse-b@example.com'), { idempotencyKey: 'stripe-reuse' }));
    expect(reused).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    expect([reused.statusCode, reused.code]).toEqual([400, 'idempotency_key_reused']);
  });

  it('the rate limit is StripeRateLimitError', async () => {
    const limited = await startTestApi({ db: mongo.db, config: { keyRateLimit: 2, keyRateWindowMs: 3_600_000 } });
    try {
      const { key } = await store.makeKey(['read']);
      const stripe = client(key, limited);
      const errors: unknown[] = [];
      for (let i = 0; i < 3; i++) await stripe.customers.list().catch((e: unknown) => errors.push(e));
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
      expect((errors[0] as Stripe.errors.StripeError).code).toBe('rate_limit');
    } finally {
      await limited.close();
    }
  });
});
