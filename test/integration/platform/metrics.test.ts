// What this tests: the operator's metrics over real HTTP, from a real API process and a real worker
// process after real traffic: the API's GET /metrics on API_METRICS_PORT (not the public port) with the
// request histogram under route patterns and its business counters; the worker's on WORKER_METRICS_PORT
// with the Temporal SDK's temporal_* metrics and the business counters on the same scrape; and every
// metric the Grafana dashboard queries is in one of the two scrapes.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../temporal-dev/servers';
import { BUSINESS_COUNTERS } from '../../../domain/business-metrics';
import { call, createTestStore, type TestStore } from '../../support/api';
import { startApiProcess, startWorkerProcess, type ApiProcess, type AppProcess } from '../../support/app-processes';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { stopRoutines } from '../../support/routines';
import { seedCatalog, seedSubscription, type TestCatalog } from '../../support/subscriptions';
import { metricNamesOfDashboard } from '../../support/dashboard';

const taskQueue = uniqueTaskQueue('metrics');
let mongo: TestMongo;
let temporal: TestTemporal;
let api: ApiProcess;
let worker: AppProcess;
let store: TestStore;
let catalog: TestCatalog;
let apiMetricsUrl: string;
let workerMetricsUrl: string;

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  const [apiMetricsPort, workerMetricsPort] = [await freePort(), await freePort()];
  apiMetricsUrl = `http://127.0.0.1:${apiMetricsPort}/metrics`;
  workerMetricsUrl = `http://127.0.0.1:${workerMetricsPort}/metrics`;
  const shared = { MONGODB_DB: mongo.db.databaseName, TEMPORAL_NAMESPACE: temporal.namespace, TEMPORAL_TASK_QUEUE: taskQueue };
  [api, worker] = await Promise.all([
    startApiProcess({ ...shared, API_METRICS_PORT: String(apiMetricsPort) }),
    startWorkerProcess({ ...shared, WORKER_METRICS_PORT: String(workerMetricsPort) }),
  ]);
  store = await createTestStore(mongo.db);
  catalog = await seedCatalog(mongo.db, store.store._id);
}, 300_000);

afterAll(async () => {
  await Promise.all([api, worker].filter(Boolean).map((app) => app.group.stop({ timeoutMs: 10_000 })));
  if (temporal) await stopRoutines(temporal.client, taskQueue);
  await temporal?.close();
  await mongo?.close();
}, 60_000);

async function scrape(url: string): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

/** The sample's value for a metric line that starts with `series` (name and labels as printed), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const namesIn = (text: string) => new Set(text.split('\n').flatMap((l) => (/^# TYPE (\S+) /.exec(l) ? [/^# TYPE (\S+) /.exec(l)![1]] : [])));

async function chargeOf(card: string): Promise<{ status: number; body: any }> {
  const sub = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: catalog.trial, product: catalog.product, card },
  );
  const headers = { 'idempotency-key': `metrics-${sub._id}` };
  return call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, { json: { amount: 1500, currency: 'brl' }, headers });
}

describe('metrics after real traffic', () => {
  it('the API serves GET /metrics on its metrics port only: the request histogram is per route pattern and status, never per raw URL', async () => {
    expect((await call(api, store.key, 'GET', '/v1/customers/cus_metrics1')).status).toBe(404);
    expect((await call(api, store.key, 'GET', '/v1/customers/cus_metrics2')).status).toBe(404);
    expect((await call(api, store.key, 'GET', '/v1/no-such-route/cus_metrics3')).status).toBe(404);
    expect((await fetch(`${api.url}/metrics`)).status).toBe(404);

    const { status, type, text } = await scrape(apiMetricsUrl);
    expect([status, type]).toEqual([200, expect.stringContaining('text/plain')]);
    const pattern = 'http_request_duration_seconds_count{method="GET",route="/v1/customers/:id",status_code="404"}';
    expect(sample(text, pattern)).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'http_request_duration_seconds_count{method="GET",route="unmatched",status_code="404"}')).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain('cus_metrics');
    expect((await fetch(apiMetricsUrl.replace('/metrics', '/other'))).status).toBe(404);
  });

  it('the API counts checkout sessions opened and meter events by result', async () => {
    const opened = await call(api, store.key, 'POST', '/v1/checkout/sessions', { json: { offer: catalog.monthly._id } });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    const refused = await call(api, store.key, 'POST', '/v1/billing/meter_events', { json: { event_name: 'no_such_meter', payload: {} } });
    expect(refused.status).toBe(400);

    const { text } = await scrape(apiMetricsUrl);
    expect(sample(text, 'billing_checkout_sessions_total{status="open"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'billing_meter_events_total{result="error"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'billing_meter_events_total{result="accepted"}')).toBe(0);
  });

  it('the worker serves temporal_* and the business counters on one scrape: charges by outcome and the buyer e-mails they send', async () => {
    const approved = await chargeOf('4242424242424242');
    const declined = await chargeOf('4000000000000002');
    expect([approved.status, approved.body.status]).toEqual([201, 'succeeded']);
    expect(declined.status).toBe(402);

    const text = await waitFor(
      async () => {
        const { text } = await scrape(workerMetricsUrl);
        const counted =
          sample(text, 'billing_charges_total{outcome="approved"}') === 1 && sample(text, 'billing_charges_total{outcome="declined"}') === 1;
        return counted && (sample(text, 'billing_emails_total{result="sent"}') ?? 0) >= 1 ? text : null;
      },
      { timeoutMs: 30_000, intervalMs: 250, description: 'the worker to count both charges and the confirmation e-mail' },
    );
    expect(text).toMatch(/^temporal_workflow_task_schedule_to_start_latency_bucket\{/m);
    expect(text).toMatch(/^temporal_activity_execution_latency_bucket\{/m);
    for (const spec of Object.values(BUSINESS_COUNTERS)) expect(namesIn(text), spec.name).toContain(spec.name);
    expect(text).not.toMatch(/sub_|cus_|ch_[A-Za-z0-9]/);
  });

  it('every metric the Grafana dashboard queries is exported by the API or the worker', async () => {
    const [fromApi, fromWorker] = await Promise.all([scrape(apiMetricsUrl), scrape(workerMetricsUrl)]);
    const exported = new Set([...namesIn(fromApi.text), ...namesIn(fromWorker.text)]);
    const dashboard = JSON.parse(readFileSync('ops/grafana/billing-dashboard.json', 'utf8')) as unknown;
    const missing = metricNamesOfDashboard(dashboard).filter((name) => !exported.has(name));
    expect(missing).toEqual([]);
  });
});
