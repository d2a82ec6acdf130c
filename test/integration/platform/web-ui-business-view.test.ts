// What this tests: what an operator sees of billing in the Temporal Web UI and CLI, through the dev
// server. The worker process keeps one sweeper and one usage routine per task queue however often they
// run; business workflows carry a summary (object, customer with masked e-mail, amount, offer) and a
// current step; and each search query docs/operations.md shows finds the workflow it should.
import type { Worker } from '@temporalio/worker';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { projectRoot } from '../../../temporal-dev/tools';
import { emitEvent } from '../../../services/events/events';
import { eventSweeperWorkflowId, routineState, usageRoutineWorkflowId } from '../../../services/operations/routines';
import { ensureIndexes } from '../../../store/indexes';
import { insertEndpoint } from '../../../store/webhook-endpoints';
import { subscriptionWorkflowId } from '../../../workflows/subscription/messages';
import { chargeWorkflowId } from '../../../workflows/charge/messages';
import { merchantChargeKey } from '../../../domain/charges';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { startWorkerProcess, type AppProcess } from '../../support/app-processes';
import { seedCheckoutCatalog, createSession } from '../../support/checkout-fixtures';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { stopRoutines } from '../../support/routines';
import { seedCatalog, seedSubscription } from '../../support/subscriptions';
import { seedUsageOffer, seedUsageSubscription } from '../../support/usage';
import { addOfferUsageRow } from '../../../store/catalog';
import { ensureUsageForSubscription } from '../../../services/usage/shared';
import { usageWorkflowId } from '../../../workflows/usage-periods/messages';
import { startWebhookReceiver, testCa, type WebhookReceiver } from '../../support/webhook-receiver';
import { createTestWorker } from '../../support/worker';

const execFileAsync = promisify(execFile);

let mongo: TestMongo;
let temporal: TestTemporal;

beforeAll(async () => {
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  temporal = await testTemporal();
});

afterAll(async () => {
  await temporal?.close();
  await mongo?.close();
});

/** The workflow ids a visibility query finds (waiting out the index's lag until `expected` shows). */
async function findIds(client: Client, query: string, expected: string): Promise<string[]> {
  return waitFor(
    async () => {
      const ids: string[] = [];
      for await (const execution of client.workflow.list({ query })) ids.push(execution.workflowId);
      return ids.includes(expected) ? ids : null;
    },
    { timeoutMs: 20_000, description: `"${query}" to find ${expected}` },
  );
}

/** The current details the workflow publishes (what the Web UI shows under "Current details"). */
async function currentDetails(handle: WorkflowHandle): Promise<string> {
  const metadata = (await handle.query('__temporal_workflow_metadata')) as { currentDetails?: string };
  return metadata.currentDetails ?? '';
}

/** `npm run temporal -- <args>` against the suite's dev server; its stdout. */
async function runCli(args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('npm', ['run', '-s', 'temporal', '--', ...args], {
    cwd: projectRoot,
    env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: temporal.namespace },
  });
  return stdout;
}

describe('routines without a trail', () => {
  const taskQueue = uniqueTaskQueue('routines');
  let worker: AppProcess | null = null;

  afterAll(async () => {
    await worker?.group.stop();
    await stopRoutines(temporal.client, taskQueue);
  });

  it('a worker process sweeping every second leaves one sweeper and one usage-routine execution, each with its summary', async () => {
    worker = await startWorkerProcess({
      MONGODB_DB: mongo.db.databaseName,
      TEMPORAL_NAMESPACE: temporal.namespace,
      TEMPORAL_TASK_QUEUE: taskQueue,
      EVENT_SWEEP_EVERY_MS: '1000',
    });
    const sweeper = eventSweeperWorkflowId(taskQueue);
    const swept = await waitFor(
      async () => {
        const state = await routineState(temporal.client, sweeper).catch(() => null);
        return state && state.runs >= 6 ? state : null;
      },
      { timeoutMs: 60_000, description: 'six sweeps' },
    );
    expect(swept).toMatchObject({ last_found: 0, last_error: null, found_total: 0 });

    const ids = await findIds(temporal.client, `TaskQueue = '${taskQueue}'`, sweeper);
    expect(ids.sort()).toEqual([sweeper, usageRoutineWorkflowId(taskQueue)].sort());
    const description = await temporal.client.workflow.getHandle(sweeper).describe();
    expect(await description.staticSummary()).toMatch(/^Event sweeper: re-drives events/);
    expect(await currentDetails(temporal.client.workflow.getHandle(sweeper))).toMatch(/^Run \d+ at .*: 0 events re-driven/);
  }, 150_000);
});

