// What this tests: a subscription's workflow stays inside Temporal's per-run limits (2,000 updates,
// 51,200 events) however many one-off charges it decides: 2,500 charges in one cycle, each sent as the
// charge workflow's activity sends it (the subscription client's `charge` update, retried as that
// activity is), all succeed exactly once, no run accepts near 2,000 updates, and a run that continued
// as new replays on today's code. (The charge workflows around them would triple the test's time.)
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal as proto } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { searchAttributes, testServerPath } from '../../temporal-dev/servers';
import { createBillingWorker, workflowsPath } from '../../worker/main';
import { disabledMailer } from '../../adapters/email/smtp';
import { ensureIndexes } from '../../store/indexes';
import { createStore } from '../../store/stores';
import type { StoreDoc } from '../../store/collections';
import { findSubscription } from '../../store/subscriptions';
import { ordersCollection } from '../../store/orders';
import { chargesCollection } from '../../store/subscription-charges';
import { subscriptionWorkflowId } from '../../workflows/subscription/messages';
import { EVENTS_PER_RUN, MESSAGES_PER_RUN } from '../../workflows/lib/run-length';
import { testMongo, uniqueTaskQueue, waitFor, type TestMongo } from '../support/env';
import {
  acceptedUpdates,
  chargeAsTheActivityDoes,
  continuedAsNew,
  inLanes,
  oneOffCharge,
  runHistories,
  type ActivityCharging,
} from '../support/long-runs';
import { seedCatalog, seedSubscription } from '../support/subscriptions';

const CHARGES = 2_500;
/** Charges in flight at once: the server admits 10 updates in flight per workflow. */
const CONCURRENCY = 8;
const TEMPORAL_UPDATE_LIMIT = 2_000;

let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let worker: Worker;
let running: Promise<void>;
let store: StoreDoc;
const taskQueue = uniqueTaskQueue('subscription-long-run');

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: testServerPath() } } });
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(searchAttributes.map((name) => [name, proto.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
  });
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  store = await createStore(mongo.db, { name: 'Long Run Store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  // 2,500 purchase confirmations are not what this tests: e-mail is off, as SMTP_URL=disabled has it.
  worker = await createBillingWorker({
    connection: env.nativeConnection,
    taskQueue,
    db: mongo.db,
    temporal: env.client,
    activityDeps: { mailer: disabledMailer() },
  });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await env?.teardown();
  await mongo?.close();
});

let retried = 0;
const charging = (): ActivityCharging => ({ temporal: env.client, taskQueue, db: mongo.db, onRetry: () => (retried += 1) });

it('2,500 one-off charges in one cycle all succeed, each charged once, across runs that never near 2,000 updates', async () => {
  const catalog = await seedCatalog(mongo.db, store._id);
  const sub = await seedSubscription(
    { db: mongo.db, temporal: env.client, taskQueue },
    { store, offer: catalog.monthly, product: catalog.product, now: await env.currentTimeMs() },
  );
  await waitFor(async () => ((await findSubscription(mongo.db, store._id, sub._id))?.cycles_completed === 1 ? true : null), {
    description: 'first cycle paid',
  });

  const started = performance.now();
  const results = await inLanes(CHARGES, CONCURRENCY, (i) => chargeAsTheActivityDoes(charging(), oneOffCharge('long-run', sub, i)));
  console.log(
    `${CHARGES} one-off charges on one subscription took ${Math.round(performance.now() - started)} ms of wall time; ${retried} refused while a run drained, then retried`,
  );

  expect(results.filter((r) => r.outcome === 'approved' && r.charge.status === 'succeeded')).toHaveLength(CHARGES);
  const charges = await chargesCollection(mongo.db).find({ store_id: store._id, subscription: sub._id }).toArray();
  expect(charges).toHaveLength(CHARGES);
  expect(new Set(charges.map((c) => c.amount)).size).toBe(CHARGES);
  // Once at the provider: one ledger entry per charge key, none repeated.
  const ledger = await mongo.db
    .collection('provider_test_charges')
    .find({ store_id: store._id, key: { $regex: '^api/' } })
    .toArray();
  expect(ledger).toHaveLength(CHARGES);
  const orders = await ordersCollection(mongo.db).find({ store_id: store._id, subscription: sub._id, billing_reason: 'manual' }).toArray();
  expect(orders.filter((o) => o.status === 'paid')).toHaveLength(CHARGES);
  // The cycle was not renewed meanwhile: these runs continued as new for their length alone.
  expect((await findSubscription(mongo.db, store._id, sub._id))!.cycles_completed).toBe(1);

  // One run holding every charge would be ~26,000 events (8 MB, past what a client may fetch at once).
  const latest = await env.client.workflow.getHandle(subscriptionWorkflowId(sub._id)).describe();
  expect(latest.historyLength, 'events in the latest run').toBeLessThan(EVENTS_PER_RUN);
  const runs = await runHistories(env.client, subscriptionWorkflowId(sub._id));
  const perRun = runs.map(acceptedUpdates);
  console.log(`updates accepted per run: ${perRun.join(', ')}; events per run: ${runs.map((h) => h.events!.length).join(', ')}`);
  expect(perRun.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(CHARGES);
  expect(Math.max(...perRun)).toBeLessThan(TEMPORAL_UPDATE_LIMIT);
  expect(Math.max(...perRun)).toBeLessThanOrEqual(MESSAGES_PER_RUN + CONCURRENCY);

  // A run that continued as new for its length replays on today's workflow code.
  const long = runs.filter(continuedAsNew).sort((a, b) => acceptedUpdates(b) - acceptedUpdates(a))[0];
  expect(acceptedUpdates(long)).toBeGreaterThan(0);
  await Worker.runReplayHistory({ workflowsPath, replayName: 'subscription-long-run' }, long, subscriptionWorkflowId(sub._id));
}, 300_000);
