// Events end to end on the real stack: both catalogs (the original one only while an endpoint uses
// it), GET /v1/events filters and cursors, pending_webhooks computed at query time, resend with and
// without webhook_endpoint and its errors, disabled endpoints, dispatch that never doubles a delivery,
// and the outbox entry written before the event it guards.
import type { Db } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEvent } from '../../../services/events/events';
import { collections } from '../../../store/collections';
import { addToOutbox, outboxCollection, recordEvent } from '../../../store/events';
import { deliveriesCollection, deliveryIdFor } from '../../../store/webhook-deliveries';
import { dispatchEvent, sweepUndispatched } from '../../../services/webhooks/dispatch';
import { webhookDeliveryWorkflowId } from '../../../workflows/webhook-delivery/messages';
import { call, createTestStore } from '../../support/api';
import { waitFor } from '../../support/env';
import { startWebhookStack, type WebhookStack } from '../../support/webhook-stack';

let stack: WebhookStack;

beforeAll(async () => {
  stack = await startWebhookStack();
});
afterAll(async () => {
  await stack?.close();
});

function expectError(res: { status: number; body: any }, status: number, type: string, code: string, param: string | null) {
  expect({ status: res.status, type: res.body?.error?.type, code: res.body?.error?.code, param: res.body?.error?.param }).toEqual({
    status,
    type,
    code,
    param,
  });
}

/** A store of its own (so lists hold only this test's events) with helpers bound to it. */
async function freshStore() {
  const store = await createTestStore(stack.mongo.db);
  const deps = { db: stack.mongo.db, temporal: stack.temporal.client, taskQueue: stack.taskQueue };
  return {
    store,
    emit: (type: string, object: Record<string, unknown>, legacyType?: string | null) =>
      emitEvent(deps, {
        storeId: store.store._id,
        type,
        object,
        request: { id: 'req_test', idempotency_key: null },
        ...(legacyType !== undefined ? { legacyType } : {}),
      }),
    get: (path: string) => call(stack.api, store.key, 'GET', path),
    post: (path: string, json: unknown = {}) => call(stack.api, store.key, 'POST', path, { json }),
    endpoint: (body: Record<string, unknown> = {}) => stack.createEndpoint(body, store.key),
  };
}

async function deliveredTo(eventId: string, endpointId: string) {
  return waitFor(async () => {
    const doc = await deliveriesCollection(stack.mongo.db).findOne({ _id: deliveryIdFor(eventId, endpointId) });
    return doc?.status === 'succeeded' ? doc : null;
  });
}

describe('two catalogs', () => {
  it('writes only 2026-11-01 events until the store has a 2026-09-01 endpoint, then both names for the same fact', async () => {
    const s = await freshStore();
    await s.emit('invoice.paid', { id: 'ord_1', object: 'order' });
    expect((await s.get('/v1/events')).body.data.map((e: any) => e.type)).toEqual(['invoice.paid']);

    const { endpoint: legacy, path: legacyPath } = await s.endpoint({ api_version: '2026-09-01', enabled_events: ['order.paid', 'subscription.*'] });
    const { endpoint: current, path: currentPath } = await s.endpoint({ enabled_events: ['invoice.*'] });
    const event = await s.emit('invoice.paid', { id: 'ord_2', object: 'order' });

    const listed = await s.get('/v1/events?type=order.paid');
    expect(listed.body.data).toHaveLength(1);
    const old = listed.body.data[0];
    expect(Object.keys(old)).toEqual(['id', 'object', 'type', 'api_version', 'created', 'livemode', 'data']);
    expect(old).toMatchObject({ type: 'order.paid', api_version: '2026-09-01', data: { object: { id: 'ord_2' } } });

    const legacyHit = await waitFor(() => stack.hitsOn(legacyPath)[0]);
    const currentHit = await waitFor(() => stack.hitsOn(currentPath)[0]);
    expect(legacyHit.event).toMatchObject({ id: old.id, type: 'order.paid', api_version: '2026-09-01' });
    expect(legacyHit.event).not.toHaveProperty('pending_webhooks');
    expect(legacyHit.event).not.toHaveProperty('request');
    expect(currentHit.event).toMatchObject({ id: event._id, type: 'invoice.paid', api_version: '2026-11-01', request: { id: 'req_test' } });
    await deliveredTo(old.id, legacy.id);
    await deliveredTo(event._id, current.id);
  });

  it('facts without an original-catalog name (checkout) or named by the caller (upgraded) follow the mapping', async () => {
    const s = await freshStore();
    await s.endpoint({ api_version: '2026-09-01' });
    await s.emit('checkout.session.completed', { id: 'cs_1', object: 'checkout.session' });
    await s.emit('customer.subscription.updated', { id: 'sub_1', object: 'subscription' }, 'subscription.upgraded');
    await s.emit('customer.subscription.updated', { id: 'sub_2', object: 'subscription' }, null);
    const types = (await s.get('/v1/events?limit=100')).body.data.map((e: any) => `${e.api_version} ${e.type}`);
    expect(types.sort()).toEqual([
      '2026-09-01 subscription.upgraded',
      '2026-11-01 checkout.session.completed',
      '2026-11-01 customer.subscription.updated',
      '2026-11-01 customer.subscription.updated',
    ]);
  });
});

