// Webhook deliveries end to end: the real API, a real worker on the dev server, the database and a local
// HTTPS receiver. Signatures verify with our verifier and with stripe.webhooks.constructEvent; secret
// rotation signs twice, then once after the overlap; the test event; deliveries listing; DELETE
// stopping pending deliveries; and a host that resolves to a private address at connection time.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointsCollection } from '../../../store/webhook-endpoints';
import { deliveriesCollection, findDelivery } from '../../../store/webhook-deliveries';
import { verifySignature } from '../../../adapters/webhooks/verify';
import { webhookDeliveryWorkflowId } from '../../../workflows/webhook-delivery/messages';
import { call } from '../../support/api';
import { waitFor } from '../../support/env';
import { fakeResolver } from '../../support/fake-dns';
import { startWebhookStack, type WebhookStack } from '../../support/webhook-stack';

const stripe = new Stripe('sk_test_unused');
let stack: WebhookStack;

beforeAll(async () => {
  stack = await startWebhookStack({
    // The API sees a public address when the endpoint is saved; the worker's lookup later sees a private one.
    apiResolver: fakeResolver({ 'rebind.example.com': ['93.184.216.34'] }),
    workerResolver: fakeResolver({ 'rebind.example.com': ['10.20.30.40'] }),
  });
});
afterAll(async () => {
  await stack?.close();
});

let customers = 0;
async function createCustomer(headers: Record<string, string> = {}) {
  const res = await call(stack.api, stack.store.key, 'POST', '/v1/customers', {
    json: {
      email: `buyer${++customers}-${Date.now()}@example.com`,
      name: 'Ana Souza',
      phone: '+5511987654321',
      document: { type: 'cpf', number: '52998224725' },
    },
    headers,
  });
  expect(res.status).toBe(201);
  return res;
}

async function waitForHit(path: string, count = 1) {
  return waitFor(() => (stack.hitsOn(path).length >= count ? stack.hitsOn(path)[count - 1] : null), {
    timeoutMs: 20_000,
    description: `hit ${count} on ${path}`,
  });
}

