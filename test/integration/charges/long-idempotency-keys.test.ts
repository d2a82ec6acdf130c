// What this tests: every Idempotency-Key the spec allows (up to 255 characters) works on a Temporal with
// production's limits, which the test dev server enforces (limit.maxIDLength 255): a charge with a
// 255-character key is made once and replayed, its workflow id, update ids and provider key stay within 255
// with the full key kept on the charge and the workflow's details; a subscription action takes such a key too.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSubscriptionStack, type SubscriptionStack } from '../../support/subscription-stack';
import { chargesCollection } from '../../../store/subscription-charges';
import { TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import { chargeWorkflowId } from '../../../workflows/charge/messages';
import { merchantChargeKey } from '../../../domain/charges';
import { uniqueTaskQueue, waitFor, type TestMongo, type TestTemporal } from '../../support/env';
import { call, type TestApi, type TestStore } from '../../support/api';
import { seedSubscription, type TestCatalog } from '../../support/subscriptions';

let mongo: TestMongo;
let temporal: TestTemporal;
let stack: SubscriptionStack;
let api: TestApi;
let store: TestStore;
let catalog: TestCatalog;
let taskQueue: string;

beforeAll(async () => {
  stack = await startSubscriptionStack('long-idempotency-keys');
  ({ mongo, temporal, api, store, catalog, taskQueue } = stack);
});

afterAll(async () => {
  await stack?.close();
});

/** A key of exactly 255 characters, unique to this run. */
const longKey = (label: string) => `${label}-${Date.now()}-`.padEnd(255, 'k');

it('the test Temporal refuses ids over 255 characters, as production does', async () => {
  const start = temporal.client.workflow.start('chargeWorkflow', {
    workflowId: 'x'.repeat(256),
    taskQueue: uniqueTaskQueue('never-polled'),
    args: [],
  });
  await expect(start).rejects.toThrow();
});

it('a charge with a 255-character Idempotency-Key is charged once and replayed', async () => {
  const sub = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: catalog.trial, product: catalog.product },
  );
  const key = longKey('charge');
  expect(key).toHaveLength(255);
  const charge = () =>
    call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, { json: { amount: 2500 }, headers: { 'idempotency-key': key } });

  const first = await charge();
  expect([first.status, first.body.status]).toEqual([201, 'succeeded']);
  const replay = await charge();
  expect([replay.status, replay.headers.get('idempotent-replayed'), replay.body.id]).toEqual([200, 'true', first.body.id]);

  const chargeKey = merchantChargeKey(key);
  const workflowId = chargeWorkflowId(store.store._id, chargeKey);
  expect(workflowId.length).toBeLessThanOrEqual(255);
  const described = await temporal.client.workflow.getHandle(workflowId).describe();
  expect(await described.staticDetails()).toContain(key);
  const stored = await chargesCollection(mongo.db).find({ store_id: store.store._id, key: chargeKey }).toArray();
  expect(stored.map((doc) => [doc._id, doc.idempotency_key])).toEqual([[first.body.id, key]]);
  const captures = await mongo.db.collection(TEST_CHARGES_COLLECTION).find({ store_id: store.store._id, key: chargeKey }).toArray();
  expect(captures).toHaveLength(1);
  expect(chargeKey.length).toBeLessThanOrEqual(255);
}, 60_000);

it('two 255-character keys sharing their first 250 characters are two charges', async () => {
  const sub = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: catalog.trial, product: catalog.product },
  );
  const shared = longKey('twins').slice(0, 250);
  const [a, b] = [`${shared}aaaaa`, `${shared}bbbbb`];
  const charge = (key: string) =>
    call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, { json: { amount: 1500 }, headers: { 'idempotency-key': key } });
  const [first, second] = [await charge(a), await charge(b)];
  expect([first.status, second.status]).toEqual([201, 201]);
  expect(first.body.id).not.toBe(second.body.id);
}, 60_000);

it('a subscription action with a 255-character Idempotency-Key runs (its update id stays within 255)', async () => {
  const sub = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: catalog.trial, product: catalog.product },
  );
  await waitFor(async () => (await temporal.client.workflow.getHandle(`subscription/${sub._id}`).describe()).status.name === 'RUNNING', {
    description: 'the subscription workflow',
  });
  const key = longKey('schedule_cancellation');
  const res = await call(api, store.key, 'POST', `/v1/subscriptions/${sub._id}`, {
    json: { cancel_at_period_end: true },
    headers: { 'idempotency-key': key },
  });
  expect([res.status, res.body.cancel_at_period_end]).toEqual([200, true]);
}, 60_000);
