// What this tests: a test clock's customers never meet real buyers. Through real HTTP, FerretDB, Temporal
// and a worker: a buyer paying on the hosted page with the e-mail of a clock's customer gets a customer of
// the store's own (not on the clock), POST /v1/customers answers each scope's customer for that e-mail,
// and deleting the clock leaves the purchase, its subscription and its workflow untouched. An API whose
// payment connection is a real one and which has no test connection refuses clocks (typed 400).
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestConnection } from '../../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../../adapters/provider/types';
import { startTestApi } from '../../support/api';
import {
  buyerForm,
  call,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';
import type { TestStore } from '../../support/api';
import { waitFor } from '../../support/env';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;

beforeAll(async () => {
  stack = await startCheckoutStack('test-clock-isolation');
  store = await createTestStore(stack.mongo.db);
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
});

afterAll(async () => {
  await stack?.close();
});

const get = (path: string) => call(stack.api, store.key, 'GET', path);
const post = (path: string, json: unknown) => call(stack.api, store.key, 'POST', path, { json });
const customerFields = { name: 'Ana Clock', phone: '+5511999990000', document: { type: 'cpf', number: '529.982.247-25' } };

async function payOnHostedPage(sessionId: string, email: string): Promise<void> {
  const res = await fetch(`${stack.api.url}/c/${sessionId}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...buyerForm({ email }), method: 'card', card_number: '4242424242424242' }).toString(),
  });
  expect(res.status).toBe(303);
}

test("a hosted-page buyer with a clock customer's e-mail gets the store's own customer; deleting the clock leaves the purchase", async () => {
  const clock = (await post('/v1/test_helpers/test_clocks', { frozen_time: Math.floor(Date.now() / 1000) })).body.id as string;
  const email = `shared-${Date.now()}@example.com`;
  const clockCustomer = await post('/v1/customers', { email, ...customerFields, test_clock: clock });
  expect(clockCustomer).toMatchObject({ status: 201, body: { test_clock: clock } });

  const session = (await post('/v1/checkout/sessions', { offer: catalog.monthly._id })).body.id as string;
  await payOnHostedPage(session, email.toUpperCase());
  const paid = await waitFor(
    async () => {
      const s = (await get(`/v1/checkout/sessions/${session}`)).body;
      return s.status === 'complete' && s.subscription ? s : null;
    },
    { description: 'the session complete with its subscription' },
  );
  expect(paid.customer).not.toBe(clockCustomer.body.id);
  expect((await get(`/v1/customers/${paid.customer}`)).body).toMatchObject({ email, test_clock: null });

  // Each scope answers its own customer for the e-mail.
  expect(await post('/v1/customers', { email, ...customerFields })).toMatchObject({ status: 200, body: { id: paid.customer } });
  expect(await post('/v1/customers', { email, ...customerFields, test_clock: clock })).toMatchObject({
    status: 200,
    body: { id: clockCustomer.body.id },
  });

  expect((await call(stack.api, store.key, 'DELETE', `/v1/test_helpers/test_clocks/${clock}`)).status).toBe(200);
  expect((await get(`/v1/customers/${clockCustomer.body.id}`)).status).toBe(404);
  expect((await get(`/v1/customers/${paid.customer}`)).status).toBe(200);
  expect((await get(`/v1/subscriptions/${paid.subscription}`)).body).toMatchObject({
    id: paid.subscription,
    customer: paid.customer,
    status: 'active',
  });
  const described = await stack.temporal.client.workflow.getHandle(`subscription/${paid.subscription}`).describe();
  expect(described.status.name).toBe('RUNNING');
  expect(await post('/v1/customers', { email, ...customerFields })).toMatchObject({ status: 200, body: { id: paid.customer } });
});

/** A connection that says it moves real money (what a Stripe live key would be); charges nothing here. */
function realConnection(): PaymentProvider {
  return Object.create(createTestConnection({ db: stack.mongo.db }), { livemode: { value: true } }) as PaymentProvider;
}

test('without a test connection (a real one only: production without ALLOW_TEST_PAYMENTS) clocks are refused with 400 test_payments_unavailable', async () => {
  const clock = (await post('/v1/test_helpers/test_clocks', { frozen_time: Math.floor(Date.now() / 1000) })).body as {
    id: string;
    frozen_time: number;
  };
  const live = await startTestApi({ db: stack.mongo.db, temporal: stack.temporal.client, taskQueue: stack.taskQueue, provider: realConnection() });
  try {
    const refusal = (status: number, param: string | null) => ({
      status,
      body: { error: { type: 'invalid_request_error', code: 'test_payments_unavailable', param } },
    });
    const livePost = (path: string, json: unknown) => call(live, store.key, 'POST', path, { json });
    expect(await livePost('/v1/test_helpers/test_clocks', { frozen_time: clock.frozen_time })).toMatchObject(refusal(400, null));
    expect(await livePost(`/v1/test_helpers/test_clocks/${clock.id}/advance`, { frozen_time: clock.frozen_time + 3600 })).toMatchObject(
      refusal(400, 'id'),
    );
    const email = `refused-${Date.now()}@example.com`;
    expect(await livePost('/v1/customers', { email, ...customerFields, test_clock: clock.id })).toMatchObject(refusal(400, 'test_clock'));
    expect((await get(`/v1/customers?email=${email}`)).body.data).toEqual([]);
    // The store's own customers are the real connection's business as before.
    expect((await livePost('/v1/customers', { email, ...customerFields })).status).toBe(201);
  } finally {
    await live.close();
  }
});
