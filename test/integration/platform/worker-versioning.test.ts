// What this tests: Worker Versioning on the dev server (issue 28). A checkout session opened on build A
// stays pinned to A after build B, whose checkout workflow runs its activities in another order (it
// cannot replay A's history), becomes current: it is paid and completes on A. A session opened after
// that runs on B, and a subscription started on A moves to B on its next task (auto-upgrade).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { temporal as proto } from '@temporalio/proto';
import { createBillingWorker } from '../../../worker/main';
import { makeVersionCurrent, workerDeploymentOptions, type WorkerVersion } from '../../../worker/versioning';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { checkoutSessionWorkflowId } from '../../../workflows/checkout-session/messages';
import { subscriptionWorkflowId } from '../../../workflows/subscription/messages';
import { startTestApi, type TestApi, type TestStore } from '../../support/api';
import { buyerForm, call, createSession, createTestStore, seedCheckoutCatalog, type CheckoutCatalog } from '../../support/checkout-fixtures';
import { testMongo, testTemporal, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { seedSubscription } from '../../support/subscriptions';

const buildBWorkflows = fileURLToPath(new URL('../../support/build-b-workflows.ts', import.meta.url));
const { VERSIONING_BEHAVIOR_PINNED: PINNED, VERSIONING_BEHAVIOR_AUTO_UPGRADE: AUTO_UPGRADE } = proto.api.enums.v1.VersioningBehavior;

let mongo: TestMongo;
let temporal: TestTemporal;
let api: TestApi;
let store: TestStore;
let catalog: CheckoutCatalog;
let taskQueue: string;
const running: Array<{ worker: Worker; run: Promise<void> }> = [];

// Its own deployment name: no other suite's workers (all unversioned) share it.
const deploymentName = uniqueTaskQueue('billing-versioning');
const buildA: WorkerVersion = { deploymentName, buildId: 'build-a' };
const buildB: WorkerVersion = { deploymentName, buildId: 'build-b' };

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  taskQueue = uniqueTaskQueue('worker-versioning');
  store = await createTestStore(mongo.db);
  catalog = await seedCheckoutCatalog(mongo.db, store.store._id);
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue, config: { ipRateLimit: 100_000 } });
});

afterAll(async () => {
  await api?.close();
  for (const { worker } of running) if (worker.getState() === 'RUNNING') worker.shutdown();
  await Promise.allSettled(running.map(({ run }) => run));
  await temporal?.close();
  await mongo?.close();
});

/** A billing worker of `version` (build B bundles test/support/build-b-workflows.ts), running, and made current. */
async function startBuild(version: WorkerVersion, workflowsPath?: string): Promise<void> {
  const worker = await createBillingWorker({
    connection: temporal.nativeConnection,
    namespace: temporal.namespace,
    taskQueue,
    db: mongo.db,
    temporal: temporal.client,
    workerDeploymentOptions: workerDeploymentOptions(version),
    shutdownForceTime: '20 seconds',
    ...(workflowsPath ? { workflowsPath } : {}),
  });
  running.push({ worker, run: worker.run() });
  await makeVersionCurrent(temporal.connection.workflowService, temporal.namespace, version, { timeoutMs: 60_000 });
}

/** The build and behaviour Temporal recorded for a workflow's last task (undefined before its first). */
async function versioningOf(workflowId: string) {
  const { raw } = await temporal.client.workflow.getHandle(workflowId).describe();
  const info = raw.workflowExecutionInfo?.versioningInfo;
  return { buildId: info?.deploymentVersion?.buildId ?? undefined, behavior: info?.behavior ?? undefined };
}

