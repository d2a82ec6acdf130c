// What this tests: a subscription charge whose outcome stays unknown (the charge request lost, and every
// lookup by key incomplete, as when Stripe's search is unavailable on a busy account), on the time-skipping
// server with FerretDB and the test connection behind a wrapper that fails both and counts the calls. Runs
// before the bound retried the local step every 30 s without end (about 2,900 provider calls a day, and a
// history growing until Temporal ended the run); now a round of PROVIDER_TRIES_PER_ROUND tries is followed by
// a timer (5 minutes doubling, at most 6 hours), the state query shows the unknown outcome, nothing is taken
// as "nothing charged", and the charge completes once the provider answers. Recorded as
// charge-unknown-outcome-rounds (replayed by replay.test.ts).
import type { WorkflowHandle } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { testServerPath } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { ensureIndexes } from '../../store/indexes';
import { insertCustomer, newCustomerDoc } from '../../store/customers';
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
let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let worker: Worker;
let running: Promise<void>;
let store: StoreDoc;
let customerId: string;
let cardId: string;
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
  const customer = newCustomerDoc(store._id, { email: 'unknown@example.com', name: 'Unknown Buyer' }, {});
  await insertCustomer(mongo.db, customer);
  customerId = customer._id;
  const saved = await createTestConnection({ db: mongo.db }).saveCard({ storeId: store._id, customerId, card: { number: '4242424242424242' } });
  if (!saved.ok) throw new Error(saved.message);
  cardId = saved.card.paymentMethodId;
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
    customerId,
    subscription: {
      paymentMethodId: cardId,
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

/** The charge's state once round `n` ended unknown (its tries done, the workflow on its timer). */
function roundShown(handle: WorkflowHandle, n: number) {
  return waitFor(
    async () => {
      const state = await handle.query(chargeStateQuery);
      return (state.problem?.rounds ?? 0) >= n ? state : null;
    },
    { timeoutMs: 30_000, description: `round ${n} of the unknown outcome in the state query` },
  );
}

test('a charge whose outcome stays unknown asks a few times a round, rounds hours apart: bounded calls over 2 simulated days, shown unknown, then charged once', async () => {
  const key = `usage-unknown-${Date.now()}`;
  unknown.add(key);
  const handle = await env.client.workflow.start('chargeWorkflow', {
    workflowId: chargeWorkflowId(store._id, key),
    taskQueue,
    args: [usageCharge(key)],
  });
  // Round by round over 2 simulated days: each round's tries, then nothing until its timer fires.
  let simulatedMs = 0;
  let rounds = 0;
  while (simulatedMs < 2 * DAY_MS) {
    rounds += 1;
    const state = await roundShown(handle, rounds);
    expect(state).toMatchObject({ phase: 'charging', charge: null, problem: { rounds } });
    expect(state.problem!.message).toMatch(/unknown|socket hang up/);
    expect(calls.get(key), `provider calls after round ${rounds}`).toBe(rounds * PROVIDER_TRIES_PER_ROUND);
    await env.sleep(unknownRetryMs(rounds));
    simulatedMs += unknownRetryMs(rounds);
  }
  // 2 days: rounds 5 minutes apart, doubling to 6 hours (14 rounds), where the old 30 s retries made about 5,760 calls.
  expect(rounds).toBeLessThanOrEqual(16);
  const after = await roundShown(handle, rounds + 1);

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