describe('business rows and searches', () => {
  const taskQueue = uniqueTaskQueue('business-view');
  let worker: Worker;
  let running: Promise<void>;
  let api: TestApi;
  let store: TestStore;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver({ respond: () => 500 });
    worker = await createTestWorker(mongo, temporal, taskQueue, { webhooks: { allowedHosts: ['localhost'], ca: (await testCa()).caCert } });
    running = worker.run();
    api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
    store = await createTestStore(mongo.db);
  });

  afterAll(async () => {
    await api?.close();
    worker?.shutdown();
    await running?.catch(() => undefined);
    await receiver?.close();
  });

  it('a checkout session: summary with offer and amount; found by CheckoutSessionId and as open', async () => {
    const catalog = await seedCheckoutCatalog(mongo.db, store.store._id);
    const res = await createSession(api, store, { offer: catalog.oneOff._id, customer_email: 'maria.silva@example.com' });
    expect(res.status).toBe(201);
    const workflowId = `checkout-session/${res.body.id}`;
    const description = await temporal.client.workflow.getHandle(workflowId).describe();
    const summary = await description.staticSummary();
    expect(summary).toContain(res.body.id);
    expect(summary).toContain('Photography Course (lifetime)');
    expect(summary).toContain('197.00 BRL');
    expect(summary).toContain('m***@example.com');
    expect(summary).not.toContain('maria.silva');
    expect(await findIds(temporal.client, `CheckoutSessionId = '${res.body.id}' AND BillingStatus = 'open'`, workflowId)).toEqual([workflowId]);
    expect(await currentDetails(temporal.client.workflow.getHandle(workflowId))).toMatch(/^Open until \d{4}-/);
  });

  it('a subscription whose first charge is declined: found as past due, its step says when it retries', async () => {
    const catalog = await seedCatalog(mongo.db, store.store._id);
    const sub = await seedSubscription(
      { db: mongo.db, temporal: temporal.client, taskQueue },
      { store: store.store, offer: catalog.monthly, product: catalog.product, card: '4000000000000002' },
    );
    const workflowId = subscriptionWorkflowId(sub._id);
    const ids = await findIds(temporal.client, `BillingStatus = 'past_due' AND StoreId = '${store.store._id}'`, workflowId);
    expect(ids).toEqual([workflowId]);
    const handle = temporal.client.workflow.getHandle(workflowId);
    expect(await (await handle.describe()).staticSummary()).toMatch(
      new RegExp(`^Subscription ${sub._id} · ${sub.customer} .\\*\\*\\*@example.com · ${catalog.monthly.name}`),
    );
    expect(await currentDetails(handle)).toMatch(/^past_due since .*: 1 failed, retry at \d{4}-/);

    // The same query as support staff type it (docs/operations.md): the bundled CLI through `npm run temporal`.
    const listed = await runCli(['workflow', 'list', '--query', `BillingStatus='past_due' AND StoreId='${store.store._id}'`, '--output', 'json']);
    expect((JSON.parse(listed) as Array<{ execution: { workflowId: string } }>).map((row) => row.execution.workflowId)).toEqual([workflowId]);
  });

  it('a one-off charge left in review: found as in review, with its amount in the summary', async () => {
    const catalog = await seedCatalog(mongo.db, store.store._id);
    const sub = await seedSubscription(
      { db: mongo.db, taskQueue },
      { store: store.store, offer: catalog.trial, product: catalog.product, card: '4000000000004954' },
    );
    const res = await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
      json: { amount: 1234 },
      headers: { 'idempotency-key': `review-${sub._id}` },
    });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('pending');
    const workflowId = chargeWorkflowId(store.store._id, merchantChargeKey(`review-${sub._id}`));
    expect(await findIds(temporal.client, `BillingStatus = 'in_review' AND StoreId = '${store.store._id}'`, workflowId)).toEqual([workflowId]);
    const handle = temporal.client.workflow.getHandle(workflowId);
    expect(await (await handle.describe()).staticSummary()).toMatch(/^One-off charge 12\.34 BRL · sub_/);
    expect(await currentDetails(handle)).toMatch(/^In review at the provider since/);
  });

  it("a subscription's usage periods: summary with the subscription, customer and offer; found by SubscriptionId", async () => {
    const meter = await call(api, store.key, 'POST', '/v1/billing/meters', { json: { display_name: 'Images', event_name: `images.${Date.now()}` } });
    expect(meter.status).toBe(201);
    const offer = await seedUsageOffer(mongo.db, store.store._id, { name: 'Image API metered' });
    await addOfferUsageRow(mongo.db, store.store._id, offer._id, {
      meter: meter.body.id,
      currency: 'brl',
      unit_amount: 2,
      included_units: 0,
      tiers: null,
      rounding: 'up',
      billing_threshold: null,
      label: null,
    });
    const { subscription } = await seedUsageSubscription({ db: mongo.db, taskQueue }, { store: store.store, offer });
    expect(await ensureUsageForSubscription({ db: mongo.db, temporal: temporal.client, taskQueue }, subscription)).toBe(true);
    const workflowId = usageWorkflowId(subscription._id);
    expect(await findIds(temporal.client, `SubscriptionId = '${subscription._id}'`, workflowId)).toContain(workflowId);
    const summary = await (await temporal.client.workflow.getHandle(workflowId).describe()).staticSummary();
    expect(summary).toMatch(new RegExp(`^Usage of ${subscription._id} · ${subscription.customer} u\\*\\*\\*@example\\.com · Image API metered$`));
  });

  it('a delivery to a failing endpoint: found by EndpointId as failed, its step says the next attempt', async () => {
    const endpoint = await insertEndpoint(mongo.db, {
      storeId: store.store._id,
      url: receiver.url('/failing'),
      description: null,
      enabledEvents: ['*'],
      apiVersion: '2026-11-01',
    });
    await emitEvent(
      { db: mongo.db, temporal: temporal.client, taskQueue },
      { storeId: store.store._id, type: 'customer.created', object: { id: 'cust_view', object: 'customer' } },
    );
    const ids = await waitFor(
      async () => {
        const found: string[] = [];
        for await (const execution of temporal.client.workflow.list({ query: `EndpointId = '${endpoint._id}' AND BillingStatus = 'failed'` }))
          found.push(execution.workflowId);
        return found.length > 0 ? found : null;
      },
      { timeoutMs: 20_000, description: 'the failing delivery in the list' },
    );
    expect(ids).toHaveLength(1);
    const handle = temporal.client.workflow.getHandle(ids[0]);
    expect(await (await handle.describe()).staticSummary()).toMatch(new RegExp(`^Webhook customer\\.created evt_\\S+ → ${endpoint._id}$`));
    expect(await currentDetails(handle)).toMatch(/^Attempt 1 of 8 failed \(HTTP 500\), next at \d{4}-/);
  });
});
