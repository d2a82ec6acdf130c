// Customers over real HTTP against FerretDB: every validation of the spec (name, email, phone,
// documents, address), customer_rejected from the test provider, create-or-return by email, partial
// updates with metadata replaced, metadata rules, events written, and other stores' customers hidden.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testMongo, type TestMongo } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { collections } from '../../../store/collections';
import { newCustomerDoc } from '../../../store/customers';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;

let seq = 0;
const uniqueEmail = () => `person${Date.now()}${++seq}@example.com`;
const body = (overrides: Record<string, unknown> = {}) => ({
  email: uniqueEmail(),
  name: 'Ana Souza',
  phone: '+5511987654321',
  document: { type: 'cpf', number: '529.982.247-25' },
  ...overrides,
});
const create = (json: unknown, key = store.key) => call(api, key, 'POST', '/v1/customers', { json });
const update = (id: string, json: unknown, key = store.key) => call(api, key, 'POST', `/v1/customers/${id}`, { json });

function expectInvalid(res: { status: number; body: any }, code: 'parameter_invalid' | 'parameter_missing', param: string) {
  expect([res.status, res.body?.error?.type, res.body?.error?.code, res.body?.error?.param]).toEqual([400, 'invalid_request_error', code, param]);
}

async function eventsFor(customerId: string) {
  const docs = await collections(mongo.db).events.find({ store_id: store.store._id }).sort({ _id: 1 }).toArray();
  return docs.filter((e) => JSON.parse(e.data_json).object.id === customerId);
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

describe('create', () => {
  it('creates a customer: 201, email lowercase, phone in E.164, only the masked document, metadata as text', async () => {
    const email = uniqueEmail();
    const res = await create(body({ email: `  ${email.toUpperCase()} `, name: '  Ana Souza  ', metadata: { plan: 'gold', seats: 3, vip: true } }));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^cust_/),
      object: 'customer',
      email,
      name: 'Ana Souza',
      phone: '+5511987654321',
      document: { type: 'cpf', number_masked: '*******4725' },
      address: null,
      country: null,
      locale: null,
      metadata: { plan: 'gold', seats: '3', vip: 'true' },
      test_clock: null,
      livemode: true,
      created: expect.any(Number),
    });
    expect(JSON.stringify(res.body)).not.toContain('52998224725');
    expect(Math.abs(res.body.created - Date.now() / 1000)).toBeLessThan(60);
  });

  it('writes customer.created with the envelope fields and the customer object', async () => {
    const res = await call(api, store.key, 'POST', '/v1/customers', { json: body(), headers: { 'Idempotency-Key': `evt-${Date.now()}` } });
    const events = await eventsFor(res.body.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      _id: expect.stringMatching(/^evt_/),
      store_id: store.store._id,
      type: 'customer.created',
      api_version: '2026-11-01',
      livemode: true,
      request: { id: res.headers.get('request-id'), idempotency_key: expect.stringMatching(/^evt-/) },
    });
    expect(JSON.parse(events[0].data_json)).toEqual({ object: res.body });
  });

  it('an existing email (any case) answers 200 with the existing customer, changes nothing and emits nothing', async () => {
    const email = uniqueEmail();
    const first = await create(body({ email, name: 'First Name', metadata: { a: '1' } }));
    const second = await create(body({ email: email.toUpperCase(), name: 'Second Name', phone: '+14155552671', metadata: { b: '2' } }));
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(await eventsFor(first.body.id)).toHaveLength(1);
  });

  it('accepts a form-encoded body with bracket notation', async () => {
    const email = uniqueEmail();
    const form = new URLSearchParams({
      email,
      name: 'Form Person',
      phone: '(11) 98765-4321',
      'document[type]': 'cnpj',
      'document[number]': '11.222.333/0001-81',
      'address[line1]': 'Rua A',
      'address[number]': '100',
      'address[city]': 'São Paulo',
      'address[state]': 'SP',
      'address[postal_code]': '01000-000',
      'address[country]': 'br',
      'metadata[order.ref]': 'x1',
      'metadata[$price]': '10',
    }).toString();
    const res = await call(api, store.key, 'POST', '/v1/customers', { form });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      email,
      phone: '+5511987654321',
      document: { type: 'cnpj', number_masked: '**********0181' },
      address: {
        line1: 'Rua A',
        line2: null,
        number: '100',
        district: null,
        city: 'São Paulo',
        state: 'SP',
        postal_code: '01000-000',
        country: 'BR',
      },
      country: 'BR',
      metadata: { 'order.ref': 'x1', $price: '10' },
    });
  });

  it.each([
    ['name of 2 characters', { name: 'Al' }, 'name'],
    ['name of 121 characters', { name: 'x'.repeat(121) }, 'name'],
    ['name of 3 spaces', { name: '   ' }, 'name'],
    ['email without a domain', { email: 'ana@' }, 'email'],
    ['phone too short', { phone: '123' }, 'phone'],
    ['a national number of another country', { phone: '(202) 555-0123' }, 'phone'],
    ['phone of letters', { phone: 'call me maybe' }, 'phone'],
    // Check digits are verified only where the store asks for it: customers/documents.test.ts.
    ['CPF of 10 digits', { document: { type: 'cpf', number: '5299822472' } }, 'document.number'],
    ['CNPJ of 13 digits', { document: { type: 'cnpj', number: '11.222.333/0001-8' } }, 'document.number'],
    ['passport with symbols', { document: { type: 'passport', number: 'AB#123' } }, 'document.number'],
    ['unknown document type', { document: { type: 'ssn', number: '123' } }, 'document.type'],
    [
      'address country that is not alpha-2',
      { address: { line1: 'R', city: 'C', state: 'S', postal_code: '1', country: 'Brazil' } },
      'address.country',
    ],
    ['unknown address field', { address: { line1: 'R', city: 'C', state: 'S', postal_code: '1', country: 'BR', planet: 'Earth' } }, 'address.planet'],
    ['metadata value over 500 characters', { metadata: { note: 'x'.repeat(501) } }, 'metadata.note'],
    ['metadata with 51 keys', { metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata'],
    ['metadata that is a list', { metadata: ['a'] }, 'metadata'],
    ['metadata value that is an object', { metadata: { nested: { a: 1 } } }, 'metadata.nested'],
  ])('%s answers 400 parameter_invalid with its param', async (_what, overrides, param) => {
    const res = await create(body(overrides));
    expectInvalid(res, 'parameter_invalid', param);
  });

  it.each([
    ['email', 'email'],
    ['name', 'name'],
    ['phone', 'phone'],
    ['document', 'document'],
  ])('without %s answers 400 parameter_missing', async (field, param) => {
    const json: Record<string, unknown> = body();
    delete json[field];
    expectInvalid(await create(json), 'parameter_missing', param);
  });

  it.each([['line1'], ['city'], ['state'], ['postal_code'], ['country']])(
    'an address without %s answers parameter_missing address.%s',
    async (field) => {
      const address: Record<string, string> = { line1: 'Rua A', city: 'Rio', state: 'RJ', postal_code: '20000-000', country: 'BR' };
      delete address[field];
      expectInvalid(await create(body({ address })), 'parameter_missing', `address.${field}`);
    },
  );

  it('a document number without its type answers parameter_missing document.type', async () => {
    expectInvalid(await create(body({ document: { number: '52998224725' } })), 'parameter_missing', 'document.type');
  });

  it('accepts the boundaries: name of 3 and of 120 characters, 50 metadata keys of 40 characters with 500-character values', async () => {
    expect((await create(body({ name: 'Ana' }))).status).toBe(201);
    expect((await create(body({ name: 'x'.repeat(120) }))).status).toBe(201);
    const metadata = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`${String(i).padStart(2, '0')}${'k'.repeat(38)}`, 'v'.repeat(500)]));
    const res = await create(body({ metadata }));
    expect(res.status).toBe(201);
    expect(res.body.metadata).toEqual(metadata);
  });

  it('passport and tax_id numbers lose dots and dashes; a national phone of a US store is read as US', async () => {
    const us = await createTestStore(mongo.db, { country: 'US', currency: 'usd', timezone: 'America/New_York' });
    const res = await create(body({ phone: '(212) 736-5000', document: { type: 'passport', number: 'ab-123.456' } }), us.key);
    expect(res.status).toBe(201);
    expect(res.body.phone).toBe('+12127365000');
    expect(res.body.document).toEqual({ type: 'passport', number_masked: '****3456' });
    const stored = await collections(mongo.db).customers.findOne({ _id: res.body.id });
    expect(stored!.document!.number).toBe('AB123456');
    const tax = await create(body({ document: { type: 'tax_id', number: '12-3456789' } }), us.key);
    expect(tax.body.document).toEqual({ type: 'tax_id', number_masked: '*****6789' });
  });

  it('an email at reject.test is refused by the test provider: 400 customer_rejected with its reason, nothing stored', async () => {
    const email = `buyer${Date.now()}@reject.test`;
    const res = await create(body({ email }));
    expect([res.status, res.body.error.type, res.body.error.code]).toEqual([400, 'invalid_request_error', 'customer_rejected']);
    expect(res.body.error.message.length).toBeGreaterThan(20);
    expect(await collections(mongo.db).customers.countDocuments({ email })).toBe(0);
    const events = await collections(mongo.db).events.find({ store_id: store.store._id }).toArray();
    expect(events.some((e) => e.data_json.includes(email))).toBe(false);
  });

  it('a customer written without an email claim (seeded directly) is still found by create and by the email filter', async () => {
    const email = uniqueEmail();
    const seeded = newCustomerDoc(store.store._id, { email, name: 'Seeded Person' }, {});
    await collections(mongo.db).customers.insertOne(seeded);
    const again = await create(body({ email }));
    expect([again.status, again.body.id, again.body.name]).toEqual([200, seeded._id, 'Seeded Person']);
    const listed = await call(api, store.key, 'GET', `/v1/customers?email=${email}`);
    expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([seeded._id]);
  });

  it('after an email change the old email is free and the new one finds the customer', async () => {
    const oldEmail = uniqueEmail();
    const newEmail = uniqueEmail();
    const first = await create(body({ email: oldEmail }));
    expect((await update(first.body.id, { email: newEmail })).status).toBe(200);
    const byNew = await call(api, store.key, 'GET', `/v1/customers?email=${newEmail}`);
    expect(byNew.body.data.map((c: { id: string }) => c.id)).toEqual([first.body.id]);
    expect((await call(api, store.key, 'GET', `/v1/customers?email=${oldEmail}`)).body.data).toEqual([]);
    const reused = await create(body({ email: oldEmail }));
    expect(reused.status).toBe(201);
    expect(reused.body.id).not.toBe(first.body.id);
    expect((await create(body({ email: newEmail }))).body.id).toBe(first.body.id);
  });

  it('metadata with a null value leaves the key out', async () => {
    const res = await create(body({ metadata: { keep: 'yes', drop: null } }));
    expect(res.body.metadata).toEqual({ keep: 'yes' });
  });
});

