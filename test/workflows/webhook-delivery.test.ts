// What this tests: the webhook delivery workflow on the time-skipping server with the real worker, its
// real activities on the database and a real local HTTPS receiver: the retry schedule to exhaustion,
// success on attempt 5, auto-disable at 20 exhausted deliveries (a test event's included), resend after
// exhaustion by signal and through the API, and a receiver that does not answer within 10 seconds.
import type { Worker } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { testServerPath } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { emitEvent } from '../../services/events/events';
import { ensureIndexes } from '../../store/indexes';
import { createStore } from '../../store/stores';
import { AUTO_DISABLED_REASON, endpointsCollection, findEndpoint, insertEndpoint, type WebhookEndpointDoc } from '../../store/webhook-endpoints';
import { deliveryIdFor, findDelivery } from '../../store/webhook-deliveries';
import { verifySignature } from '../../adapters/webhooks/verify';
import { RECEIVER_TIMEOUT_MS, RETRY_DELAYS_MS } from '../../domain/webhook-retry';
import {
  RESEND_WINDOW_MS,
  resendSignal,
  WEBHOOK_DELIVERY_WORKFLOW,
  webhookDeliveryWorkflowId,
  type WebhookDeliveryState,
} from '../../workflows/webhook-delivery/messages';
import { deliverySearchAttributes } from '../../services/operations/workflow-summaries';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../support/api';
import { testMongo, uniqueTaskQueue, waitFor, type TestMongo } from '../support/env';
import { patchesIn, recordHistory } from '../support/histories';
import { registerSearchAttributes } from '../support/search-attributes';
import { startWebhookReceiver, testCa, type Responder, type WebhookReceiver } from '../support/webhook-receiver';

let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let receiver: WebhookReceiver;
let worker: Worker;
let running: Promise<void>;
/** The API on the same time-skipping client, for the routes that start or signal deliveries. */
let api: TestApi;
let apiStore: TestStore;
const taskQueue = uniqueTaskQueue('webhook-delivery');
/** Each endpoint gets its own path on the receiver, and its own answers. */
const responders = new Map<string, Responder>();

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: testServerPath() } },
  });
  await registerSearchAttributes(env.connection);
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  receiver = await startWebhookReceiver({ respond: (hit) => (responders.get(hit.path) ?? (() => 500))(hit) });
  const ca = await testCa();
  worker = await createBillingWorker({
    connection: env.nativeConnection,
    taskQueue,
    db: mongo.db,
    temporal: env.client,
    activityDeps: { webhooks: { allowedHosts: ['localhost'], ca: ca.caCert } },
  });
  running = worker.run();
  api = await startTestApi({ db: mongo.db, temporal: env.client, taskQueue, config: { webhookAllowedHosts: ['localhost'] } });
  apiStore = await createTestStore(mongo.db);
});

afterAll(async () => {
  await api?.close();
  worker?.shutdown();
  await running?.catch(() => undefined);
  await receiver?.close();
  await env?.teardown();
  await mongo?.close();
});

let endpointCount = 0;

/** A store (the API's, when asked) with one endpoint on its own receiver path, answering with `respond`. */
async function setup(
  respond: Responder,
  options: { apiStore?: boolean } = {},
): Promise<{ storeId: string; endpoint: WebhookEndpointDoc; path: string }> {
  const storeId = options.apiStore
    ? apiStore.store._id
    : (await createStore(mongo.db, { name: 'Webhook store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' }))._id;
  const path = `/endpoint-${++endpointCount}`;
  responders.set(path, respond);
  const endpoint = await insertEndpoint(mongo.db, {
    storeId,
    url: receiver.url(path),
    description: null,
    enabledEvents: ['*'],
    apiVersion: '2026-11-01',
  });
  return { storeId, endpoint, path };
}

/** Emits a customer.created for the store and returns its delivery to `endpoint` and the workflow handle. */
async function emit(storeId: string, endpoint: WebhookEndpointDoc) {
  const event = await emitEvent(
    { db: mongo.db, temporal: env.client, taskQueue },
    { storeId, type: 'customer.created', object: { id: 'cust_test', object: 'customer', email: 'a@example.com' } },
  );
  const deliveryId = deliveryIdFor(event._id, endpoint._id);
  return { event, deliveryId, handle: env.client.workflow.getHandle(webhookDeliveryWorkflowId(deliveryId)) };
}

