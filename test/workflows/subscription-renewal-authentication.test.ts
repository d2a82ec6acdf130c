// What this tests: the subscription workflow with a renewal the bank asks the buyer to confirm
// (`authentication_required` off session), on the time-skipping server with its activities running for real
// against FerretDB: the test payment connection is wrapped so that one subscription's card answers that decline
// and `closeAuthentication` answers what the test sets (the buyer confirmed, or not). The buyer's paid notice
// pays the open renewal once; a retry first closes the attempt (finding it paid, or charging anew under its
// own key). Each run's history is recorded for test/workflows/replay.test.ts.
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal as proto } from '@temporalio/proto';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testServerPath, searchAttributes } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { ensureIndexes } from '../../store/indexes';
import { createStore } from '../../store/stores';
import { createTestConnection } from '../../adapters/provider/test-connection';
import type { ChargeSavedCardInput, PaymentProvider } from '../../adapters/provider/types';
import { findSubscription, type SubscriptionDoc } from '../../store/subscriptions';
import { ordersCollection } from '../../store/orders';
import { subscriptionProviderSettledSignal, subscriptionWorkflowId } from '../../workflows/subscription/messages';
import { testMongo, uniqueTaskQueue, waitFor, type TestMongo } from '../support/env';
import { recordHistory } from '../support/histories';
import { seedCatalog, seedSubscription, type TestCatalog } from '../support/subscriptions';
import type { StoreDoc } from '../../store/collections';

const DAY_MS = 24 * 60 * 60 * 1000;

let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let worker: Worker;
let running: Promise<void>;
let store: StoreDoc;
let catalog: TestCatalog;
const taskQueue = uniqueTaskQueue('subscription-renewal-auth');

/** Cards whose unattended charges the bank wants confirmed, and what closing each asked attempt finds. */
const asksAuthentication = new Set<string>();
const confirmedByBuyer = new Set<string>();
const charged: ChargeSavedCardInput[] = [];
const closed: string[] = [];

