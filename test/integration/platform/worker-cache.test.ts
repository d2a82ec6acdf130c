// What this tests: the worker's sticky workflow cache stays at the bound WORKER_MAX_CACHED_WORKFLOWS
// sets (worker/tuning.ts, issue 30) while more long-lived workflows than that are open: ten trialing
// subscriptions, each waiting in its own workflow, on a worker whose cache holds four.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createStore } from '../../../store/stores';
import { subscriptionStateQuery, subscriptionWorkflowId } from '../../../workflows/subscription/messages';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { seedCatalog, seedSubscription } from '../../support/subscriptions';
import { createTestWorker } from '../../support/worker';

const BOUND = 4;
const OPEN = 10;

let mongo: TestMongo;
let temporal: TestTemporal;
let worker: Worker;
let running: Promise<void>;
let taskQueue: string;

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  taskQueue = uniqueTaskQueue('worker-cache');
  const saved = { cache: process.env.WORKER_MAX_CACHED_WORKFLOWS, slots: process.env.WORKER_WORKFLOW_TASK_SLOTS };
  process.env.WORKER_MAX_CACHED_WORKFLOWS = String(BOUND);
  process.env.WORKER_WORKFLOW_TASK_SLOTS = '2';
  try {
    worker = await createTestWorker(mongo, temporal, taskQueue);
  } finally {
    for (const [name, value] of [
      ['WORKER_MAX_CACHED_WORKFLOWS', saved.cache],
      ['WORKER_WORKFLOW_TASK_SLOTS', saved.slots],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await temporal?.close();
  await mongo?.close();
});

test(`${OPEN} open subscription workflows on a worker whose cache holds ${BOUND}: at most ${BOUND} cached, each still answers`, async () => {
  expect(worker.options.maxCachedWorkflows).toBe(BOUND);
  const store = await createStore(mongo.db, { name: 'Cache Store', slug: 'cache', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  const catalog = await seedCatalog(mongo.db, store._id);
  let mostCached = 0;
  // Sampled while the workflows start and answer: the bound holds throughout, not only at the end.
  const sampler = setInterval(() => {
    mostCached = Math.max(mostCached, worker.getStatus().numCachedWorkflows);
  }, 20);
  try {
    const subs = [];
    for (let i = 0; i < OPEN; i++) {
      subs.push(
        await seedSubscription({ db: mongo.db, temporal: temporal.client, taskQueue }, { store, offer: catalog.trial, product: catalog.product }),
      );
    }
    // Each workflow answers a query (evicted ones are replayed into the cache, pushing another out).
    for (const sub of subs) {
      const state = await waitFor(() => temporal.client.workflow.getHandle(subscriptionWorkflowId(sub._id)).query(subscriptionStateQuery), {
        description: `subscription ${sub._id} to answer`,
      });
      expect(state).toBeTruthy();
    }
    mostCached = Math.max(mostCached, worker.getStatus().numCachedWorkflows);
  } finally {
    clearInterval(sampler);
  }
  expect(mostCached).toBeGreaterThan(0);
  expect(mostCached).toBeLessThanOrEqual(BOUND);
});