function hitsOn(path: string) {
  return receiver.hits.filter((hit) => hit.path === path);
}

/** The timers the workflow started, in order (milliseconds). */
async function timerDurations(handle: { fetchHistory(): Promise<temporal.api.history.v1.IHistory> }): Promise<number[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.timerStartedEventAttributes)
    .map((e) => {
      const d = e.timerStartedEventAttributes!.startToFireTimeout!;
      return Number(d.seconds ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1e6);
    });
}

/** The BillingStatus values the run upserted, in order, and how many patch markers it recorded. */
async function statusView(handle: { fetchHistory(): Promise<temporal.api.history.v1.IHistory> }) {
  const history = await handle.fetchHistory();
  const upserted = (history.events ?? [])
    .map((e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.BillingStatus?.data)
    .filter((data): data is Uint8Array => data != null)
    .map((data) => JSON.parse(Buffer.from(data).toString('utf8')) as string);
  return { upserted, markers: patchesIn(history).markers };
}

test('the Web UI status: pending through the first attempt, delivering on retries, no patch marker; a run started without input version 2 keeps its patched path', async () => {
  const { storeId, endpoint } = await setup((hit) => (hitsOn(hit.path).length <= 1 ? 503 : 200));
  const { handle } = await emit(storeId, endpoint);
  expect(await handle.result()).toMatchObject({ status: 'succeeded', attempts: 2 });
  expect(await statusView(handle)).toEqual({ upserted: ['failed', 'delivering', 'succeeded'], markers: 0 });

  // An older client's start (no input version): the patch marker, and `delivering` before the first attempt.
  const old = await setup(() => 200);
  const { deliveryId } = await emit(old.storeId, old.endpoint);
  const rerun = await env.client.workflow.start(WEBHOOK_DELIVERY_WORKFLOW, {
    workflowId: `${webhookDeliveryWorkflowId(deliveryId)}-before-input-version-2`,
    taskQueue,
    args: [{ deliveryId, storeId: old.storeId, endpointId: old.endpoint._id, resend: true }],
    typedSearchAttributes: deliverySearchAttributes(old.storeId, old.endpoint._id),
  });
  expect(await rerun.result()).toMatchObject({ status: 'succeeded' });
  expect(await statusView(rerun)).toEqual({ upserted: ['delivering', 'succeeded'], markers: 1 });
});

test('8 failing attempts wait 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (+ up to 10%) and end exhausted', async () => {
  const { storeId, endpoint, path } = await setup(() => 500);
  const { deliveryId, handle } = await emit(storeId, endpoint);

  const final = (await handle.result()) as WebhookDeliveryState;

  expect(final).toMatchObject({ status: 'exhausted', attempts: 8, last_error: 'HTTP 500', last_response_status: 500 });
  const hits = hitsOn(path);
  expect(hits).toHaveLength(8);
  for (const hit of hits) {
    expect(verifySignature(hit.body, hit.headers['service-signature'], [endpoint.secret], { now: hit.receivedAt })).toBe(true);
  }
  const timers = await timerDurations(handle);
  // Seven waits between the eight attempts, then the resend window.
  expect(timers).toHaveLength(8);
  RETRY_DELAYS_MS.forEach((base, i) => {
    expect(timers[i]).toBeGreaterThanOrEqual(base);
    expect(timers[i]).toBeLessThanOrEqual(Math.round(base * 1.1));
  });
  expect(timers[7]).toBe(RESEND_WINDOW_MS);

  const record = await findDelivery(mongo.db, storeId, deliveryId);
  expect(record).toMatchObject({ status: 'exhausted', attempts: 8, next_attempt_at: null, last_error: 'HTTP 500', delivered_at: null });
  expect(record!.last_duration_ms).toEqual(expect.any(Number));
  expect((await findEndpoint(mongo.db, storeId, endpoint._id))!.consecutive_failures).toBe(1);
  await recordHistory(env.client, handle.workflowId, 'webhook-delivery-exhausted');
});

test('a delivery that fails 4 times succeeds on attempt 5 and resets the endpoint failure count', async () => {
  const { storeId, endpoint, path } = await setup((hit) => (hitsOn(hit.path).length <= 4 ? 503 : 200));
  await endpointsCollection(mongo.db).updateOne({ _id: endpoint._id }, { $set: { consecutive_failures: 3 } });
  const { deliveryId, handle } = await emit(storeId, endpoint);

  const final = (await handle.result()) as WebhookDeliveryState;

  expect(final).toMatchObject({ status: 'succeeded', attempts: 5, last_response_status: 200, last_error: null });
  expect(hitsOn(path)).toHaveLength(5);
  const timers = await timerDurations(handle);
  expect(timers.slice(0, 4).map((t, i) => t >= RETRY_DELAYS_MS[i] && t <= RETRY_DELAYS_MS[i] * 1.1)).toEqual([true, true, true, true]);
  const record = await findDelivery(mongo.db, storeId, deliveryId);
  expect(record).toMatchObject({ status: 'succeeded', attempts: 5, next_attempt_at: null, last_error: null });
  expect(record!.delivered_at).toEqual(expect.any(Number));
  expect((await findEndpoint(mongo.db, storeId, endpoint._id))!.consecutive_failures).toBe(0);
  await recordHistory(env.client, handle.workflowId, 'webhook-delivery-succeeded-on-attempt-5');
});

test('the 20th consecutive exhausted delivery disables the endpoint, after which no delivery is stored for it', async () => {
  const { storeId, endpoint, path } = await setup(() => 500);
  // One after another: the time-skipping server skips time for everything at once.
  for (let i = 0; i < 19; i++) await (await emit(storeId, endpoint)).handle.result();
  expect(await findEndpoint(mongo.db, storeId, endpoint._id)).toMatchObject({ status: 'enabled', consecutive_failures: 19, disabled_reason: null });

  const twentieth = await emit(storeId, endpoint);
  await twentieth.handle.result();

  expect(await findEndpoint(mongo.db, storeId, endpoint._id)).toMatchObject({
    status: 'disabled',
    consecutive_failures: 20,
    disabled_reason: AUTO_DISABLED_REASON,
  });
  expect(hitsOn(path)).toHaveLength(20 * 8);
  const after = await emit(storeId, endpoint);
  expect(after.event.targets).toEqual([]);
  expect(await findDelivery(mongo.db, storeId, after.deliveryId)).toBeNull();
});

test('a resend signal after exhaustion puts the delivery back to pending with attempts reset and delivers at once', async () => {
  let answer = 500;
  const { storeId, endpoint, path } = await setup(() => answer);
  const { deliveryId, handle } = await emit(storeId, endpoint);
  // Past the whole schedule (27.6 h plus jitter), but inside the resend window.
  await env.sleep('31 hours');
  await waitFor(async () => (await findDelivery(mongo.db, storeId, deliveryId))?.status === 'exhausted', { timeoutMs: 20_000 });
  expect(hitsOn(path)).toHaveLength(8);

  answer = 200;
  await handle.signal(resendSignal);

  const record = await waitFor(
    async () => {
      const doc = await findDelivery(mongo.db, storeId, deliveryId);
      return doc?.status === 'succeeded' ? doc : null;
    },
    { timeoutMs: 20_000 },
  );
  expect(record).toMatchObject({ status: 'succeeded', attempts: 1, last_response_status: 200, last_error: null });
  expect(hitsOn(path)).toHaveLength(9);
  expect(hitsOn(path)[8].event.id).toBe(hitsOn(path)[0].event.id);
  await recordHistory(env.client, handle.workflowId, 'webhook-delivery-resent-after-exhaustion');
});

test('a test event (POST /v1/webhook_endpoints/{id}/test) that exhausts counts toward auto-disable', async () => {
  const { storeId, endpoint, path } = await setup(() => 500, { apiStore: true });
  await endpointsCollection(mongo.db).updateOne({ _id: endpoint._id }, { $set: { consecutive_failures: 19 } });

  const sent = await call(api, apiStore.key, 'POST', `/v1/webhook_endpoints/${endpoint._id}/test`);
  expect(sent.status).toBe(200);
  const handle = env.client.workflow.getHandle(webhookDeliveryWorkflowId(deliveryIdFor(sent.body.event, endpoint._id)));
  const final = (await handle.result()) as WebhookDeliveryState;

  expect(final).toMatchObject({ status: 'exhausted', attempts: 8 });
  expect(hitsOn(path)).toHaveLength(8);
  expect(hitsOn(path).every((hit) => hit.event.id === sent.body.event && (hit.event as { test?: boolean }).test === true)).toBe(true);
  expect(await findEndpoint(mongo.db, storeId, endpoint._id)).toMatchObject({
    status: 'disabled',
    consecutive_failures: 20,
    disabled_reason: AUTO_DISABLED_REASON,
  });
});

test('an API resend (POST /v1/events/{id}/resend) of an exhausted delivery resets attempts to 0 and restarts the schedule at 5 s', async () => {
  const { storeId, endpoint, path } = await setup(() => 500, { apiStore: true });
  const { event, deliveryId, handle } = await emit(storeId, endpoint);
  // The whole schedule and the resend window pass: the workflow has closed, exhausted.
  expect(await handle.result()).toMatchObject({ status: 'exhausted', attempts: 8 });
  expect(hitsOn(path)).toHaveLength(8);
  expect((await findEndpoint(mongo.db, storeId, endpoint._id))!.consecutive_failures).toBe(1);

  // After the resend: attempt 1 fails again, attempt 2 succeeds.
  responders.set(path, (hit) => (hitsOn(hit.path).length <= 9 ? 500 : 200));
  const res = await call(api, apiStore.key, 'POST', `/v1/events/${event._id}/resend`, { json: {} });
  expect(res.body).toEqual({ object: 'event_resend', event: event._id, webhook_endpoint: null, deliveries: 1 });

  const latest = env.client.workflow.getHandle(webhookDeliveryWorkflowId(deliveryId));
  const final = (await latest.result()) as WebhookDeliveryState;
  expect(final).toMatchObject({ status: 'succeeded', attempts: 2, last_response_status: 200 });
  expect(hitsOn(path)).toHaveLength(10);
  // The new run waited the first delay of the schedule, not the last one's 10 h.
  const timers = await timerDurations(latest);
  expect(timers[0]).toBeGreaterThanOrEqual(RETRY_DELAYS_MS[0]);
  expect(timers[0]).toBeLessThanOrEqual(Math.round(RETRY_DELAYS_MS[0] * 1.1));
  expect(await findDelivery(mongo.db, storeId, deliveryId)).toMatchObject({ status: 'succeeded', attempts: 2, next_attempt_at: null });
  expect((await findEndpoint(mongo.db, storeId, endpoint._id))!.consecutive_failures).toBe(0);
  await recordHistory(env.client, handle.workflowId, 'webhook-delivery-api-resend');
});

test('a receiver that does not answer within 10 seconds fails the attempt with last_error timeout', async () => {
  const { storeId, endpoint, path } = await setup((hit) =>
    hitsOn(hit.path).length === 1 ? new Promise<number>((resolve) => setTimeout(() => resolve(200), RECEIVER_TIMEOUT_MS + 3_000)) : 200,
  );
  const { deliveryId, handle } = await emit(storeId, endpoint);

  const failed = await waitFor(
    async () => {
      const doc = await findDelivery(mongo.db, storeId, deliveryId);
      return doc?.status === 'failed' ? doc : null;
    },
    { timeoutMs: 30_000 },
  );
  expect(failed).toMatchObject({ attempts: 1, last_error: 'timeout', last_response_status: null });
  expect(failed.last_duration_ms).toBeGreaterThanOrEqual(RECEIVER_TIMEOUT_MS - 50);
  expect(failed.last_duration_ms).toBeLessThan(RECEIVER_TIMEOUT_MS + 2_000);

  const final = (await handle.result()) as WebhookDeliveryState;
  expect(final).toMatchObject({ status: 'succeeded', attempts: 2 });
  expect(hitsOn(path)).toHaveLength(2);
  await recordHistory(env.client, handle.workflowId, 'webhook-delivery-timeout');
});
