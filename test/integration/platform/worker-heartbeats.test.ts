// What this tests: the worker's heartbeat (worker/activity-interceptors.ts) keeps a slow but live
// activity alive past its 5 s heartbeat timeout. A receiver that takes 8 s to answer (within the 10 s
// webhook deadline) gets the event once and the delivery succeeds on its first attempt; without the
// heartbeat the attempt would be timed out after 5 s and POSTed again.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { emitEvent } from '../../../services/events/events';
import { ensureIndexes } from '../../../store/indexes';
import { createStore } from '../../../store/stores';
import { insertEndpoint } from '../../../store/webhook-endpoints';
import { deliveryIdFor, findDelivery } from '../../../store/webhook-deliveries';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { startWebhookReceiver, testCa, type WebhookReceiver } from '../../support/webhook-receiver';
import { createTestWorker } from '../../support/worker';

const SLOW_ANSWER_MS = 8_000;

let mongo: TestMongo;
let temporal: TestTemporal;
let receiver: WebhookReceiver;
let worker: Worker | null = null;
let running: Promise<void> | null = null;
const taskQueue = uniqueTaskQueue('heartbeats');

beforeAll(async () => {
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  temporal = await testTemporal();
  // A slow receiver (the scenario, not a synchronization): it answers 200 after 8 s.
  receiver = await startWebhookReceiver({ respond: () => new Promise((resolve) => setTimeout(() => resolve(200), SLOW_ANSWER_MS)) });
  worker = await createTestWorker(mongo, temporal, taskQueue, { webhooks: { allowedHosts: ['localhost'], ca: (await testCa()).caCert } });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await receiver?.close();
  await temporal?.close();
  await mongo?.close();
});

it('an attempt that takes 8 s on a live worker is not timed out by the 5 s heartbeat timeout: one POST, first attempt succeeds', async () => {
  const store = await createStore(mongo.db, { name: 'Slow receiver store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  const endpoint = await insertEndpoint(mongo.db, {
    storeId: store._id,
    url: receiver.url('/slow'),
    description: null,
    enabledEvents: ['*'],
    apiVersion: '2026-11-01',
  });
  const event = await emitEvent(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { storeId: store._id, type: 'customer.created', object: { id: 'cust_slow', object: 'customer' } },
  );
  const deliveryId = deliveryIdFor(event._id, endpoint._id);
  const delivered = await waitFor(
    async () => {
      const doc = await findDelivery(mongo.db, store._id, deliveryId);
      return doc?.status === 'succeeded' ? doc : null;
    },
    { timeoutMs: 60_000, description: 'the slow delivery to succeed' },
  );
  expect(delivered).toMatchObject({ attempts: 1, last_response_status: 200, last_error: null });
  expect(delivered.last_duration_ms).toBeGreaterThanOrEqual(SLOW_ANSWER_MS - 100);
  expect(receiver.hits).toHaveLength(1);
}, 120_000);