async function openSession(): Promise<string> {
  const res = await createSession(api, store, { offer: catalog.oneOff._id });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function payByCard(sessionId: string): Promise<void> {
  const res = await fetch(`${api.url}/c/${sessionId}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(buyerForm({ method: 'card', card_number: '4242 4242 4242 4242' })).toString(),
  });
  expect([res.status, res.status === 303 ? '' : errorOf(await res.text())]).toEqual([303, '']);
}

/** The message a checkout page shows above its form. */
const errorOf = (html: string): string => /data-testid="error">([^<]*)/.exec(html)?.[1] ?? html.slice(0, 300);

/** Waits (with a deadline) for the session to close, then for its workflow to end (its confirmation sent). */
async function settled(sessionId: string) {
  const stored = () => findCheckoutSession(mongo.db, store.store._id, sessionId);
  await waitFor(async () => (await stored())?.status !== 'open', { description: `session ${sessionId} to close` });
  await temporal.client.workflow.getHandle(checkoutSessionWorkflowId(sessionId)).result();
  return (await stored())!;
}

/** Ids of the workflows Temporal lists on `version`: the runbook's query by TemporalWorkerDeploymentVersion. */
async function runsOn(version: WorkerVersion): Promise<string[]> {
  const ids: string[] = [];
  const query = `TemporalWorkerDeploymentVersion = '${version.deploymentName}:${version.buildId}'`;
  for await (const run of temporal.client.workflow.list({ query })) ids.push(run.workflowId);
  return ids;
}

it('a session opened on build A completes on A after an incompatible build B becomes current; new work runs on B', async () => {
  await startBuild(buildA);
  const sessionA = await openSession();
  const subscription = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: catalog.monthly, product: catalog.product },
  );
  await waitFor(async () => (await versioningOf(checkoutSessionWorkflowId(sessionA))).buildId === 'build-a');
  expect(await versioningOf(checkoutSessionWorkflowId(sessionA))).toEqual({ buildId: 'build-a', behavior: PINNED });
  await waitFor(async () => (await versioningOf(subscriptionWorkflowId(subscription._id))).buildId === 'build-a');

  await startBuild(buildB, buildBWorkflows);
  // B really is incompatible: its checkout workflow cannot replay the session A opened.
  const historyA = await temporal.client.workflow.getHandle(checkoutSessionWorkflowId(sessionA)).fetchHistory();
  await expect(Worker.runReplayHistory({ workflowsPath: buildBWorkflows }, historyA)).rejects.toThrow(/Nondeterminism|determinism/i);

  // Pinned: paid and completed on A, though B is current.
  await payByCard(sessionA);
  expect(await settled(sessionA)).toMatchObject({ status: 'complete', payment_status: 'paid' });
  expect(await versioningOf(checkoutSessionWorkflowId(sessionA))).toEqual({ buildId: 'build-a', behavior: PINNED });

  // New work goes to the current build: a session opened now runs B's code (its ping first).
  const sessionB = await openSession();
  await payByCard(sessionB);
  expect(await settled(sessionB)).toMatchObject({ status: 'complete', payment_status: 'paid' });
  expect(await versioningOf(checkoutSessionWorkflowId(sessionB))).toEqual({ buildId: 'build-b', behavior: PINNED });
  const historyB = await temporal.client.workflow.getHandle(checkoutSessionWorkflowId(sessionB)).fetchHistory();
  const firstActivity = historyB.events?.find((event) => event.activityTaskScheduledEventAttributes);
  expect(firstActivity?.activityTaskScheduledEventAttributes?.activityType?.name).toBe('ping');

  // Auto-upgrade: the subscription's next task (a pause) runs on B.
  const paused = await call(api, store.key, 'POST', `/v1/subscriptions/${subscription._id}/pause`, { json: {} });
  expect([paused.status, paused.body.status]).toEqual([200, 'paused']);
  expect(await versioningOf(subscriptionWorkflowId(subscription._id))).toEqual({ buildId: 'build-b', behavior: AUTO_UPGRADE });

  // What the runbook's `temporal workflow list --query` shows per version (this file's few runs: a bounded list).
  await waitFor(async () => (await runsOn(buildA)).includes(checkoutSessionWorkflowId(sessionA)), { description: 'session A listed on build A' });
  await waitFor(async () => (await runsOn(buildB)).includes(subscriptionWorkflowId(subscription._id)), {
    description: 'the subscription listed on build B',
  });
}, 240_000);
