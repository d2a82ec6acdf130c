// What this tests: the API process dies (SIGKILL) while a charge request waits for its workflow; the
// client retries with the same Idempotency-Key on another API process and gets the same charge —
// one workflow run, one provider charge, one order.
import { fileURLToPath } from 'node:url';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../../temporal-dev/servers';
import { spawnGroup, type ChildGroup } from '../../../temporal-dev/processes';
import { createTestWorker } from '../../support/worker';
import { ordersCollection } from '../../../store/orders';
import { chargesCollection } from '../../../store/subscription-charges';
import { TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import { chargeWorkflowId } from '../../../workflows/charge/messages';
import { merchantChargeKey } from '../../../domain/charges';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { seedCatalog, seedSubscription } from '../../support/subscriptions';

const root = fileURLToPath(new URL('../../..', import.meta.url));

let mongo: TestMongo;
let temporal: TestTemporal;
let store: TestStore;
let doomedApi: ChildGroup | null = null;
let api: TestApi | null = null;
let worker: Worker | null = null;
let running: Promise<void> | null = null;
const taskQueue = uniqueTaskQueue('charge-fault-api');

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  store = await createTestStore(mongo.db);
});

afterAll(async () => {
  await doomedApi?.stop({ signal: 'SIGKILL' });
  worker?.shutdown();
  await running?.catch(() => undefined);
  await api?.close();
  await temporal?.close();
  await mongo?.close();
});

it('the API dies mid-request; the retry with the same key on another API returns the same charge, charged once', async () => {
  const catalog = await seedCatalog(mongo.db, store.store._id);
  const sub = await seedSubscription({ db: mongo.db, taskQueue }, { store: store.store, offer: catalog.trial, product: catalog.product });

  const port = await freePort();
  doomedApi = spawnGroup('doomed-api', `${root}node_modules/.bin/tsx`, [`${root}api/server.ts`], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      MONGODB_DB: mongo.db.databaseName,
      TEMPORAL_TASK_QUEUE: taskQueue,
      LOG_LEVEL: 'silent',
    },
  });
  const doomedUrl = { url: `http://127.0.0.1:${port}` };
  await waitFor(async () => (await call(doomedUrl, store.key, 'GET', '/v1/account')).status === 200, {
    timeoutMs: 60_000,
    description: 'child API answering',
    abortIf: () => (doomedApi!.hasExited() ? new Error('child API exited') : undefined),
  });

  // No worker yet: the request starts the charge workflow and waits for its outcome.
  const key = `api-dies-${Date.now()}`;
  const body = { amount: 5555, description: 'Mid-request' };
  const first = call(doomedUrl, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, { json: body, headers: { 'idempotency-key': key } }).catch(
    (error: unknown) => error,
  );
  const workflow = temporal.client.workflow.getHandle(chargeWorkflowId(store.store._id, merchantChargeKey(key)));
  await waitFor(async () => (await workflow.describe()).status.name === 'RUNNING', { timeoutMs: 30_000, description: 'charge workflow started' });
  const firstRunId = (await workflow.describe()).runId;
  await doomedApi.stop({ signal: 'SIGKILL' });
  expect(await first).toBeInstanceOf(Error);

  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  const retryCharge = () =>
    call(api!, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, { json: body, headers: { 'idempotency-key': key } });
  // The dead request still holds its key until its lease runs out: a retry meanwhile is told so at once.
  // Asked before the worker starts: bundling it can outlast the lease on a loaded machine.
  const early = await retryCharge();
  expect([early.status, early.body.error?.code]).toEqual([409, 'idempotency_key_in_use']);
  worker = await createTestWorker(mongo, temporal, taskQueue);
  running = worker.run();
  const retry = await waitFor(
    async () => {
      const answer = await retryCharge();
      if (answer.status === 409) return null;
      return answer;
    },
    { timeoutMs: 60_000, intervalMs: 1_000, description: "the dead request's lease to run out" },
  );

  // The first (dead) request started the charge, so the retry is a replay of it.
  expect(retry.status).toBe(200);
  expect(retry.headers.get('idempotent-replayed')).toBe('true');
  expect(retry.body).toMatchObject({ status: 'succeeded', amount: 5555, description: 'Mid-request' });
  const stored = await chargesCollection(mongo.db)
    .find({ key: merchantChargeKey(key) })
    .toArray();
  expect(stored.map((c) => c._id)).toEqual([retry.body.id]);
  expect(await mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ key: merchantChargeKey(key) })).toBe(1);
  expect(await ordersCollection(mongo.db).countDocuments({ subscription: sub._id })).toBe(1);
  // The retry attached to the run the dead API started; no second run exists.
  expect((await workflow.describe()).runId).toBe(firstRunId);
  const again = await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, { json: body, headers: { 'idempotency-key': key } });
  expect(again.body.id).toBe(retry.body.id);
  // A child process (tsx start, bundling, a dead worker's timeouts) on a loaded 2-core box: ~30 s
  // typically; the limit leaves room so load does not turn into a failure.
}, 120_000);
