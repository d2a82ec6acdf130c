// What this tests: an event written by a process that died before starting its deliveries (emitEvent
// without a Temporal client) is delivered by the event sweeper's Temporal schedule, once.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestWorker } from '../support/worker';
import { emitEvent } from '../../services/events';
import { collections } from '../../store/collections';
import { ensureIndexes } from '../../store/indexes';
import { outboxCollection } from '../../store/events';
import { createStore } from '../../store/stores';
import { deliveriesCollection, insertEndpoint } from '../../store/webhooks';
import { ensureEventSweeperSchedule, eventSweeperScheduleId } from '../../services/event-sweeper-schedule';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../support/env';
import { startWebhookReceiver, testCa, type WebhookReceiver } from '../support/webhook-receiver';

let mongo: TestMongo;
let temporal: TestTemporal;
let receiver: WebhookReceiver;
let worker: Worker;
let running: Promise<void>;
const taskQueue = uniqueTaskQueue('webhook-sweeper');

beforeAll(async () => {
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  temporal = await testTemporal();
  receiver = await startWebhookReceiver();
  worker = await createTestWorker(mongo, temporal, taskQueue, { webhooks: { allowedHosts: ['localhost'], ca: (await testCa()).caCert } });
  running = worker.run();
});

afterAll(async () => {
  await temporal?.client.schedule.getHandle(eventSweeperScheduleId(taskQueue)).delete().catch(() => undefined);
  worker?.shutdown();
  await running?.catch(() => undefined);
  await receiver?.close();
  await temporal?.close();
  await mongo?.close();
});

test('an event left undispatched is delivered by the sweeper schedule, and only once', async () => {
  const store = await createStore(mongo.db, { name: 'Sweep store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  await insertEndpoint(mongo.db, { storeId: store._id, url: receiver.url('/swept'), description: null, enabledEvents: ['*'], apiVersion: '2026-11-01' });
  // No Temporal client: written, never dispatched, as when the writer dies right after the insert.
  const event = await emitEvent({ db: mongo.db }, { storeId: store._id, type: 'customer.created', object: { id: 'cust_swept', object: 'customer' } });
  expect(event.dispatched).toBe(false);
  expect(await outboxCollection(mongo.db).countDocuments({ _id: event._id })).toBe(1);

  await ensureEventSweeperSchedule(temporal.client, taskQueue, { everyMs: 1_000, olderThanMs: 1_000 });
  const [hit] = await receiver.waitForHits(1, 30_000);
  expect(hit.event.id).toBe(event._id);
  await waitFor(async () => (await collections(mongo.db).events.findOne({ _id: event._id }))?.dispatched === true);
  expect(await outboxCollection(mongo.db).countDocuments({ _id: event._id })).toBe(0);

  // Later sweeps find nothing to do: still one delivery, one hit.
  const sweeps = await temporal.client.schedule.getHandle(eventSweeperScheduleId(taskQueue)).describe();
  const actionsSoFar = sweeps.info.numActionsTaken;
  await waitFor(async () => (await temporal.client.schedule.getHandle(eventSweeperScheduleId(taskQueue)).describe()).info.numActionsTaken >= actionsSoFar + 2, {
    timeoutMs: 15_000,
  });
  expect(await deliveriesCollection(mongo.db).countDocuments({ event: event._id })).toBe(1);
  expect(receiver.hits).toHaveLength(1);
});