describe('GET /v1/events', () => {
  it('filters by exact type or * pattern across catalogs and by created ranges, newest first with cursors', async () => {
    const s = await freshStore();
    await s.endpoint({ api_version: '2026-09-01', enabled_events: ['customer.created'] });
    const a = await s.emit('customer.created', { id: 'cust_a', object: 'customer' });
    const b = await s.emit('customer.subscription.created', { id: 'sub_b', object: 'subscription' });
    const c = await s.emit('customer.subscription.paused', { id: 'sub_c', object: 'subscription' });

    const subs = await s.get('/v1/events?type=customer.subscription.*');
    expect(subs.body.data.map((e: any) => e.id)).toEqual([c._id, b._id]);
    const customer = await s.get('/v1/events?type=customer.*');
    expect(customer.body.data.map((e: any) => e.type)).toEqual([
      'customer.subscription.paused',
      'customer.subscription.created',
      'customer.created',
      'customer.created',
    ]);
    const both = await s.get('/v1/events?type=customer.created');
    expect(both.body.data.map((e: any) => e.api_version).sort()).toEqual(['2026-09-01', '2026-11-01']);
    // The original catalog stored subscription.created too (an endpoint exists there), under its own name.
    expect((await s.get('/v1/events?type=subscription.*')).body.data.map((e: any) => e.type)).toEqual([
      'subscription.paused',
      'subscription.created',
    ]);
    // A pathological pattern is matched against the catalogs' types, never run as a RegExp: an empty page at once.
    const evil = await s.get(`/v1/events?type=${'*'.repeat(40)}x`);
    expect(evil.status).toBe(200);
    expect(evil.body.data).toEqual([]);

    const first = await s.get('/v1/events?limit=2');
    expect(first.body).toMatchObject({ object: 'list', url: '/v1/events', has_more: true });
    const second = await s.get(`/v1/events?limit=2&starting_after=${first.body.data[1].id}`);
    const all = (await s.get('/v1/events?limit=100')).body.data.map((e: any) => e.id);
    expect([...first.body.data, ...second.body.data].map((e: any) => e.id)).toEqual(all.slice(0, 4));

    expect((await s.get(`/v1/events?created[gte]=${a.created}&type=customer.subscription.*`)).body.data).toHaveLength(2);
    expect((await s.get(`/v1/events?created[gt]=${c.created}`)).body.data).toEqual([]);
    expect((await s.get(`/v1/events?created[lt]=${a.created}`)).body.data).toEqual([]);
    expect((await s.get(`/v1/events?created[lte]=${c.created}&type=customer.subscription.paused`)).body.data.map((e: any) => e.id)).toEqual([c._id]);
  });

  it('computes pending_webhooks at query time: deliveries not yet succeeded', async () => {
    const s = await freshStore();
    const { endpoint: good } = await s.endpoint({ enabled_events: ['customer.created'] });
    const { endpoint: bad, path: badPath } = await s.endpoint({ enabled_events: ['customer.created'] });
    stack.responders.set(badPath, () => 500);
    const event = await s.emit('customer.created', { id: 'cust_p', object: 'customer' });
    await deliveredTo(event._id, good.id);
    await waitFor(async () => (await deliveriesCollection(stack.mongo.db).findOne({ _id: deliveryIdFor(event._id, bad.id) }))?.status === 'failed');
    expect((await s.get(`/v1/events/${event._id}`)).body.pending_webhooks).toBe(1);
    expect((await s.get('/v1/events')).body.data[0].pending_webhooks).toBe(1);
  });

  it('counts a target endpoint without a delivery only until dispatch: one disabled before dispatch is not pending forever', async () => {
    const s = await freshStore();
    const { endpoint } = await s.endpoint({ enabled_events: ['customer.created'] });
    // Written without a Temporal client, as by a process that died before dispatching.
    const event = await emitEvent(
      { db: stack.mongo.db },
      { storeId: s.store.store._id, type: 'customer.created', object: { id: 'cust_off', object: 'customer' } },
    );
    expect(event.targets).toEqual([endpoint.id]);
    expect((await s.get(`/v1/events/${event._id}`)).body.pending_webhooks).toBe(1);

    await s.post(`/v1/webhook_endpoints/${endpoint.id}`, { status: 'disabled' });
    await dispatchEvent({ db: stack.mongo.db, temporal: stack.temporal.client, taskQueue: stack.taskQueue }, event);
    expect(await deliveriesCollection(stack.mongo.db).countDocuments({ event: event._id })).toBe(0);
    expect((await s.get(`/v1/events/${event._id}`)).body.pending_webhooks).toBe(0);
    expect((await s.get('/v1/events')).body.data[0]).toMatchObject({ id: event._id, pending_webhooks: 0 });
  });

  it('an unknown event id: 404 resource_missing param id; an unknown cursor names the cursor', async () => {
    const s = await freshStore();
    expectError(await s.get('/v1/events/evt_0000000000000000000000'), 404, 'invalid_request_error', 'resource_missing', 'id');
    expectError(await s.get('/v1/events?ending_before=evt_nope'), 404, 'invalid_request_error', 'resource_missing', 'ending_before');
    expectError(await s.get('/v1/events?created[gte]=soon'), 400, 'invalid_request_error', 'parameter_invalid', 'created.gte');
  });
});

