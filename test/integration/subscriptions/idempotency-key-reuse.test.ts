// What this tests: an Idempotency-Key reused after its 24-hour record is a new request for the subscription
// actions. A pause with key K, a resume, then a pause with K past K's record pauses again (Temporal keeps
// update ids for the whole run, so ids derived from K must be unique to K's record); a reactivation with a
// reused key charges the card anew under a key of the subscription's state, never replaying the first
// approval into a second paid order without money moved.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSubscriptionStack, type SubscriptionStack } from '../../support/subscription-stack';
import { collections } from '../../../store/collections';
import { ordersCollection } from '../../../store/orders';
import { findSubscription, type SubscriptionDoc } from '../../../store/subscriptions';
import { TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import { IDEMPOTENCY_TTL_MS } from '../../../store/idempotency';
import { waitFor, type TestMongo, type TestTemporal } from '../../support/env';
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
  stack = await startSubscriptionStack('idempotency-key-reuse');
  ({ mongo, temporal, api, store, catalog, taskQueue } = stack);
});

afterAll(async () => {
  await stack?.close();
});

/** A monthly subscription whose first cycle the workflow has charged: active. */
async function activeSubscription(): Promise<SubscriptionDoc> {
  const sub = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: catalog.monthly, product: catalog.product },
  );
  return waitFor(
    async () => {
      const doc = await findSubscription(mongo.db, store.store._id, sub._id);
      return doc?.status === 'active' && doc.cycles_completed === 1 ? doc : null;
    },
    { timeoutMs: 30_000, description: 'the first cycle paid' },
  );
}

const act = (sub: { _id: string }, method: 'POST' | 'DELETE', path: string, key: string) =>
  call(api, store.key, method, `/v1/subscriptions/${sub._id}${path}`, {
    json: method === 'POST' ? {} : undefined,
    headers: { 'idempotency-key': key },
  });

/** What 24 hours do to a key's record: it is past its term (the TTL index would delete it). */
async function ageKeyPastItsRecord(key: string): Promise<void> {
  const past = Date.now() - IDEMPOTENCY_TTL_MS - 60_000;
  const aged = await collections(mongo.db).idempotency.updateOne(
    { _id: `${store.store._id}:${key}` },
    { $set: { created: past, expires_at: new Date(past + IDEMPOTENCY_TTL_MS) } },
  );
  expect(aged.matchedCount).toBe(1);
}

const statusOf = async (sub: { _id: string }) => (await findSubscription(mongo.db, store.store._id, sub._id))?.status;

it('pause with K, resume, then pause with K past its 24-hour record: the subscription is paused again', async () => {
  const sub = await activeSubscription();
  const key = `pause-${Date.now()}`;
  expect((await act(sub, 'POST', '/pause', key)).body.status).toBe('paused');
  expect((await act(sub, 'POST', '/resume', `${key}-resume`)).body.status).toBe('active');

  // Within its record the key replays; past it, the same key is a new pause.
  const replay = await act(sub, 'POST', '/pause', key);
  expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
  expect(await statusOf(sub)).toBe('active');
  await ageKeyPastItsRecord(key);
  const again = await act(sub, 'POST', '/pause', key);
  expect([again.status, again.headers.get('idempotent-replayed'), again.body.status]).toEqual([200, null, 'paused']);
  expect(await statusOf(sub)).toBe('paused');
}, 60_000);

it('a reactivation key reused past its record charges the card again: every paid order has its own capture', async () => {
  const sub = await activeSubscription();
  const key = `reactivate-${Date.now()}`;
  expect((await act(sub, 'DELETE', '', `${key}-cancel-1`)).body.status).toBe('canceled');
  const first = await act(sub, 'POST', '/reactivate', key);
  expect([first.status, first.body.status]).toEqual([200, 'active']);
  expect((await act(sub, 'DELETE', '', `${key}-cancel-2`)).body.status).toBe('canceled');

  await ageKeyPastItsRecord(key);
  const second = await act(sub, 'POST', '/reactivate', key);
  expect([second.status, second.headers.get('idempotent-replayed'), second.body.status]).toEqual([200, null, 'active']);
  expect(await statusOf(sub)).toBe('active');

  // First cycle plus two reactivations: three paid orders, each on a capture of its own at the provider.
  const paid = await ordersCollection(mongo.db).find({ store_id: store.store._id, subscription: sub._id, status: 'paid' }).toArray();
  expect(paid).toHaveLength(3);
  const transactions = paid.map((order) => order.provider_transaction_id);
  expect(new Set(transactions).size).toBe(3);
  const captures = await mongo.db
    .collection(TEST_CHARGES_COLLECTION)
    .find({ store_id: store.store._id, transaction_id: { $in: transactions } })
    .toArray();
  expect(captures.map((capture) => capture.state).sort()).toEqual(['approved', 'approved', 'approved']);
  const reactivationKeys = captures.map((capture) => capture.key as string).filter((k) => k.startsWith('reactivation/'));
  expect(new Set(reactivationKeys).size).toBe(2);
}, 90_000);
