// What this tests: a worker made by createBillingWorker, on the shared Temporal dev server and
// FerretDB, runs pingWorkflow whose activity pings MongoDB.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createBillingWorker } from '../../../worker/main';
import type { pingWorkflow } from '../../../workflows';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from '../../support/env';

let mongo: TestMongo;
let temporal: TestTemporal;

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
});

afterAll(async () => {
  await temporal?.close();
  await mongo?.close();
});

test('pingWorkflow returns pong from the ping activity', async () => {
  const taskQueue = uniqueTaskQueue('worker-ping');
  const worker = await createBillingWorker({
    connection: temporal.nativeConnection,
    namespace: temporal.namespace,
    taskQueue,
    db: mongo.db,
    temporal: temporal.client,
  });

  const result = await worker.runUntil(
    temporal.client.workflow.execute<typeof pingWorkflow>('pingWorkflow', { taskQueue, workflowId: `ping-${taskQueue}` }),
  );

  expect(result).toBe('pong');
});
