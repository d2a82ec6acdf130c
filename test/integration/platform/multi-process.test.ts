// What this tests: correctness that rests on the database alone, with two API processes and two worker
// processes (real children, sharing no memory) on one database and task queue: a key's rate window,
// one Idempotency-Key raced over both APIs, 20 exhaustions raced over both workers (exactly 20 counted,
// the endpoint disabled once), and 5,000 meter events with repeats sent through both APIs at once.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { collections } from '../../../store/collections';
import { buildEventDoc, insertEvents, renderEventBody } from '../../../store/events';
import { findUsageState } from '../../../store/usage';
import { AUTO_DISABLE_AFTER, AUTO_DISABLED_REASON } from '../../../store/webhook-endpoints';
import { findDelivery, insertDeliveries, newDeliveryDoc } from '../../../store/webhook-deliveries';
import { stopRoutines } from '../../support/routines';
import { MAX_ATTEMPTS } from '../../../domain/webhook-retry';
import { usageWorkflowId } from '../../../workflows/usage-periods/messages';
import type { webhookDeliveryWorkflow } from '../../../workflows/webhook-delivery/workflow';
import {
  stateQuery,
  storeIdSearchAttribute,
  WEBHOOK_DELIVERY_WORKFLOW,
  webhookDeliveryWorkflowId,
} from '../../../workflows/webhook-delivery/messages';
import { call, createTestStore } from '../../support/api';
import { startApiProcess, startWorkerProcess, type ApiProcess, type AppProcess } from '../../support/app-processes';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { seedUsageOffer, seedUsageSubscription } from '../../support/usage';
import { startWebhookReceiver, testCa, type WebhookReceiver } from '../../support/webhook-receiver';

const taskQueue = uniqueTaskQueue('multi-process');
let mongo: TestMongo;
let temporal: TestTemporal;
let receiver: WebhookReceiver;
const processes: AppProcess[] = [];
let apis: ApiProcess[] = [];
/** Workflows this file starts (directly or through the APIs), ended in afterAll. */
const workflowIds: string[] = [];

type Res = Awaited<ReturnType<typeof call>>;

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  // Every delivery fails: the receiver always answers 500.
  receiver = await startWebhookReceiver({ respond: () => 500 });
  const shared = {
    MONGODB_DB: mongo.db.databaseName,
    TEMPORAL_NAMESPACE: temporal.namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    WEBHOOK_ALLOWED_HOSTS: 'localhost',
  };
  const worker = { ...shared, WEBHOOK_CA_FILE: (await testCa()).caFile };
  const started = await Promise.allSettled([
    startApiProcess(shared),
    startApiProcess(shared),
    startWorkerProcess(worker),
    startWorkerProcess(worker),
  ]);
  for (const result of started) if (result.status === 'fulfilled') processes.push(result.value);
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
  apis = processes.slice(0, 2) as ApiProcess[];
  // Four processes start at once (tsx, two workflow bundles) on a shared 2-core machine.
}, 300_000);

afterAll(async () => {
  await Promise.all(processes.map((app) => app.group.stop({ timeoutMs: 10_000 })));
  const client = temporal?.client;
  if (client) {
    await Promise.all(
      workflowIds.map((id) =>
        client.workflow
          .getHandle(id)
          .terminate('test over')
          .catch(() => undefined),
      ),
    );
    await stopRoutines(client, taskQueue);
  }
  await receiver?.close();
  await temporal?.close();
  await mongo?.close();
}, 60_000);

/** Request i goes to API process i % 2. */
const spread = <T>(count: number, send: (api: ApiProcess, i: number) => Promise<T>) =>
  Promise.all(Array.from({ length: count }, (_, i) => send(apis[i % 2], i)));

/** Resolves just after a `windowMs` window boundary (Math.floor(now / windowMs) changes). */
async function nextWindow(windowMs: number): Promise<void> {
  const current = Math.floor(Date.now() / windowMs);
  await waitFor(() => Math.floor(Date.now() / windowMs) > current, {
    timeoutMs: windowMs + 1_000,
    intervalMs: 2,
    description: 'the next rate window',
  });
}

it('one key gets at most 100 requests per 2-second window in total from both API processes, and is refused with 429 rate_limit beyond', async () => {
  const { key } = await (await createTestStore(mongo.db)).makeKey(['read']);
  await nextWindow(2_000);
  const responses = await spread(300, async (api, i) => ({ ...(await call(api, key, 'GET', '/v1/account')), api: i % 2 }));

  // Requests a loaded machine lets slip into the following window are counted in that window.
  const windows = new Map<string | null, typeof responses>();
  for (const r of responses) windows.set(r.headers.get('x-ratelimit-reset'), [...(windows.get(r.headers.get('x-ratelimit-reset')) ?? []), r]);
  expect(responses.filter((r) => r.status !== 200 && r.status !== 429).map((r) => [r.status, r.body])).toEqual([]);
  for (const group of windows.values()) {
    const served = group.filter((r) => r.status === 200);
    expect(served.length).toBeLessThanOrEqual(100);
    if (served.length === group.length) continue;
    // A window that refused requests had served (nearly) all of its 100, with both processes answering in it.
    expect(served.length).toBeGreaterThanOrEqual(90);
    expect(new Set(group.map((r) => r.api)).size).toBe(2);
  }
  const refused = responses.filter((r) => r.status === 429);
  expect(refused.length).toBeGreaterThan(0);
  for (const res of refused) expectRateLimited(res);
  expect(responses.find((r) => r.status === 200)!.headers.get('x-ratelimit-limit')).toBe('100');
});

