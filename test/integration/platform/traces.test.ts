// What this tests: with tracing on, one merchant request is one trace. POST /v1/subscriptions/{id}/charges
// through a traced API and a worker with Temporal's OpenTelemetry interceptors (spans kept by an
// in-memory exporter) gives the route's span, the charge workflow's run and the charge activity one
// trace id, the subscription workflow's update that decides the charge included; and the attempt that
// delivers a request's event to a webhook endpoint is a span of that request's trace.
import { Client } from '@temporalio/client';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTracing, tracingClientInterceptors, type Tracing } from '../../../adapters/tracing';
import { createBillingWorker } from '../../../worker/main';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { seedCatalog, seedSubscription, type TestCatalog } from '../../support/subscriptions';
import { startWebhookReceiver, testCa, type WebhookReceiver } from '../../support/webhook-receiver';

const taskQueue = uniqueTaskQueue('traces');
const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let mongo: TestMongo;
let temporal: TestTemporal;
let client: Client;
let api: TestApi;
let worker: Worker;
let running: Promise<void>;
let store: TestStore;
let catalog: TestCatalog;
let receiver: WebhookReceiver;

beforeAll(async () => {
  tracing = startTracing('billing-test', new SimpleSpanProcessor(exporter));
  mongo = await testMongo();
  temporal = await testTemporal();
  client = new Client({ connection: temporal.connection, namespace: temporal.namespace, interceptors: tracingClientInterceptors(tracing) });
  receiver = await startWebhookReceiver();
  api = await startTestApi({ db: mongo.db, temporal: client, taskQueue, traced: true, config: { webhookAllowedHosts: ['localhost'] } });
  worker = await createBillingWorker({
    connection: temporal.nativeConnection,
    namespace: temporal.namespace,
    taskQueue,
    db: mongo.db,
    temporal: client,
    tracing,
    activityDeps: { webhooks: { allowedHosts: ['localhost'], ca: (await testCa()).caCert } },
  });
  running = worker.run();
  store = await createTestStore(mongo.db);
  catalog = await seedCatalog(mongo.db, store.store._id);
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await api?.close();
  await receiver?.close();
  await temporal?.close();
  await mongo?.close();
  await tracing?.shutdown();
});

const names = (spans: ReadableSpan[]) => spans.map((span) => span.name).sort();

it('POST /v1/subscriptions/{id}/charges is one trace: the route, the charge workflow and the charge activity share its trace id', async () => {
  const sub = await seedSubscription(
    { db: mongo.db, temporal: client, taskQueue },
    { store: store.store, offer: catalog.trial, product: catalog.product, card: '4242424242424242' },
  );
  exporter.reset();
  const res = await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
    json: { amount: 2500, currency: 'brl' },
    headers: { 'idempotency-key': `traced-${sub._id}` },
  });
  expect([res.status, res.body.status]).toEqual([201, 'succeeded']);

  const route = await waitFor(() => exporter.getFinishedSpans().find((span) => span.name === 'POST /v1/subscriptions/:id/charges'), {
    timeoutMs: 10_000,
    description: "the route's span",
  });
  const traceId = route.spanContext().traceId;
  const inTrace = () => exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId);
  await waitFor(
    () =>
      names(inTrace()).some((name) => name === 'RunActivity:executeSubscriptionCharge') && names(inTrace()).some((n) => n.startsWith('RunWorkflow:')),
    {
      timeoutMs: 30_000,
      intervalMs: 200,
      description: `the workflow and charge activity spans in trace ${traceId}: ${JSON.stringify(names(exporter.getFinishedSpans()))}`,
    },
  );
  const spans = names(inTrace());
  // The charge workflow's run, the subscription's update deciding the charge, and the provider call's activity.
  for (const name of [
    'UpdateWithStartWorkflow:outcome',
    'RunWorkflow:chargeWorkflow',
    'HandleUpdate:charge',
    'RunActivity:executeSubscriptionCharge',
  ]) {
    expect(spans).toContain(name);
  }
  // The request is the trace's root: every other span descends from the route's.
  expect(inTrace().filter((span) => !span.parentSpanId)).toEqual([route]);
});

it("a webhook delivery's attempt is a span of the trace of the request whose event it delivers", async () => {
  const created = await call(api, store.key, 'POST', '/v1/webhook_endpoints', {
    json: { url: receiver.url('/traced'), enabled_events: ['customer.created'] },
  });
  expect(created.status).toBe(201);
  exporter.reset();
  const customer = await call(api, store.key, 'POST', '/v1/customers', {
    json: { email: 'traced@example.com', name: 'Traced Buyer', phone: '+5511987654321', document: { type: 'cpf', number: '52998224725' } },
  });
  expect(customer.status, JSON.stringify(customer.body)).toBe(201);

  const route = await waitFor(() => exporter.getFinishedSpans().find((span) => span.name === 'POST /v1/customers'), {
    timeoutMs: 10_000,
    description: "the route's span",
  });
  const traceId = route.spanContext().traceId;
  await waitFor(
    () => exporter.getFinishedSpans().some((span) => span.name === 'RunActivity:attemptWebhookDelivery' && span.spanContext().traceId === traceId),
    {
      timeoutMs: 30_000,
      intervalMs: 200,
      description: `the delivery attempt in trace ${traceId}: ${JSON.stringify(names(exporter.getFinishedSpans()))}`,
    },
  );
  expect(receiver.hits.filter((hit) => hit.path === '/traced')).toHaveLength(1);
});