function authenticatingProvider(base: PaymentProvider): PaymentProvider {
  return {
    ...base,
    async chargeSavedCard(input) {
      if (!asksAuthentication.has(input.paymentMethodId)) return base.chargeSavedCard(input);
      charged.push(input);
      return {
        status: 'declined',
        transactionId: `pi_auth_${input.idempotencyKey.replace(/\W/g, '_')}`,
        code: 'authentication_required',
        message: 'This transaction requires authentication.',
      };
    },
    async closeAuthentication({ transactionId }) {
      closed.push(transactionId);
      return confirmedByBuyer.has(transactionId) ? 'succeeded' : 'closed';
    },
  };
}

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: testServerPath() } },
  });
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(searchAttributes.map((name) => [name, proto.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
  });
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  store = await createStore(mongo.db, { name: 'Auth Store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  catalog = await seedCatalog(mongo.db, store._id);
  const provider = authenticatingProvider(createTestConnection({ db: mongo.db }));
  worker = await createBillingWorker({ connection: env.nativeConnection, taskQueue, db: mongo.db, temporal: env.client, activityDeps: { provider } });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await env?.teardown();
  await mongo?.close();
});

const reload = async (id: string) => (await findSubscription(mongo.db, store._id, id))!;
const until = (id: string, test: (doc: SubscriptionDoc) => boolean, description: string) =>
  waitFor(async () => ((await reload(id)) && test(await reload(id)) ? reload(id) : null), { timeoutMs: 20_000, description });
const ordersOf = (id: string) => ordersCollection(mongo.db).find({ store_id: store._id, subscription: id }).sort({ _id: 1 }).toArray();

/** A monthly subscription paid once, whose card then asks for authentication: its renewal is past_due, asked. */
async function renewalAsked(): Promise<{
  sub: SubscriptionDoc;
  asked: NonNullable<NonNullable<SubscriptionDoc['past_due_details']>['authentication']>;
}> {
  const seeded = await seedSubscription(
    { db: mongo.db, temporal: env.client, taskQueue },
    {
      store,
      offer: catalog.monthly,
      product: catalog.product,
      now: await env.currentTimeMs(),
    },
  );
  const paid = await until(seeded._id, (d) => d.cycles_completed === 1, 'first cycle paid');
  asksAuthentication.add(paid.default_payment_method!.id);
  // Just past the renewal (dunning would retry a day later).
  await env.sleep(paid.next_billing_at! * 1000 - (await env.currentTimeMs()) + 60_000);
  const pastDue = await until(seeded._id, (d) => d.status === 'past_due', 'the renewal asked for authentication');
  expect(pastDue.past_due_details).toMatchObject({ attempts: 1, failure_code: 'authentication_required' });
  const asked = pastDue.past_due_details!.authentication!;
  expect(asked).toMatchObject({ key: `renewal/${seeded._id}/2/0`, transaction_id: expect.stringMatching(/^pi_auth_/) });
  expect(await ordersCollection(mongo.db).findOne({ _id: asked.order_id })).toMatchObject({ status: 'failed' });
  return { sub: pastDue, asked };
}

describe('a renewal the bank asks the buyer to confirm', () => {
  it("the buyer's paid notice pays the open renewal once: active, the failed order paid, no retry charge", async () => {
    const { sub, asked } = await renewalAsked();
    const notice = { transactionId: asked.transaction_id, status: 'paid' as const, code: null, message: null, notifyRef: null, settledAt: 1 };
    const handle = env.client.workflow.getHandle(subscriptionWorkflowId(sub._id));
    await handle.signal(subscriptionProviderSettledSignal, notice);
    const active = await until(sub._id, (d) => d.status === 'active', 'active after the confirmation');
    expect(active).toMatchObject({ cycles_completed: 2, past_due_details: null, current_period_start: sub.next_billing_at });
    // The same notice again (the event after the page's post): nothing more.
    await handle.signal(subscriptionProviderSettledSignal, notice);
    const chargesBefore = charged.length;
    await env.sleep(6 * DAY_MS);
    expect(await reload(sub._id)).toMatchObject({ status: 'active', cycles_completed: 2 });
    expect((await ordersOf(sub._id)).map((o) => o.status)).toEqual(['paid', 'paid']);
    expect(charged.length).toBe(chargesBefore);
    await recordHistory(env.client, subscriptionWorkflowId(sub._id), 'subscription-renewal-authentication-confirmed');
  });

  it('a retry finds the attempt confirmed (its notice lost): the cycle is paid by it and nothing is charged again', async () => {
    const { sub, asked } = await renewalAsked();
    confirmedByBuyer.add(asked.transaction_id);
    const chargesBefore = charged.length;
    await env.sleep(DAY_MS + 60_000);
    const active = await until(sub._id, (d) => d.status === 'active', 'active after the retry');
    expect(active.cycles_completed).toBe(2);
    expect(closed).toContain(asked.transaction_id);
    expect(charged.length).toBe(chargesBefore);
    expect(await ordersCollection(mongo.db).findOne({ _id: asked.order_id })).toMatchObject({ status: 'paid' });
    await recordHistory(env.client, subscriptionWorkflowId(sub._id), 'subscription-renewal-authentication-retry-found-paid');
  });

  it('a retry before any confirmation closes the attempt and charges under its own key, asking again', async () => {
    const { sub, asked } = await renewalAsked();
    await env.sleep(DAY_MS + 60_000);
    const retried = await until(sub._id, (d) => d.past_due_details?.attempts === 2, 'the retry asked again');
    expect(closed).toContain(asked.transaction_id);
    expect(charged.at(-1)!.idempotencyKey).toBe(`renewal/${sub._id}/2/1`);
    expect(retried.past_due_details!.authentication).toMatchObject({ key: `renewal/${sub._id}/2/1` });
    expect((await ordersOf(sub._id)).map((o) => o.status)).toEqual(['paid', 'failed', 'failed']);
  });
});