describe('retrieve and update', () => {
  it('retrieves a customer; metadata keys with dots and a leading $ come back exactly as sent', async () => {
    const created = await create(body({ metadata: { 'a.b.c': '1', $set: 'x', 'x.$y': 'z' } }));
    const res = await call(api, store.key, 'GET', `/v1/customers/${created.body.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created.body);
    expect(res.body.metadata).toEqual({ 'a.b.c': '1', $set: 'x', 'x.$y': 'z' });
  });

  it('changes only what is sent, replaces metadata as a whole, and writes customer.updated', async () => {
    const created = await create(body({ metadata: { a: '1', b: '2' } }));
    const res = await update(created.body.id, { name: 'New Name', metadata: { c: 3, d: null } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...created.body, name: 'New Name', metadata: { c: '3' } });
    const events = await eventsFor(created.body.id);
    expect(events.map((e) => e.type)).toEqual(['customer.created', 'customer.updated']);
    expect(JSON.parse(events[1].data_json)).toEqual({ object: res.body });
    const again = await call(api, store.key, 'GET', `/v1/customers/${created.body.id}`);
    expect(again.body).toEqual(res.body);
  });

  it('an update without metadata keeps it; an empty form value for metadata clears it', async () => {
    const created = await create(body({ metadata: { a: '1' } }));
    const kept = await update(created.body.id, { phone: '(21) 98888-7777' });
    expect(kept.body).toMatchObject({ phone: '+5521988887777', metadata: { a: '1' } });
    const cleared = await call(api, store.key, 'POST', `/v1/customers/${created.body.id}`, { form: 'metadata=' });
    expect(cleared.body.metadata).toEqual({});
  });

  it('updates the address and document, and the email (stored lowercase)', async () => {
    const created = await create(body());
    const email = uniqueEmail();
    const res = await update(created.body.id, {
      email: email.toUpperCase(),
      document: { type: 'cnpj', number: '11222333000181' },
      address: { line1: 'Av B', city: 'Curitiba', state: 'PR', postal_code: '80000-000', country: 'BR' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      email,
      document: { type: 'cnpj', number_masked: '**********0181' },
      country: 'BR',
      address: { city: 'Curitiba' },
    });
  });

  it('an invalid field answers 400 with its param and changes nothing', async () => {
    const created = await create(body());
    expectInvalid(await update(created.body.id, { name: 'New Name', phone: '12' }), 'parameter_invalid', 'phone');
    expectInvalid(await update(created.body.id, { name: 'No' }), 'parameter_invalid', 'name');
    expectInvalid(await update(created.body.id, { address: { city: 'Rio' } }), 'parameter_missing', 'address.line1');
    const now = await call(api, store.key, 'GET', `/v1/customers/${created.body.id}`);
    expect(now.body).toEqual(created.body);
    expect((await eventsFor(created.body.id)).map((e) => e.type)).toEqual(['customer.created']);
  });

  it("changing the email to another customer's answers parameter_invalid email", async () => {
    const a = await create(body());
    const b = await create(body());
    expectInvalid(await update(b.body.id, { email: a.body.email }), 'parameter_invalid', 'email');
  });

  it('an unknown id answers 404 resource_missing before any change, and emits nothing', async () => {
    const before = await collections(mongo.db).events.countDocuments({ store_id: store.store._id });
    const res = await update('cust_unknown', { name: 'Nobody Here' });
    expect([res.status, res.body.error.type, res.body.error.code, res.body.error.param]).toEqual([
      404,
      'invalid_request_error',
      'resource_missing',
      'id',
    ]);
    expect(await collections(mongo.db).events.countDocuments({ store_id: store.store._id })).toBe(before);
    const get = await call(api, store.key, 'GET', '/v1/customers/cust_unknown');
    expect([get.status, get.body.error.code, get.body.error.param]).toEqual([404, 'resource_missing', 'id']);
  });

  it("another store's customer answers exactly like a missing one, and is not changed", async () => {
    const created = await create(body());
    const other = await createTestStore(mongo.db);
    const read = await call(api, other.key, 'GET', `/v1/customers/${created.body.id}`);
    const write = await update(created.body.id, { name: 'Hijacked' }, other.key);
    const missing = await call(api, other.key, 'GET', '/v1/customers/cust_unknown');
    for (const res of [read, write]) {
      expect([res.status, res.body.error.code, res.body.error.param]).toEqual([404, 'resource_missing', 'id']);
      expect(res.body.error.message.replace(created.body.id, 'X')).toBe(missing.body.error.message.replace('cust_unknown', 'X'));
    }
    const list = await call(api, other.key, 'GET', `/v1/customers?email=${created.body.email}`);
    expect(list.body.data).toEqual([]);
    expect((await call(api, store.key, 'GET', `/v1/customers/${created.body.id}`)).body.name).toBe('Ana Souza');
  });
});