describe('POST /v1/events/{id}/resend', () => {
  it('with webhook_endpoint: an endpoint created after the event receives it, same id and created', async () => {
    const s = await freshStore();
    const event = await s.emit('customer.created', { id: 'cust_r', object: 'customer' });
    const { endpoint, path } = await s.endpoint();
    const res = await s.post(`/v1/events/${event._id}/resend`, { webhook_endpoint: endpoint.id });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'event_resend', event: event._id, webhook_endpoint: endpoint.id, deliveries: 1 });
    const hit = await waitFor(() => stack.hitsOn(path)[0]);
    expect(hit.event).toMatchObject({ id: event._id, created: event.created });
  });

  it('without webhook_endpoint: every existing delivery again, succeeded ones included; 0 when there are none', async () => {
    const s = await freshStore();
    const { endpoint: one, path: onePath } = await s.endpoint();
    const { endpoint: two, path: twoPath } = await s.endpoint();
    const event = await s.emit('customer.created', { id: 'cust_all', object: 'customer' });
    await deliveredTo(event._id, one.id);
    await deliveredTo(event._id, two.id);

    const res = await s.post(`/v1/events/${event._id}/resend`);
    expect(res.body).toEqual({ object: 'event_resend', event: event._id, webhook_endpoint: null, deliveries: 2 });
    await waitFor(() => stack.hitsOn(onePath).length === 2 && stack.hitsOn(twoPath).length === 2);
    expect(stack.hitsOn(onePath)[1].event.id).toBe(event._id);
    const lonely = await freshStore();
    const none = await lonely.emit('customer.created', { id: 'cust_none', object: 'customer' });
    expect((await lonely.post(`/v1/events/${none._id}/resend`)).body).toMatchObject({ deliveries: 0, webhook_endpoint: null });
  });

  it('a resend to a disabled endpoint closes the delivery with last_error endpoint disabled', async () => {
    const s = await freshStore();
    const { endpoint, path } = await s.endpoint();
    const event = await s.emit('customer.created', { id: 'cust_d', object: 'customer' });
    await deliveredTo(event._id, endpoint.id);
    await s.post(`/v1/webhook_endpoints/${endpoint.id}`, { status: 'disabled' });
    // While disabled, new events are not stored for it.
    const later = await s.emit('customer.created', { id: 'cust_d2', object: 'customer' });
    expect(later.targets).toEqual([]);

    await s.post(`/v1/events/${event._id}/resend`, { webhook_endpoint: endpoint.id });
    const closed = await waitFor(async () => {
      const doc = await deliveriesCollection(stack.mongo.db).findOne({ _id: deliveryIdFor(event._id, endpoint.id) });
      return doc?.status === 'exhausted' ? doc : null;
    });
    expect(closed).toMatchObject({ attempts: 0, last_error: 'endpoint disabled', next_attempt_at: null });
    expect(stack.hitsOn(path)).toHaveLength(1);
  });

  it('errors: unknown event (404 id), unknown endpoint (404 webhook_endpoint), another catalog (400 invalid_event_type)', async () => {
    const s = await freshStore();
    const event = await s.emit('customer.created', { id: 'cust_e', object: 'customer' });
    const { endpoint: legacy } = await s.endpoint({ api_version: '2026-09-01' });
    expectError(await s.post('/v1/events/evt_0000000000000000000000/resend'), 404, 'invalid_request_error', 'resource_missing', 'id');
    expectError(
      await s.post(`/v1/events/${event._id}/resend`, { webhook_endpoint: '01900000-0000-7000-8000-000000000000' }),
      404,
      'invalid_request_error',
      'resource_missing',
      'webhook_endpoint',
    );
    const mismatch = await s.post(`/v1/events/${event._id}/resend`, { webhook_endpoint: legacy.id });
    expectError(mismatch, 400, 'invalid_request_error', 'invalid_event_type', 'webhook_endpoint');
    expect(mismatch.body.error.message).toContain('2026-11-01');
    expect(mismatch.body.error.message).toContain('2026-09-01');
    expectError(
      await s.post(`/v1/events/${event._id}/resend`, { webhook_endpoint: legacy.id, extra: 1 }),
      400,
      'invalid_request_error',
      'parameter_invalid',
      'extra',
    );
  });
});