function expectRateLimited(res: Res) {
  expect(res.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit' });
  expect(typeof res.body.error.message).toBe('string');
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(2);
  expect([res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining')]).toEqual(['100', '0']);
  expect(res.headers.get('request-id')).toMatch(/^req_[0-9a-f]{20}$/);
}

it('20 concurrent POST /v1/customers with one Idempotency-Key over both APIs create one customer; the rest replay it or answer 409 idempotency_key_in_use', async () => {
  const { store, key } = await createTestStore(mongo.db);
  const body = {
    email: `race-${randomUUID()}@example.com`,
    name: 'Ana Souza',
    phone: '+5511987654321',
    document: { type: 'cpf', number: '52998224725' },
  };
  const headers = { 'Idempotency-Key': `race-${randomUUID()}` };
  const responses = await spread(20, (api) => call(api, key, 'POST', '/v1/customers', { json: body, headers }));

  const originals = responses.filter((r) => r.status < 300 && r.headers.get('idempotent-replayed') === null);
  expect(originals.map((r) => r.status)).toEqual([201]);
  const [original] = originals;
  for (const res of responses.filter((r) => r !== original)) {
    if (res.status === 409) {
      expect(res.body.error).toMatchObject({ type: 'idempotency_error', code: 'idempotency_key_in_use', param: 'Idempotency-Key' });
      continue;
    }
    expect(res.status).toBe(201);
    expect(res.headers.get('idempotent-replayed')).toBe('true');
    expect(res.headers.get('original-request-id')).toBe(original.headers.get('request-id'));
    expect(res.body.id).toBe(original.body.id);
  }

  // Once the first has finished, a retry with the key replays it, on either process.
  for (const api of apis) {
    const again = await call(api, key, 'POST', '/v1/customers', { json: body, headers });
    expect([again.status, again.headers.get('idempotent-replayed'), again.body.id]).toEqual([201, 'true', original.body.id]);
  }
  const listed = await call(apis[0], key, 'GET', `/v1/customers?email=${encodeURIComponent(body.email)}`);
  expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([original.body.id]);
  expect(await collections(mongo.db).events.countDocuments({ store_id: store._id, type: 'customer.created' })).toBe(1);
});

/** Events of the store for `endpointId`, each with a delivery that failed 7 times and whose last attempt is due now. */
async function deliveriesAtLastAttempt(storeId: string, endpointId: string, count: number) {
  const now = Date.now();
  const events = Array.from({ length: count }, (_, i) =>
    buildEventDoc({ storeId, type: 'customer.created', object: { id: `cust_multi${i}`, object: 'customer' }, targets: [endpointId] }, now + i),
  );
  // Written without the dispatch outbox: these deliveries are started below, at their last attempt.
  await insertEvents(mongo.db, events);
  const deliveries = events.map((event) => ({
    ...newDeliveryDoc(event, endpointId, renderEventBody(event), now),
    status: 'failed' as const,
    attempts: MAX_ATTEMPTS - 1,
    last_response_status: 500,
    last_error: 'HTTP 500',
  }));
  await insertDeliveries(mongo.db, deliveries);
  return deliveries;
}

it('20 deliveries exhausting at once on two worker processes: consecutive_failures reaches exactly 20 and the endpoint is auto-disabled', async () => {
  const { store, key } = await createTestStore(mongo.db);
  const created = await call(apis[0], key, 'POST', '/v1/webhook_endpoints', { json: { url: receiver.url('/always-500'), enabled_events: ['*'] } });
  expect(created.status).toBe(201);
  const endpointId: string = created.body.id;

  // The schedule puts hours between attempts; these 20 deliveries are at their 8th and last at once.
  const deliveries = await deliveriesAtLastAttempt(store._id, endpointId, AUTO_DISABLE_AFTER);
  const handles = await Promise.all(
    deliveries.map((delivery) => {
      const workflowId = webhookDeliveryWorkflowId(delivery._id);
      workflowIds.push(workflowId);
      return temporal.client.workflow.start<typeof webhookDeliveryWorkflow>(WEBHOOK_DELIVERY_WORKFLOW, {
        workflowId,
        taskQueue,
        args: [{ deliveryId: delivery._id, storeId: store._id, endpointId, attempt: MAX_ATTEMPTS }],
        typedSearchAttributes: [{ key: storeIdSearchAttribute, value: store._id }],
      });
    }),
  );
  // Each workflow reports exhausted once its attempt (and the endpoint's count) is done.
  await waitFor(async () => (await Promise.all(handles.map((h) => h.query(stateQuery)))).every((s) => s.status === 'exhausted'), {
    timeoutMs: 60_000,
    intervalMs: 500,
    description: 'every delivery to be exhausted',
  });

  const hits = receiver.hits.filter((hit) => hit.path === '/always-500');
  expect(new Set(hits.map((hit) => hit.event.id)).size).toBe(AUTO_DISABLE_AFTER);
  for (const delivery of deliveries) {
    expect(await findDelivery(mongo.db, store._id, delivery._id)).toMatchObject({
      status: 'exhausted',
      attempts: MAX_ATTEMPTS,
      last_response_status: 500,
    });
  }
  const endpoint = await call(apis[1], key, 'GET', `/v1/webhook_endpoints/${endpointId}`);
  expect(endpoint.body).toMatchObject({ status: 'disabled', consecutive_failures: AUTO_DISABLE_AFTER, disabled_reason: AUTO_DISABLED_REASON });
  // Both workers made attempts (each worker names itself in the activity's start).
  expect((await activityWorkers(handles.map((h) => h.workflowId))).size).toBe(2);
}, 90_000);

/** The identities of the workers that started the workflows' activities. */
async function activityWorkers(ids: string[]): Promise<Set<string>> {
  const identities = new Set<string>();
  for (const id of ids) {
    const history = await temporal.client.workflow.getHandle(id).fetchHistory();
    for (const event of history.events ?? []) {
      const identity = event.activityTaskStartedEventAttributes?.identity;
      if (identity) identities.add(identity);
    }
  }
  return identities;
}

/** `total` events on identifiers 0..unique-1 (value i % 10 + 1), the first `total - unique` sent twice, in batches of 100. */
function meterEventBatches(eventName: string, customer: string, unique: number, total: number) {
  const event = (i: number) => ({ event_name: eventName, identifier: `req-${i}`, payload: { customer_id: customer, value: (i % 10) + 1 } });
  const items = [...Array.from({ length: unique }, (_, i) => event(i)), ...Array.from({ length: total - unique }, (_, i) => event(i))];
  const batches = Array.from({ length: total / 100 }, (_, b) => items.slice(b * 100, b * 100 + 100));
  // Repeats and originals interleaved, so a repeat may reach the other process before or with its original.
  return batches.map((_, i) => batches[(i * 7) % batches.length]);
}

it('5,000 meter events (1,000 repeated identifiers) sent in concurrent batches over both APIs: event summaries and the usage period count each identifier once', async () => {
  const { store, key } = await createTestStore(mongo.db);
  const meter = (await call(apis[0], key, 'POST', '/v1/billing/meters', { json: { display_name: 'API requests', event_name: 'api.requests' } })).body;
  const offer = await seedUsageOffer(mongo.db, store._id);
  const { subscription, customer } = await seedUsageSubscription({ db: mongo.db, taskQueue }, { store, offer });
  const item = await call(apis[1], key, 'POST', `/v1/subscriptions/${subscription._id}/usage_items`, { json: { meter: meter.id, unit_amount: 1 } });
  expect(item.status).toBe(201);
  workflowIds.push(usageWorkflowId(subscription._id));
  await waitFor(async () => (await findUsageState(mongo.db, store._id, subscription._id))?.open ?? null, {
    timeoutMs: 30_000,
    description: 'the usage period to open',
  });

  const hour = Math.floor(Date.now() / 3_600_000) * 3600;
  const batches = meterEventBatches(meter.event_name, customer._id, 4_000, 5_000);
  const answers = await spread(batches.length, (api, i) =>
    call(api, key, 'POST', '/v1/billing/meter_events/batch', { json: { events: batches[i] } }),
  );

  expect(answers.filter((a) => a.status !== 200).map((a) => [a.status, a.body])).toEqual([]);
  const sum = (field: 'accepted' | 'duplicates' | 'errors') => answers.reduce((total, a) => total + a.body[field], 0);
  expect([sum('accepted'), sum('duplicates'), sum('errors')]).toEqual([4_000, 1_000, 0]);
  const expected = 400 * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10);

  const summaries = await call(
    apis[0],
    key,
    'GET',
    `/v1/billing/meters/${meter.id}/event_summaries?customer=${customer._id}&start_time=${hour}&end_time=${hour + 2 * 3600}`,
  );
  expect(summaries.body.data.map((s: { aggregated_value: number }) => s.aggregated_value)).toEqual([expected]);
  const usage = await call(apis[1], key, 'GET', `/v1/subscriptions/${subscription._id}/usage`);
  expect(usage.body.data[0].lines).toEqual([expect.objectContaining({ meter: meter.id, quantity: expected, amount: expected })]);
}, 90_000);