describe('signed deliveries', () => {
  it('POST /v1/customers delivers customer.created that our verifier and stripe.webhooks.constructEvent both accept', async () => {
    const { endpoint, path } = await stack.createEndpoint({ enabled_events: ['customer.created'] });
    const created = await createCustomer({ 'Idempotency-Key': `cust-${Date.now()}` });

    const hit = await waitForHit(path);
    const header = hit.headers['service-signature'] as string;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(hit.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(verifySignature(hit.body, header, [endpoint.secret])).toBe(true);
    expect(stripe.webhooks.constructEvent(hit.body, header, endpoint.secret)).toMatchObject({ id: hit.event.id, type: 'customer.created' });
    expect(() => verifySignature(hit.body, header, ['whsec_wrong'])).toThrow(/No v1 signature matches/);

    expect(Object.keys(hit.event)).toEqual(['id', 'object', 'type', 'api_version', 'created', 'livemode', 'pending_webhooks', 'request', 'data']);
    expect(hit.event).toMatchObject({
      object: 'event',
      type: 'customer.created',
      api_version: '2026-11-01',
      livemode: true,
      pending_webhooks: 1,
      request: { id: created.headers.get('request-id'), idempotency_key: expect.stringMatching(/^cust-/) },
      data: { object: { id: created.body.id, object: 'customer' } },
    });

    // Once delivered, the API answers the same JSON with pending_webhooks computed now (0).
    await waitFor(
      async () =>
        (
          await findDelivery(
            stack.mongo.db,
            stack.store.store._id,
            (await deliveriesCollection(stack.mongo.db).findOne({ event: hit.event.id }))!._id,
          )
        )?.status === 'succeeded',
    );
    const fetched = await fetch(`${stack.api.url}/v1/events/${hit.event.id}`, { headers: { authorization: `Bearer ${stack.store.key}` } });
    expect(await fetched.text()).toBe(hit.body.replace('"pending_webhooks":1', '"pending_webhooks":0'));

    const deliveries = await call(stack.api, stack.store.key, 'GET', `/v1/webhook_endpoints/${endpoint.id}/deliveries`);
    expect(deliveries.status).toBe(200);
    expect(deliveries.body.data).toEqual([
      {
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        object: 'webhook_delivery',
        event: hit.event.id,
        webhook_endpoint: endpoint.id,
        status: 'succeeded',
        attempts: 1,
        next_attempt_at: null,
        last_attempt_at: expect.any(Number),
        delivered_at: expect.any(Number),
        last_response_status: 200,
        last_error: null,
        last_duration_ms: expect.any(Number),
        created: expect.any(Number),
      },
    ]);
  });

  it('after rotate_secret each delivery carries two v1 (old and new secret both verify); after the 24 h overlap only one', async () => {
    const { endpoint, path } = await stack.createEndpoint({ enabled_events: ['customer.updated'] });
    const rotated = await call(stack.api, stack.store.key, 'POST', `/v1/webhook_endpoints/${endpoint.id}/rotate_secret`);
    const customer = await createCustomer();
    await call(stack.api, stack.store.key, 'POST', `/v1/customers/${customer.body.id}`, { json: { name: 'Ana Maria Souza' } });

    const during = await waitForHit(path, 1);
    const header = during.headers['service-signature'] as string;
    expect(header.match(/v1=/g)).toHaveLength(2);
    for (const secret of [endpoint.secret, rotated.body.secret]) {
      expect(verifySignature(during.body, header, [secret])).toBe(true);
      expect(stripe.webhooks.constructEvent(during.body, header, secret).id).toBe(during.event.id);
    }

    // 24 hours later, as far as the endpoint's overlap is concerned.
    await endpointsCollection(stack.mongo.db).updateOne({ _id: endpoint.id }, { $set: { previous_secret_expires_at: Date.now() - 1 } });
    await call(stack.api, stack.store.key, 'POST', `/v1/customers/${customer.body.id}`, { json: { name: 'Ana M. Souza' } });
    const after = await waitForHit(path, 2);
    const single = after.headers['service-signature'] as string;
    expect(single.match(/v1=/g)).toHaveLength(1);
    expect(verifySignature(after.body, single, [rotated.body.secret])).toBe(true);
    expect(() => verifySignature(after.body, single, [endpoint.secret])).toThrow();
    expect(() => stripe.webhooks.constructEvent(after.body, single, endpoint.secret)).toThrow();
  });
});

describe('test events', () => {
  it('POST /test sends a test customer.created (test true, livemode false) to that endpoint only; GET /v1/events leaves it out', async () => {
    const { endpoint, path } = await stack.createEndpoint({ enabled_events: ['customer.created'] });
    const { endpoint: bystander } = await stack.createEndpoint({ enabled_events: ['customer.created'] });
    const res = await call(stack.api, stack.store.key, 'POST', `/v1/webhook_endpoints/${endpoint.id}/test`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'webhook_test', webhook_endpoint: endpoint.id, event: expect.stringMatching(/^evt_/) });

    const hit = await waitForHit(path);
    expect(hit.event).toMatchObject({
      id: res.body.event,
      type: 'customer.created',
      livemode: false,
      test: true,
      data: { object: { object: 'customer' } },
    });
    expect(verifySignature(hit.body, hit.headers['service-signature'], [endpoint.secret])).toBe(true);
    const bystanderDeliveries = await call(stack.api, stack.store.key, 'GET', `/v1/webhook_endpoints/${bystander.id}/deliveries`);
    expect(bystanderDeliveries.body.data).toEqual([]);

    const listed = await call(stack.api, stack.store.key, 'GET', '/v1/events?limit=100');
    expect(listed.body.data.map((e: any) => e.id)).not.toContain(res.body.event);
    const retrieved = await call(stack.api, stack.store.key, 'GET', `/v1/events/${res.body.event}`);
    expect(retrieved.status).toBe(200);
    expect(retrieved.body).toMatchObject({ id: res.body.event, test: true, livemode: false });
  });

  it('a test event to a 2026-09-01 endpoint uses that catalog; to a disabled endpoint it closes at once with endpoint disabled', async () => {
    const { endpoint: legacy, path } = await stack.createEndpoint({ api_version: '2026-09-01' });
    const sent = await call(stack.api, stack.store.key, 'POST', `/v1/webhook_endpoints/${legacy.id}/test`);
    const hit = await waitForHit(path);
    expect(hit.event.id).toBe(sent.body.event);
    expect(Object.keys(hit.event)).toEqual(['id', 'object', 'type', 'api_version', 'created', 'livemode', 'test', 'data']);
    expect(hit.event.api_version).toBe('2026-09-01');

    const { endpoint: off, path: offPath } = await stack.createEndpoint();
    await call(stack.api, stack.store.key, 'POST', `/v1/webhook_endpoints/${off.id}`, { json: { status: 'disabled' } });
    await call(stack.api, stack.store.key, 'POST', `/v1/webhook_endpoints/${off.id}/test`);
    const closed = await waitFor(async () => {
      const list = await call(stack.api, stack.store.key, 'GET', `/v1/webhook_endpoints/${off.id}/deliveries`);
      return list.body.data[0]?.status === 'exhausted' ? list.body.data[0] : null;
    });
    expect(closed).toMatchObject({ status: 'exhausted', attempts: 0, last_error: 'endpoint disabled', next_attempt_at: null });
    expect(stack.hitsOn(offPath)).toHaveLength(0);
  });
});

