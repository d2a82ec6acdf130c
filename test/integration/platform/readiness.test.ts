// What this tests: ready means a real Temporal call succeeds, not that the frontend accepts connections.
// Against a namespace that does not answer yet (registered only midway, as on a server still starting),
// /readyz answers 503 naming temporal while GetSystemInfo already succeeds, and 200 once DescribeNamespace
// answers; a worker process waits (saying so) instead of failing, and prints "worker ready" only after.
import { randomUUID } from 'node:crypto';
import Long from 'long';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api';
import { launchWorkerProcess, type AppProcess } from '../../support/app-processes';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { registerSearchAttributes } from '../../support/search-attributes';
import { stopRoutines } from '../../support/routines';

const taskQueue = uniqueTaskQueue('readiness');
// A namespace of its own, registered by the test only once both processes wait for it.
const namespace = `readiness-${randomUUID().slice(0, 8)}`;
let mongo: TestMongo;
let temporal: TestTemporal;
let api: TestApi;
let worker: AppProcess | undefined;

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  api = await startTestApi({ db: mongo.db, temporal: new Client({ connection: temporal.connection, namespace }), taskQueue });
});

afterAll(async () => {
  await worker?.group.stop({ timeoutMs: 10_000 });
  await stopRoutines(new Client({ connection: temporal.connection, namespace }), taskQueue).catch(() => undefined);
  await api?.close();
  await temporal?.close();
  await mongo?.close();
}, 60_000);

const readyz = async () => {
  const res = await fetch(`${api.url}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string; checks: Record<string, string> } };
};

it('/readyz and the worker wait for DescribeNamespace to answer: 503 and "waiting" before, 200 and "worker ready" after', async () => {
  // The frontend itself answers: only a call in the namespace tells that it is not ready.
  await temporal.connection.workflowService.getSystemInfo({});
  const before = await readyz();
  expect(before.status).toBe(503);
  expect(before.body.checks).toMatchObject({ mongodb: 'ok', temporal: expect.stringContaining(namespace) });

  const launched = launchWorkerProcess({ MONGODB_DB: mongo.db.databaseName, TEMPORAL_NAMESPACE: namespace, TEMPORAL_TASK_QUEUE: taskQueue });
  worker = launched.app;
  const app = launched.app;
  launched.ready.catch(() => undefined);
  await waitFor(() => app.output().includes(`worker: waiting for Temporal namespace ${namespace} to answer`), {
    timeoutMs: 180_000,
    intervalMs: 250,
    description: 'the worker to say it waits for its namespace',
    abortIf: () => (app.group.hasExited() ? new Error(`the worker exited instead of waiting:\n${app.output().slice(-3000)}`) : undefined),
  });
  expect(app.output()).not.toContain('worker ready');

  await temporal.connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(86_400) } });
  // The frontend's namespace cache learns a new namespace within seconds; until then this call is refused.
  await waitFor(() => registerSearchAttributes(temporal.connection, namespace).then(() => true), {
    timeoutMs: 60_000,
    intervalMs: 500,
    description: 'the new namespace to take search attributes',
  });
  await waitFor(async () => (await readyz()).status === 200, { timeoutMs: 30_000, intervalMs: 250, description: '/readyz to answer 200' });
  expect((await readyz()).body).toEqual({ status: 'ready', checks: { mongodb: 'ok', temporal: 'ok' } });
  await launched.ready;
  expect(app.output()).toContain('worker ready');
}, 300_000);
