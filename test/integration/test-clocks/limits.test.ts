// What this tests: the bounds on test clocks over real HTTP (API, worker, FerretDB, Temporal dev server):
// a store holds at most 20 clocks and a clock at most 3 customers and 10 checkout sessions, each refused
// beyond with 400 test_clock_limit, and racing creates never pass a cap.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TEST_CLOCK_LIMITS } from '../../../services/test-clocks';
import { call, createSession, createTestStore, seedCheckoutCatalog, startCheckoutStack, type CheckoutStack } from '../../support/checkout-fixtures';
import type { TestStore } from '../../support/api';

let stack: CheckoutStack;
const T0 = 1_767_225_600;
const customerFields = { name: 'Ana Clock', phone: '+5511999990000', document: { type: 'cpf', number: '529.982.247-25' } };

beforeAll(async () => {
  stack = await startCheckoutStack('test-clock-limits', { ipRateLimit: 100_000 });
});

afterAll(async () => {
  await stack?.close();
});

const post = (store: TestStore, path: string, json: unknown) => call(stack.api, store.key, 'POST', path, { json });
const newClock = async (store: TestStore) => post(store, '/v1/test_helpers/test_clocks', { frozen_time: T0 });
const clockCustomer = (store: TestStore, clock: string) =>
  post(store, '/v1/customers', { email: `c-${Math.random().toString(36).slice(2, 10)}@example.com`, ...customerFields, test_clock: clock });

function expectLimit(res: { status: number; body: any }, param: string | null) {
  expect({ status: res.status, type: res.body?.error?.type, code: res.body?.error?.code, param: res.body?.error?.param }).toEqual({
    status: 400,
    type: 'invalid_request_error',
    code: 'test_clock_limit',
    param,
  });
  expect(res.body.error.message).toMatch(/at most|the most/);
}

describe('test clock caps', () => {
  test('a store makes at most 20 clocks, 25 racing creates included; past the cap 400 test_clock_limit, and a deleted clock frees its place', async () => {
    const store = await createTestStore(stack.mongo.db);
    const racing = await Promise.all(Array.from({ length: TEST_CLOCK_LIMITS.clocksPerStore + 5 }, () => newClock(store)));
    const made = racing.filter((r) => r.status === 201);
    expect(made.length).toBeLessThanOrEqual(TEST_CLOCK_LIMITS.clocksPerStore);
    for (const refused of racing.filter((r) => r.status !== 201)) expectLimit(refused, null);
    while ((await call(stack.api, store.key, 'GET', '/v1/test_helpers/test_clocks?limit=100')).body.data.length < TEST_CLOCK_LIMITS.clocksPerStore) {
      expect((await newClock(store)).status).toBe(201);
    }
    expectLimit(await newClock(store), null);
    expect((await call(stack.api, store.key, 'DELETE', `/v1/test_helpers/test_clocks/${made[0].body.id}`)).status).toBe(200);
    expect((await newClock(store)).status).toBe(201);
    expectLimit(await newClock(store), null);
  });

  test("a clock holds at most 3 customers, 6 racing creates included; the 4th is refused naming test_clock; another store's clocks are not touched", async () => {
    const store = await createTestStore(stack.mongo.db);
    const clock = (await newClock(store)).body.id;
    const racing = await Promise.all(Array.from({ length: 6 }, () => clockCustomer(store, clock)));
    expect(racing.filter((r) => r.status === 201)).toHaveLength(TEST_CLOCK_LIMITS.customers);
    for (const refused of racing.filter((r) => r.status !== 201)) expectLimit(refused, 'test_clock');
    expectLimit(await clockCustomer(store, clock), 'test_clock');
    const other = (await newClock(store)).body.id;
    expect((await clockCustomer(store, other)).status).toBe(201);
  });

  test('a clock holds at most 10 checkout sessions; the 11th is refused naming customer, and a session without a clock is not', async () => {
    const store = await createTestStore(stack.mongo.db);
    const catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
    const clock = (await newClock(store)).body.id;
    const customer = (await clockCustomer(store, clock)).body.id;
    for (let i = 0; i < TEST_CLOCK_LIMITS.checkout_sessions; i++) {
      expect((await createSession(stack.api, store, { offer: catalog.monthly._id, customer })).status).toBe(201);
    }
    expectLimit(await createSession(stack.api, store, { offer: catalog.monthly._id, customer }), 'customer');
    expect((await createSession(stack.api, store, { offer: catalog.monthly._id, customer_email: 'plain@example.com' })).status).toBe(201);
  });
});
