// What this tests: the worker process's shutdown grace (WORKER_SHUTDOWN_GRACE, 30 s by default in
// worker/main.ts). A SIGTERM that arrives while a webhook POST waits on a slow receiver lets that
// attempt finish: the receiver answers once, the delivery is recorded as succeeded by the same process,
// and only then does it exit. Without the grace the attempt would be cancelled and made again later
// by another worker (a second POST of the same event).
import { afterAll, beforeAll, expect, test } from 'vitest';
import { emitEvent } from '../../../services/events/events';
import { ensureIndexes } from '../../../store/indexes';
import { createStore } from '../../../store/stores';
import { insertEndpoint } from '../../../store/webhook-endpoints';
import { deliveryIdFor, findDelivery } from '../../../store/webhook-deliveries';
import { stopRoutines } from '../../support/routines';
import { startWorkerProcess, type AppProcess } from '../../support/app-processes';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { startWebhookReceiver, testCa, type WebhookReceiver } from '../../support/webhook-receiver';

let mongo: TestMongo;
let temporal: TestTemporal;
let receiver: WebhookReceiver;
let worker: AppProcess | null = null;
const taskQueue = uniqueTaskQueue('shutdown-grace');
let answerHeld: () => void = () => undefined;
let answeredAt = 0;

beforeAll(async () => {
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  temporal = await testTemporal();
  const held = new Promise<number>((resolve) => {
    answerHeld = () => {
      answeredAt = Date.now();
      resolve(200);
    };
  });
  // The receiver is slow: it answers the first POST only when the test says so.
  receiver = await startWebhookReceiver({ respond: (hit) => (hit.index === 0 ? held : 200) });
});

afterAll(async () => {
  answerHeld();
  await worker?.group.stop({ signal: 'SIGKILL' });
  if (temporal) await stopRoutines(temporal.client, taskQueue);
  await receiver?.close();
  await temporal?.close();
  await mongo?.close();
});

test('a SIGTERM during a delivery lets the POST finish: delivered once, recorded, then the worker exits', async () => {
  const ca = await testCa();
  worker = await startWorkerProcess({
    MONGODB_DB: mongo.db.databaseName,
    TEMPORAL_NAMESPACE: temporal.namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    WEBHOOK_ALLOWED_HOSTS: 'localhost',
    WEBHOOK_CA_FILE: ca.caFile,
    LOG_LEVEL: 'ERROR',
  });
  const store = await createStore(mongo.db, { name: 'Grace store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  const endpoint = await insertEndpoint(mongo.db, {
    storeId: store._id,
    url: receiver.url('/grace'),
    description: null,
    enabledEvents: ['*'],
    apiVersion: '2026-11-01',
  });
  const event = await emitEvent(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { storeId: store._id, type: 'customer.created', object: { id: 'cust_grace', object: 'customer' } },
  );
  const deliveryId = deliveryIdFor(event._id, endpoint._id);
  await receiver.waitForHits(1, 60_000);

  const group = worker.group;
  process.kill(-group.pid, 'SIGTERM');
  await waitFor(() => worker!.output().includes('SIGTERM received'), { timeoutMs: 10_000, description: 'the worker to take the SIGTERM' });
  // Shutting down, yet still holding the attempt: it neither exits nor gives up while the receiver thinks.
  expect(group.hasExited()).toBe(false);
  expect(await findDelivery(mongo.db, store._id, deliveryId)).toMatchObject({ status: 'delivering', attempts: 1 });

  answerHeld();
  const status = await Promise.race([
    group.exited,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`the worker did not exit:\n${worker!.output()}`)), 35_000)),
  ]);
  const exitedAt = Date.now();
  expect(status).toEqual({ code: 0, signal: null });
  expect(exitedAt).toBeGreaterThanOrEqual(answeredAt);
  expect(worker.output()).toContain('worker stopped');

  // Recorded by the process that was stopping: no other worker polls this task queue.
  expect(await findDelivery(mongo.db, store._id, deliveryId)).toMatchObject({
    status: 'succeeded',
    attempts: 1,
    last_response_status: 200,
    last_error: null,
  });
  expect(receiver.hits.map((hit) => hit.event.id)).toEqual([event._id]);
}, 150_000);
