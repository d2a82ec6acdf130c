// What this tests: the end of a checkout session's review window when the provider has nothing to give back
// yet (the payment still pending there, say processing), on the time-skipping server with FerretDB and the
// test connection behind a wrapper that refuses the void and counts look-ups. The session no longer asks
// again at once in a loop (hundreds of look-ups a second until Temporal's history limit ended the run):
// past the window it waits 5 minutes, doubling up to a day, between rounds; once the void goes through it
// settles refused. Recorded as checkout-session-review-end-backoff (replayed by replay.test.ts).
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { testServerPath } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import type { StoreDoc } from '../../store/collections';
import { ensureIndexes } from '../../store/indexes';
import { createStore } from '../../store/stores';
import { createTestConnection } from '../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../adapters/provider/types';
import { insertCustomer, newCustomerDoc } from '../../store/customers';
import { createCheckoutSession, type CheckoutDeps } from '../../services/checkout/sessions';
import { payCheckoutSession } from '../../services/checkout/payments';
import { checkoutAttemptKey, checkoutSessionWorkflowId, stateQuery } from '../../workflows/checkout-session/messages';
import { REVIEW_WINDOW_MS } from '../../domain/reviews';
import { registerSearchAttributes } from '../support/search-attributes';
import { seedCheckoutCatalog, type CheckoutCatalog } from '../support/checkout-fixtures';
import { testMongo, uniqueTaskQueue, type TestMongo } from '../support/env';
import { recordHistory } from '../support/histories';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
const CARD_REVIEW = { method: 'card' as const, card: { number: '4000 0000 0000 4954' } };
/** Look-ups of one review over its 7 days and the 2 hours after: 7 daily, then 2 a round at 5, 15, 35, 75 minutes. */
const LOOKUPS_BOUND = 20;

let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let worker: Worker;
let running: Promise<void>;
let store: StoreDoc;
let catalog: CheckoutCatalog;
let customerId: string;
const taskQueue = uniqueTaskQueue('checkout-review-end');
/** Keys whose give-back the provider refuses for now (nothing to give back yet), and look-ups per key. */
const voidRefused = new Set<string>();
const lookups = new Map<string, number>();

function countingProvider(): PaymentProvider {
  const base = createTestConnection({ db: mongo.db });
  return {
    ...base,
    async lookupCharge(input) {
      lookups.set(input.idempotencyKey, (lookups.get(input.idempotencyKey) ?? 0) + 1);
      return base.lookupCharge(input);
    },
    async refundCharge(input) {
      if (voidRefused.has(input.chargeKey)) return { ok: false, reason: `transaction of ${input.chargeKey} is processing: nothing to give back now` };
      return base.refundCharge(input);
    },
  };
}

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: testServerPath() } } });
  await registerSearchAttributes(env.connection, env.namespace ?? 'default');
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  store = await createStore(mongo.db, { name: 'Review Store', slug: null, country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  catalog = await seedCheckoutCatalog(mongo.db, store._id);
  const customer = newCustomerDoc(store._id, { email: 'review@example.com', name: 'Review Buyer' }, {});
  await insertCustomer(mongo.db, customer);
  customerId = customer._id;
  worker = await createBillingWorker({
    connection: env.nativeConnection,
    taskQueue,
    db: mongo.db,
    temporal: env.client,
    activityDeps: { provider: countingProvider() },
  });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await env?.teardown();
  await mongo?.close();
});

function deps(): CheckoutDeps {
  return {
    db: mongo.db,
    provider: createTestConnection({ db: mongo.db }),
    temporal: env.client,
    taskQueue,
    checkoutUrl: 'https://pay.example.com',
    development: true,
    payWaitMs: 60_000,
  };
}

/** Skips `ms` of the server's time, or stops early once the key's look-ups pass `bound` (a hot loop never lets the skip end). */
async function skipWatchingLookups(ms: number, key: string, bound: number): Promise<'skipped' | 'hot'> {
  let skipped = false;
  const skip = env.sleep(ms).then(() => (skipped = true));
  while (!skipped) {
    if ((lookups.get(key) ?? 0) > bound) return 'hot';
    await Promise.race([skip, new Promise((resolve) => setTimeout(resolve, 100))]);
  }
  return 'skipped';
}

test('a review end with nothing to give back asks again after a growing wait, not at once: at most 20 look-ups in 7 days and 2 hours; the void that then goes through settles it refused', async () => {
  const now = await env.currentTimeMs();
  const session = await createCheckoutSession(
    deps(),
    store,
    { offer: catalog.oneOff._id, customer: customerId, expires_at: Math.floor((now + 2 * HOUR_MS) / 1000) },
    now,
  );
  const key = checkoutAttemptKey(session._id, 1);
  voidRefused.add(key);
  expect(await payCheckoutSession(deps(), session, CARD_REVIEW, await env.currentTimeMs())).toEqual({ kind: 'done' });
  const handle = env.client.workflow.getHandle(checkoutSessionWorkflowId(session._id));

  expect(await skipWatchingLookups(REVIEW_WINDOW_MS + 2 * HOUR_MS, key, LOOKUPS_BOUND)).toBe('skipped');
  expect(lookups.get(key)).toBeLessThanOrEqual(LOOKUPS_BOUND);
  expect(lookups.get(key)).toBeGreaterThan(7);
  expect((await handle.query(stateQuery)).payment_status).toBe('pending');

  voidRefused.delete(key);
  await env.sleep(DAY_MS);
  expect(await handle.result()).toMatchObject({
    payment_status: 'unpaid',
    settlement: 'refused',
    attempts: [expect.objectContaining({ key, status: 'voided' })],
  });
  expect(lookups.get(key)).toBeLessThanOrEqual(LOOKUPS_BOUND + 2);
  await recordHistory(env.client, handle.workflowId, 'checkout-session-review-end-backoff');
}, 120_000);