describe('deliveries', () => {
  it("lists an endpoint's deliveries newest first, filtered by status, with cursors", async () => {
    const { endpoint, path } = await stack.createEndpoint({ enabled_events: ['customer.created'] });
    // The first event keeps failing (and stays failed between attempts); the others succeed.
    stack.responders.set(path, (hit) => (hit.event.id === stack.hitsOn(hit.path)[0].event.id ? 500 : 200));
    await createCustomer();
    await waitForHit(path, 1);
    await createCustomer();
    await createCustomer();
    await waitFor(
      async () => (await deliveriesCollection(stack.mongo.db).countDocuments({ webhook_endpoint: endpoint.id, status: 'succeeded' })) === 2,
    );

    const base = `/v1/webhook_endpoints/${endpoint.id}/deliveries`;
    const all = await call(stack.api, stack.store.key, 'GET', base);
    expect(all.body.data).toHaveLength(3);
    const events = all.body.data.map((d: any) => d.event);
    expect([...events].sort().reverse()).toEqual(events);
    const failed = await call(stack.api, stack.store.key, 'GET', `${base}?status=failed`);
    expect(failed.body.data).toHaveLength(1);
    expect(failed.body.data[0]).toMatchObject({
      status: 'failed',
      last_error: 'HTTP 500',
      last_response_status: 500,
      next_attempt_at: expect.any(Number),
    });
    const page = await call(stack.api, stack.store.key, 'GET', `${base}?limit=1&starting_after=${all.body.data[0].id}`);
    expect(page.body).toMatchObject({ has_more: true, data: [{ id: all.body.data[1].id }] });
    const back = await call(stack.api, stack.store.key, 'GET', `${base}?limit=5&ending_before=${all.body.data[2].id}`);
    expect(back.body.data.map((d: any) => d.id)).toEqual([all.body.data[0].id, all.body.data[1].id]);
  });

  it('DELETE of an endpoint ends its pending delivery workflows and removes its deliveries', async () => {
    const { endpoint, path } = await stack.createEndpoint({ enabled_events: ['customer.created'] });
    stack.responders.set(path, () => 500);
    await createCustomer();
    const delivery = await waitFor(
      async () => (await deliveriesCollection(stack.mongo.db).findOne({ webhook_endpoint: endpoint.id, status: 'failed' })) ?? null,
    );

    const res = await call(stack.api, stack.store.key, 'DELETE', `/v1/webhook_endpoints/${endpoint.id}`);
    expect(res.body).toEqual({ id: endpoint.id, object: 'webhook_endpoint', deleted: true });
    const handle = stack.temporal.client.workflow.getHandle(webhookDeliveryWorkflowId(delivery._id));
    await waitFor(async () => (await handle.describe()).status.name !== 'RUNNING', { timeoutMs: 15_000 });
    expect(await deliveriesCollection(stack.mongo.db).countDocuments({ webhook_endpoint: endpoint.id })).toBe(0);
    expect(await endpointsCollection(stack.mongo.db).countDocuments({ _id: endpoint.id })).toBe(0);
  });

  it('a host that resolved publicly when saved but privately at connection time is refused without connecting', async () => {
    const res = await call(stack.api, stack.store.key, 'POST', '/v1/webhook_endpoints', {
      json: { url: 'https://rebind.example.com/hook', enabled_events: ['customer.created'] },
    });
    expect(res.status).toBe(201);
    await createCustomer();
    const failed = await waitFor(
      async () => (await deliveriesCollection(stack.mongo.db).findOne({ webhook_endpoint: res.body.id, status: 'failed' })) ?? null,
    );
    expect(failed).toMatchObject({
      attempts: 1,
      last_response_status: null,
      last_error: 'private_host: rebind.example.com resolves to a private address',
    });
  });
});
