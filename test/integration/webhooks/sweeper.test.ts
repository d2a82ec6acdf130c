// What this tests: an event written by a process that died before starting its deliveries (emitEvent
// without a Temporal client) is delivered by the event sweeper, once; the sweeper is one long-lived
// workflow whose later empty sweeps add no workflow execution.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestWorker } from '../../support/worker';
import { emitEvent } from '../../../services/events/events';
import { ensureIndexes } from '../../../store/indexes';
import { outboxCollection } from '../../../store/events';
import { createStore } from '../../../store/stores';
import { insertEndpoint } from '../../../store/webhook-endpoints';
import { deliveriesCollection } from '../../../store/webhook-deliveries';
import { ensureEventSweeper, eventSweeperWorkflowId, routineState } from '../../../services/operations/routines';
import { stopRoutines } from '../../support/routines';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { startWebhookReceiver, testCa, type WebhookReceiver } from '../../support/webhook-receiver';

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
  if (temporal) await stopRoutines(temporal.client, taskQueue);
  worker?.shutdown();
  await running?.catch(() => undefined);
  await receiver?.close();
  await temporal?.close();
  await mongo?.close();
});

test('an event left undispatched is delivered by the sweeper, once; later empty sweeps leave no new executions', async () => {
  const store = await createStore(mongo.db, { name: 'Sweep store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  await insertEndpoint(mongo.db, {
    storeId: store._id,
    url: receiver.url('/swept'),
    description: null,
    enabledEvents: ['*'],
    apiVersion: '2026-11-01',
  });
  // No Temporal client: written, never dispatched, as when the writer dies right after the insert.
  const event = await emitEvent({ db: mongo.db }, { storeId: store._id, type: 'customer.created', object: { id: 'cust_swept', object: 'customer' } });
  expect(await outboxCollection(mongo.db).countDocuments({ _id: event._id })).toBe(1);

  await ensureEventSweeper(temporal.client, taskQueue, { sweepEveryMs: 1_000, sweepOlderThanMs: 1_000 });
  const [hit] = await receiver.waitForHits(1, 30_000);
  expect(hit.event.id).toBe(event._id);
  await waitFor(async () => (await outboxCollection(mongo.db).countDocuments({ _id: event._id })) === 0, {
    description: 'the swept event out of the outbox',
  });

  // Later sweeps find nothing to do: still one delivery, one hit, and one sweeper execution on the queue.
  const id = eventSweeperWorkflowId(taskQueue);
  const runsSoFar = (await routineState(temporal.client, id)).runs;
  const later = await waitFor(
    async () => {
      const state = await routineState(temporal.client, id);
      return state.runs >= runsSoFar + 2 ? state : null;
    },
    { timeoutMs: 15_000, description: 'two more sweeps' },
  );
  expect(later).toMatchObject({ last_found: 0, last_error: null });
  expect(later.found_total).toBeGreaterThanOrEqual(1);
  expect(await deliveriesCollection(mongo.db).countDocuments({ event: event._id })).toBe(1);
  expect(receiver.hits).toHaveLength(1);
  const executions = await waitFor(
    async () => {
      const found = [];
      for await (const execution of temporal.client.workflow.list({ query: `TaskQueue = '${taskQueue}'` })) found.push(execution);
      return found.length >= 2 ? found : null;
    },
    { description: 'the sweeper and the delivery in the visibility list' },
  );
  // The sweeper and the one delivery it started: no execution per sweep.
  expect(executions.map((e) => e.type).sort()).toEqual(['eventSweeperWorkflow', 'webhookDeliveryWorkflow']);
  expect(executions.find((e) => e.type === 'eventSweeperWorkflow')?.workflowId).toBe(id);
});
