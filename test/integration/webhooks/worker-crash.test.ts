// What this tests: a worker process (worker/main.ts, configured through WEBHOOK_ALLOWED_HOSTS and
// WEBHOOK_CA_FILE) killed with SIGKILL while the receiver holds its POST: a new worker makes the attempt
// again and the receiver gets the event (a duplicate is allowed, a loss is not). The worker process
// also started the event sweeper for its task queue.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestWorker } from '../../support/worker';
import { emitEvent } from '../../../services/events/events';
import { ensureIndexes } from '../../../store/indexes';
import { createStore } from '../../../store/stores';
import { insertEndpoint } from '../../../store/webhook-endpoints';
import { deliveryIdFor, findDelivery } from '../../../store/webhook-deliveries';
import { eventSweeperWorkflowId } from '../../../services/operations/routines';
import { stopRoutines } from '../../support/routines';
import { verifySignature } from '../../../adapters/webhooks/verify';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { startWebhookReceiver, testCa, type WebhookReceiver } from '../../support/webhook-receiver';
import { inject } from 'vitest';

const projectRoot = fileURLToPath(new URL('../../..', import.meta.url));

let mongo: TestMongo;
let temporal: TestTemporal;
let receiver: WebhookReceiver;
let child: ChildProcess | null = null;
let worker: Worker | null = null;
let running: Promise<void> | null = null;
const taskQueue = uniqueTaskQueue('webhook-crash');
let releaseHeld: () => void = () => undefined;

beforeAll(async () => {
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  temporal = await testTemporal();
  const held = new Promise<number>((resolve) => {
    releaseHeld = () => resolve(200);
  });
  // The first POST is held open (the worker dies waiting for it); later ones are answered at once.
  receiver = await startWebhookReceiver({ respond: (hit) => (hit.index === 0 ? held : 200) });
});

afterAll(async () => {
  releaseHeld();
  child?.kill('SIGKILL');
  worker?.shutdown();
  await running?.catch(() => undefined);
  if (temporal) await stopRoutines(temporal.client, taskQueue);
  await receiver?.close();
  await temporal?.close();
  await mongo?.close();
});

/** worker/main.ts in its own process, on this test's database and task queue. */
async function startWorkerProcess(): Promise<ChildProcess> {
  const ca = await testCa();
  const proc = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    cwd: projectRoot,
    env: {
      ...process.env,
      MONGODB_URI: inject('mongoUri'),
      MONGODB_DB: mongo.db.databaseName,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: temporal.namespace,
      TEMPORAL_TASK_QUEUE: taskQueue,
      WEBHOOK_ALLOWED_HOSTS: 'localhost',
      WEBHOOK_CA_FILE: ca.caFile,
      LOG_LEVEL: 'ERROR',
      // Unversioned, as every test worker but the versioning test's (docs/testing.md).
      WORKER_VERSIONING: 'off',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  proc.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitFor(() => output.includes('worker ready'), {
    timeoutMs: 90_000,
    intervalMs: 200,
    description: 'the worker process to print "worker ready"',
    abortIf: () => (proc.exitCode !== null ? new Error(`worker process exited: ${output}`) : undefined),
  });
  return proc;
}

test('a worker killed mid-delivery is replaced and the receiver still gets the event, signed', async () => {
  child = await startWorkerProcess();
  const store = await createStore(mongo.db, { name: 'Crash store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  const endpoint = await insertEndpoint(mongo.db, {
    storeId: store._id,
    url: receiver.url('/crash'),
    description: null,
    enabledEvents: ['*'],
    apiVersion: '2026-11-01',
  });
  const event = await emitEvent(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { storeId: store._id, type: 'customer.created', object: { id: 'cust_crash', object: 'customer' } },
  );
  const deliveryId = deliveryIdFor(event._id, endpoint._id);

  const [first] = await receiver.waitForHits(1, 30_000);
  expect(first.event.id).toBe(event._id);
  expect(await findDelivery(mongo.db, store._id, deliveryId)).toMatchObject({ status: 'delivering', attempts: 1 });

  const exited = new Promise((resolve) => child!.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  child = null;

  const ca = await testCa();
  worker = await createTestWorker(mongo, temporal, taskQueue, { webhooks: { allowedHosts: ['localhost'], ca: ca.caCert } });
  running = worker.run();

  const delivered = await waitFor(
    async () => {
      const doc = await findDelivery(mongo.db, store._id, deliveryId);
      return doc?.status === 'succeeded' ? doc : null;
    },
    { timeoutMs: 60_000, description: 'the delivery to succeed on the new worker' },
  );
  // The interrupted attempt was made again, not counted twice.
  expect(delivered).toMatchObject({ attempts: 1, last_response_status: 200, last_error: null });
  const again = receiver.hits.slice(1);
  expect(again.length).toBeGreaterThanOrEqual(1);
  for (const hit of again) {
    expect(hit.event.id).toBe(event._id);
    expect(verifySignature(hit.body, hit.headers['service-signature'], [endpoint.secret])).toBe(true);
  }

  // The worker process started the sweeper on its task queue.
  const sweeper = await temporal.client.workflow.getHandle(eventSweeperWorkflowId(taskQueue)).describe();
  expect(sweeper).toMatchObject({ type: 'eventSweeperWorkflow', taskQueue, status: { name: 'RUNNING' } });
  // A worker process start (bundling) and a 15 s heartbeat timeout: longer than the default test timeout on a busy machine.
}, 150_000);
