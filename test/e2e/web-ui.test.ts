// What this tests: what an operator sees in the Temporal Web UI, in a real browser. A dev server with
// its UI (the suite's shared one is headless), a worker and the API start a checkout session and a
// subscription whose first charge is declined. The list, with the business columns docs/operations.md
// suggests (BillingStatus, CustomerId, StoreId), shows their rows and statuses; a BillingStatus query
// narrows it to the past-due subscription; its page shows the summary and the current step. The pinned
// UI (2.54) lists no static summaries (ListWorkflowExecutions does not return user metadata), so the
// summary is asserted on the workflow's page. Screenshots go to test/artifacts/e2e/.
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTemporalDevServer, type RunningTemporalDevServer } from '../../temporal-dev/servers';
import { ensureIndexes } from '../../store/indexes';
import { subscriptionWorkflowId } from '../../workflows/subscription/messages';
import { createTestStore, startTestApi, type TestApi, type TestStore } from '../support/api';
import { launchBrowser, screenshot } from '../support/browser';
import { createSession, seedCheckoutCatalog } from '../support/checkout-fixtures';
import { testMongo, testNamespace, uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../support/env';
import { stopRoutines } from '../support/routines';
import { seedCatalog, seedSubscription } from '../support/subscriptions';
import { createTestWorker } from '../support/worker';

const taskQueue = uniqueTaskQueue('web-ui');
let server: RunningTemporalDevServer;
let temporal: TestTemporal;
let mongo: TestMongo;
let worker: Worker;
let running: Promise<void>;
let api: TestApi;
let store: TestStore;
let browser: Browser;

/** The suite's TestTemporal shape, on this file's own dev server. */
async function connectTo(address: string): Promise<TestTemporal> {
  const connection = await Connection.connect({ address });
  const nativeConnection = await NativeConnection.connect({ address });
  return {
    address,
    namespace: testNamespace,
    connection,
    client: new Client({ connection, namespace: testNamespace }),
    nativeConnection,
    close: async () => {
      await nativeConnection.close();
      await connection.close();
    },
  };
}

beforeAll(async () => {
  [server, mongo, browser] = await Promise.all([startTemporalDevServer(), testMongo(), launchBrowser()]);
  temporal = await connectTo(server.address);
  await ensureIndexes(mongo.db);
  worker = await createTestWorker(mongo, temporal, taskQueue);
  running = worker.run();
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  store = await createTestStore(mongo.db, { name: 'Lumen Photo School' });
});

afterAll(async () => {
  await browser?.close();
  await api?.close();
  worker?.shutdown();
  await running?.catch(() => undefined);
  if (temporal) await stopRoutines(temporal.client, taskQueue).catch(() => undefined);
  await temporal?.close();
  await mongo?.close();
  await server?.stop();
});

/** The list's columns as an operator sets them in the UI's column picker (kept in the browser's local storage). */
const BUSINESS_COLUMNS = ['Status', 'Workflow ID', 'BillingStatus', 'CustomerId', 'Type', 'Start'].map((label, index) => ({
  label,
  pinned: index < 2,
}));

/** Opens the workflow list (optionally filtered by a visibility query) and waits until `text` shows in it. */
async function openList(page: Page, text: string, query?: string): Promise<void> {
  const url = new URL(`${server.uiUrl}/namespaces/${testNamespace}/workflows`);
  if (query) url.searchParams.set('query', query);
  // The list reads visibility, which lags the start by a moment: reload until the row is there.
  await waitFor(
    async () => {
      await page.goto(url.toString());
      const shown = await page
        .getByText(text)
        .first()
        .waitFor({ state: 'visible', timeout: 10_000 })
        .then(
          () => true,
          () => false,
        );
      return shown || null;
    },
    { timeoutMs: 60_000, intervalMs: 500, description: `the Web UI list to show "${text}"` },
  ).catch(async (error: unknown) => {
    await screenshot(page, 'web-ui-failure');
    throw error;
  });
}

/** Waits until `pattern` is in the page's text; the UI renders user metadata (Markdown) in sandboxed frames, so every frame is read. */
async function shows(page: Page, pattern: RegExp, what: string): Promise<void> {
  await waitFor(
    async () => {
      for (const frame of page.frames()) {
        const text = await frame
          .locator('body')
          .innerText({ timeout: 1_000 })
          .catch(() => '');
        if (pattern.test(text)) return true;
      }
      return null;
    },
    { timeoutMs: 20_000, intervalMs: 250, description: `the page to show ${what} (${pattern})` },
  );
}

test('the list shows business rows (BillingStatus, CustomerId); a BillingStatus query finds the past-due subscription; its page shows the timer summary, the summary and the current step', async () => {
  const checkoutCatalog = await seedCheckoutCatalog(mongo.db, store.store._id);
  const session = await createSession(api, store, { offer: checkoutCatalog.oneOff._id, customer_email: 'maria.silva@example.com' });
  expect(session.status).toBe(201);
  const catalog = await seedCatalog(mongo.db, store.store._id);
  const sub = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: catalog.monthly, product: catalog.product, card: '4000000000000002' },
  );
  const subscriptionId = subscriptionWorkflowId(sub._id);
  // The decline shows as a search attribute before the UI can list it as past due.
  await waitFor(
    async () => {
      for await (const row of temporal.client.workflow.list({ query: `BillingStatus = 'past_due' AND StoreId = '${store.store._id}'` })) {
        if (row.workflowId === subscriptionId) return true;
      }
      return null;
    },
    { timeoutMs: 20_000, description: 'the subscription to be past due' },
  );

  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  await context.addInitScript({
    content: `localStorage.setItem('namespace-workflow-table-columns', ${JSON.stringify(JSON.stringify({ [testNamespace]: BUSINESS_COLUMNS }))});`,
  });
  try {
    const page = await context.newPage();
    await openList(page, `checkout-session/${session.body.id}`);
    const subscriptionRow = page.getByRole('row').filter({ hasText: subscriptionId });
    await expect(subscriptionRow.getByText('past_due').isVisible()).resolves.toBe(true);
    await expect(subscriptionRow.getByText(sub.customer!).isVisible()).resolves.toBe(true);
    await expect(
      page
        .getByRole('row')
        .filter({ hasText: `checkout-session/${session.body.id}` })
        .getByText('open', { exact: true })
        .isVisible(),
    ).resolves.toBe(true);
    await screenshot(page, 'web-ui-workflow-list');

    await openList(page, subscriptionId, `BillingStatus = "past_due" AND StoreId = "${store.store._id}"`);
    await expect(page.getByText(`checkout-session/${session.body.id}`).count()).resolves.toBe(0);
    await screenshot(page, 'web-ui-past-due-query');

    await page.getByText(subscriptionId).first().click();
    // The timeline's timer reads as the story (its summary), and the User Metadata tab shows summary and current step.
    await page.getByText('until retry or an action').first().waitFor({ state: 'visible', timeout: 20_000 });
    await screenshot(page, 'web-ui-subscription-timeline');
    await page
      .getByRole('link', { name: 'User Metadata' })
      .or(page.getByRole('tab', { name: 'User Metadata' }))
      .first()
      .click();
    // The page shows the static summary and the current details the workflow publishes.
    await shows(page, new RegExp(`Subscription ${sub._id} · ${sub.customer} .\\*\\*\\*@example\\.com · ${catalog.monthly.name}`), 'the summary');
    await shows(page, /past_due since \S+: 1 failed, retry at \S+/, 'the current step');
    await screenshot(page, 'web-ui-subscription-metadata');
  } finally {
    await context.close();
  }
}, 180_000);
