// What this tests: "New events for it get 400 meter_inactive" at once on every API process. A second
// API process (its own memory) accepts events for a meter, the meter is deactivated through this one,
// and the very next event sent to the other process is refused. A non-object payload on the single
// call is invalid_payload, as in the batch.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { startApiProcess, type ApiProcess } from '../../support/app-processes';
import { testMongo, type TestMongo } from '../../support/env';
import { seedCustomer } from '../../support/usage';

let mongo: TestMongo;
let api: TestApi;
let other: ApiProcess;
let store: TestStore;

beforeAll(async () => {
  mongo = await testMongo();
  [api, other] = await Promise.all([startTestApi({ db: mongo.db }), startApiProcess({ MONGODB_DB: mongo.db.databaseName })]);
  store = await createTestStore(mongo.db);
});

afterAll(async () => {
  await other?.group.stop();
  await api?.close();
  await mongo?.close();
});

const send = (base: { url: string }, eventName: string, customer: string) =>
  call(base as TestApi, store.key, 'POST', '/v1/billing/meter_events', {
    json: { event_name: eventName, payload: { customer_id: customer, value: 1 } },
  });

test('a deactivation through one process refuses the next event on another at once', async () => {
  const eventName = `deact.${Date.now()}`;
  const meter = await call(api, store.key, 'POST', '/v1/billing/meters', { json: { display_name: 'Deactivated', event_name: eventName } });
  expect(meter.status).toBe(201);
  const customer = (await seedCustomer(mongo.db, store.store._id))._id;
  // The other process has read the active meter just now.
  for (let i = 0; i < 3; i++) expect((await send(other, eventName, customer)).status).toBe(201);

  expect((await call(api, store.key, 'POST', `/v1/billing/meters/${meter.body.id}/deactivate`)).body.status).toBe('inactive');
  const refused = await send(other, eventName, customer);
  expect(refused.status).toBe(400);
  expect(refused.body.error).toMatchObject({ type: 'invalid_request_error', code: 'meter_inactive' });
});

test('a non-object payload on the single call is invalid_payload, as in the batch', async () => {
  const eventName = `payload.${Date.now()}`;
  await call(api, store.key, 'POST', '/v1/billing/meters', { json: { display_name: 'Payload', event_name: eventName } });
  for (const payload of ['customer=1', [1, 2], 42, true]) {
    const single = await call(api, store.key, 'POST', '/v1/billing/meter_events', { json: { event_name: eventName, payload } });
    expect(single.status, JSON.stringify(payload)).toBe(400);
    expect(single.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_payload', param: 'payload' });
    const batch = await call(api, store.key, 'POST', '/v1/billing/meter_events/batch', { json: { events: [{ event_name: eventName, payload }] } });
    expect(batch.body.error.results[0].error).toMatchObject({ code: 'invalid_payload', param: 'payload' });
  }
});
