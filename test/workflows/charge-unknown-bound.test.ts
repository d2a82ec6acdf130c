// What this tests: a subscription charge whose outcome stays unknown (the charge request lost, and every
// lookup by key incomplete, as when Stripe's search is unavailable on a busy account), on the time-skipping
// server with FerretDB and the test connection behind a wrapper that fails both and counts the calls. Runs
// before the bound retried the local step every 30 s without end (about 2,900 provider calls a day, and a
// history growing until Temporal ended the run); now a round of PROVIDER_TRIES_PER_ROUND tries is followed by
// a timer (5 minutes doubling, at most 6 hours), the state query shows the unknown outcome, nothing is taken
// as "nothing charged", and the charge completes once the provider answers. Recorded as
// charge-unknown-outcome-rounds (replayed by replay.test.ts).
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { testServerPath } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { ensureIndexes } from '../../store/indexes';
import { createStore } from '../../store/stores';
import type { StoreDoc } from '../../store/collections';
import { createTestConnection } from '../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../adapters/provider/types';
import { LookupIncompleteError } from '../../adapters/provider/stripe/lookup';
import { INPUT_VERSION } from '../../workflows/lib/input-version';
import { chargeStateQuery, chargeWorkflowId, type ChargeWorkflowInput } from '../../workflows/charge/messages';
import { PROVIDER_TRIES_PER_ROUND, unknownRetryMs } from '../../workflows/lib/unknown-rounds';
import { registerSearchAttributes } from '../support/search-attributes';
import { testMongo, uniqueTaskQueue, waitFor, type TestMongo } from '../support/env';
import { recordHistory } from '../support/histories';

const HOUR_MS = 60 * 60_000;
const DAY_MS = 24 * HOUR_MS;
/** Real time the two simulated days may take: the old code never lets the skip end (its retries hold the task). */
const SKIP_DEADLINE_MS = 180_000;

let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let worker: Worker;
let running: Promise<void>;
let store: StoreDoc;
const taskQueue = uniqueTaskQueue('charge-unknown-bound');
/** Provider calls (charges and lookups) per key, and the keys the provider cannot answer for now. */
const calls = new Map<string, number>();
const unknown = new Set<string>();

function failingProvider(): PaymentProvider {
  const base = createTestConnection({ db: mongo.db });
  const count = (key: string) => calls.set(key, (calls.get(key) ?? 0) + 1);
  return {
    ...base,
    async chargeSavedCard(input) {
      count(input.idempotencyKey);
      if (unknown.has(input.idempotencyKey)) throw new Error('socket hang up: the charge request got no answer');
      return base.chargeSavedCard(input);
    },
    async lookupCharge(input) {
      count(input.idempotencyKey);
      if (unknown.has(input.idempotencyKey))
        throw new LookupIncompleteError(`search unavailable, ${input.idempotencyKey} not in the newest 300: unknown`);
      return base.lookupCharge(input);
    },
  };
}

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: testServerPath() } } });
  await registerSearchAttributes(env.connection, env.namespace ?? 'default');
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  store = await createStore(mongo.db, { name: 'Unknown Store', slug: null, country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  worker = await createBillingWorker({
    connection: env.nativeConnection,
    taskQueue,
    db: mongo.db,
    temporal: env.client,
    activityDeps: { provider: failingProvider() },
  });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await env?.teardown();
  await mongo?.close();
});

function usageCharge(key: string): ChargeWorkflowInput {
  return {
    version: INPUT_VERSION,
    chargeId: `sch_unknown${Date.now()}`,
    storeId: store._id,
    subscriptionId: 'sub_unknownbound',
    customerId: null,
    subscription: {
      paymentMethodId: 'pm_card_visa',
      customerEmail: null,
      offerId: 'off_unknown',
      productId: 'prod_unknown',
      clientReferenceId: null,
    },
    key,
    fingerprint: 'fp',
    amount: 1200,
    currency: 'brl',
    description: 'Usage',
    lines: [],
    metadata: {},
    source: 'usage',
    billingReason: 'usage',
    createdAt: Date.now(),
    requestId: null,
    idempotencyKey: null,
  };
}

/** Provider calls a run makes in `ms` of simulated time: one round now, then one after each unknownRetryMs wait. */
function boundFor(ms: number): number {
  let rounds = 1;
  for (let waited = unknownRetryMs(1); waited <= ms; waited += unknownRetryMs(rounds)) rounds += 1;
  return (rounds + 1) * PROVIDER_TRIES_PER_ROUND;
}

/** Skips `ms` of server time; fails if the key's calls pass `bound` or the skip does not end in real time. */
async function skipWatchingCalls(ms: number, key: string, bound: number): Promise<void> {
  let skipped = false;
  const skip = env.sleep(ms).then(() => (skipped = true));
  const deadline = Date.now() + SKIP_DEADLINE_MS;
  while (!skipped) {
    expect(calls.get(key) ?? 0, 'provider calls while the outcome stays unknown').toBeLessThanOrEqual(bound);
    expect(Date.now(), 'the simulated days never passed: the provider step keeps the workflow task busy').toBeLessThan(deadline);
    await Promise.race([skip, new Promise((resolve) => setTimeout(resolve, 200))]);
  }
}

test('a charge whose outcome stays unknown asks a few times a round, rounds hours apart: bounded calls over 2 simulated days, shown unknown, then charged once', async () => {
  const key = `usage-unknown-${Date.now()}`;
  unknown.add(key);
  const handle = await env.client.workflow.start('chargeWorkflow', {
    workflowId: chargeWorkflowId(store._id, key),
    taskQueue,
    args: [usageCharge(key)],
  });
  const bound = boundFor(2 * DAY_MS);
  await skipWatchingCalls(2 * DAY_MS, key, bound);
  expect(calls.get(key)).toBeLessThanOrEqual(bound);
  expect(calls.get(key)).toBeGreaterThan(PROVIDER_TRIES_PER_ROUND);
  const shown = await waitFor(
    async () => {
      const state = await handle.query(chargeStateQuery);
      return state.problem ? state : null;
    },
    { description: 'the unknown outcome in the state query' },
  );
  expect(shown.phase).toBe('charging');
  expect(shown.problem!.message).toMatch(/unknown|socket hang up/);

  const after = await handle.query(chargeStateQuery);
  expect(after.problem!.rounds).toBeGreaterThan(1);
  expect(after.charge).toBeNull();

  // The provider answers again: the next round charges under the same key, once.
  unknown.delete(key);
  await env.sleep(unknownRetryMs(after.problem!.rounds) + 60_000);
  const charged = await waitFor(
    async () => {
      const state = await handle.query(chargeStateQuery);
      return state.charge ? state : null;
    },
    { description: 'the charge decided once the provider answers' },
  );
  expect(charged).toMatchObject({ outcome: 'approved', charge: { status: 'succeeded' } });
  expect(charged.problem ?? null).toBeNull();
  await recordHistory(env.client, handle.workflowId, 'charge-unknown-outcome-rounds');
}, 300_000);