describe('dispatch', () => {
  it('dispatching an event again, or sweeping it, creates no second delivery and no second workflow run', async () => {
    const s = await freshStore();
    const { endpoint, path } = await s.endpoint();
    const event = await s.emit('customer.created', { id: 'cust_twice', object: 'customer' });
    await deliveredTo(event._id, endpoint.id);
    const handle = stack.temporal.client.workflow.getHandle(webhookDeliveryWorkflowId(deliveryIdFor(event._id, endpoint.id)));
    const firstRun = (await handle.describe()).runId;

    const deps = { db: stack.mongo.db, temporal: stack.temporal.client, taskQueue: stack.taskQueue };
    await dispatchEvent(deps, event);
    // As if its writer had died before confirming: back in the outbox, then swept.
    await addToOutbox(stack.mongo.db, [event]);
    await sweepUndispatched(deps, { olderThanMs: 0, limit: 1000 });
    expect(await outboxCollection(stack.mongo.db).countDocuments({ _id: event._id })).toBe(0);

    expect(await deliveriesCollection(stack.mongo.db).countDocuments({ event: event._id })).toBe(1);
    expect((await handle.describe()).runId).toBe(firstRun);
    expect(stack.hitsOn(path)).toHaveLength(1);
  });
});

/** The database as seen by a process whose outbox writes fail (the crash between two writes, made visible). */
function withFailingOutbox(db: Db): Db {
  return new Proxy(db, {
    get(target, prop) {
      if (prop !== 'collection') {
        const value = Reflect.get(target, prop);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return (name: string) => {
        const collection = target.collection(name);
        if (name !== outboxCollection(target).collectionName) return collection;
        return new Proxy(collection, {
          get(inner, key) {
            if (key === 'insertOne' || key === 'insertMany') return async () => Promise.reject(new Error('outbox write failed'));
            const value = Reflect.get(inner, key);
            return typeof value === 'function' ? value.bind(inner) : value;
          },
        });
      };
    },
  });
}

describe('recordEvent (the webhook endpoint test event)', () => {
  it('writes the outbox entry before the event: when that write fails, no undispatched event is left behind', async () => {
    const s = await freshStore();
    const { endpoint } = await s.endpoint();
    const input = {
      storeId: s.store.store._id,
      type: 'customer.created',
      object: { id: 'cust_t', object: 'customer' },
      targets: [endpoint.id],
      test: true,
    };

    await expect(recordEvent(withFailingOutbox(stack.mongo.db), input)).rejects.toThrow('outbox write failed');
    expect(await collections(stack.mongo.db).events.countDocuments({ store_id: s.store.store._id })).toBe(0);

    const written = await recordEvent(stack.mongo.db, input);
    expect(await outboxCollection(stack.mongo.db).countDocuments({ _id: written._id })).toBe(1);
    expect(await collections(stack.mongo.db).events.countDocuments({ _id: written._id })).toBe(1);
  });
});
