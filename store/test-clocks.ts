// Test clocks (the /v1/test_helpers extension): persistence. `frozen_time` is the time the merchant asked
// for (the target while advancing); `now_ms` is where the attached objects are: the clock workflow moves it
// step by step while advancing, and services read it as "now" for the clock's customers.
import type { Db } from 'mongodb';
import { notFound } from '../domain/errors';
import { newId } from '../domain/ids';
import { checkoutSessionsCollection } from './checkout-sessions';
import { collections, type CustomerDoc } from './collections';
import { deleteEmailClaims } from './customers';
import { findOwnedById } from './owned';
import { findPage, NEWEST_FIRST, type PageResult, type PageWindow } from './pagination';
import { subscriptionsCollection } from './subscriptions';
import { deleteUsageCustomers, usageItemsCollection, usageStatesCollection } from './usage';

export type TestClockStatus = 'ready' | 'advancing';

export interface TestClockDoc {
  _id: string;
  store_id: string;
  name: string | null;
  /** Unix seconds. */
  frozen_time: number;
  /** Milliseconds: the attached objects' "now" (equals frozen_time * 1000 once ready). */
  now_ms: number;
  status: TestClockStatus;
  created: number;
  /** Objects attached so far (bounded per clock: reserveClockSlot); absent on clocks made before the caps, read as 0. */
  customers?: number;
  checkout_sessions?: number;
}

export type ClockSlot = 'customers' | 'checkout_sessions';

export function testClocksCollection(db: Db) {
  return db.collection<TestClockDoc>('test_clocks');
}

export async function insertTestClock(db: Db, doc: TestClockDoc): Promise<void> {
  await testClocksCollection(db).insertOne(doc);
}

export function findTestClock(db: Db, storeId: string, id: string): Promise<TestClockDoc | null> {
  return findOwnedById(testClocksCollection(db), storeId, id);
}

/** The store's clock, or 404 resource_missing naming `param`. */
/** A page of the store's test clocks, newest first. */
export function listTestClocks(db: Db, storeId: string, window: PageWindow): Promise<PageResult<TestClockDoc>> {
  return findPage(testClocksCollection(db), { storeId, filter: {}, order: NEWEST_FIRST, ...window });
}

export async function requireTestClock(db: Db, storeId: string, id: string, param = 'id'): Promise<TestClockDoc> {
  const doc = await findTestClock(db, storeId, id);
  if (!doc) throw notFound('test clock', id, param);
  return doc;
}

/** How many clocks the store has (its cap is checked after the insert, so racing creates never pass it). */
export function countTestClocks(db: Db, storeId: string): Promise<number> {
  return testClocksCollection(db).countDocuments({ store_id: storeId });
}

export async function deleteTestClockDoc(db: Db, storeId: string, id: string): Promise<void> {
  await testClocksCollection(db).deleteOne({ _id: id, store_id: storeId });
}

/** Takes one of the clock's `cap` slots of `slot` (one conditional $inc, so racing takers never pass it); false when full. */
export async function reserveClockSlot(db: Db, storeId: string, id: string, slot: ClockSlot, cap: number): Promise<boolean> {
  const room = { $or: [{ [slot]: { $exists: false } }, { [slot]: { $lt: cap } }] };
  const result = await testClocksCollection(db).updateOne({ _id: id, store_id: storeId, ...room }, { $inc: { [slot]: 1 } });
  return result.modifiedCount === 1;
}

/** Gives a slot back (the object it was taken for was not created after all). */
export async function releaseClockSlot(db: Db, storeId: string, id: string, slot: ClockSlot): Promise<void> {
  await testClocksCollection(db).updateOne({ _id: id, store_id: storeId }, { $inc: { [slot]: -1 } });
}

/** "Now" for an object on this clock (milliseconds): the clock's time, or the real time without a clock. */
export async function clockNowMs(db: Db, storeId: string, clockId: string | null | undefined): Promise<number> {
  if (!clockId) return Date.now();
  const clock = await findTestClock(db, storeId, clockId);
  return clock ? clock.now_ms : Date.now();
}

/**
 * Marks a ready clock advancing to `frozenTime`; null when it is not ready at `from` (another advance
 * won the race): one conditional update, so two advances never both start.
 */
export function startAdvance(db: Db, storeId: string, id: string, from: number, frozenTime: number): Promise<TestClockDoc | null> {
  return testClocksCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId, status: 'ready', frozen_time: from },
    { $set: { status: 'advancing', frozen_time: frozenTime } },
    { returnDocument: 'after' },
  );
}

/** The clock workflow moved its attached objects to `nowMs`. */
export async function recordClockTime(db: Db, storeId: string, id: string, nowMs: number): Promise<void> {
  await testClocksCollection(db).updateOne({ _id: id, store_id: storeId }, { $set: { now_ms: nowMs } });
}

/**
 * Everything attached has settled at `nowMs`: ready again, standing there (also after an advance
 * signalled from the Temporal CLI, which the API did not record); the document as it now is (null once deleted).
 */
export function recordClockReady(db: Db, storeId: string, id: string, nowMs: number): Promise<TestClockDoc | null> {
  return testClocksCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId },
    { $set: { now_ms: nowMs, frozen_time: Math.floor(nowMs / 1000), status: 'ready' } },
    { returnDocument: 'after' },
  );
}

/** A new clock standing at `frozenTime` (Unix seconds). */
export function newTestClockDoc(storeId: string, frozenTime: number, name: string | null, nowMs = Date.now()): TestClockDoc {
  return {
    _id: newId('clock', nowMs),
    store_id: storeId,
    name,
    frozen_time: frozenTime,
    now_ms: frozenTime * 1000,
    status: 'ready',
    created: Math.floor(nowMs / 1000),
    customers: 0,
    checkout_sessions: 0,
  };
}

/** The clock's customers and their subscriptions (ids): what a deleted clock takes with it. */
export async function clockObjects(
  db: Db,
  storeId: string,
  clockId: string,
): Promise<{ customers: CustomerDoc[]; subscriptions: string[]; sessions: string[] }> {
  const filter = { store_id: storeId, test_clock: clockId };
  const [customers, subscriptions, sessions] = await Promise.all([
    collections(db).customers.find(filter).toArray(),
    subscriptionsCollection(db)
      .find(filter, { projection: { _id: 1 } })
      .toArray(),
    checkoutSessionsCollection(db)
      .find(filter, { projection: { _id: 1 } })
      .toArray(),
  ]);
  return { customers, subscriptions: subscriptions.map((s) => s._id), sessions: sessions.map((s) => s._id) };
}

/**
 * Deletes what lives on the clock: customers (with their email claims), subscriptions and their usage
 * configuration, checkout sessions, then the clock. Orders, charges, usage periods, events and meter
 * events stay: they are the store's record of what was charged.
 */
export async function deleteClockObjects(db: Db, storeId: string, clockId: string, objects: Awaited<ReturnType<typeof clockObjects>>): Promise<void> {
  const customerIds = objects.customers.map((c) => c._id);
  await Promise.all([
    usageItemsCollection(db).deleteMany({ store_id: storeId, subscription: { $in: objects.subscriptions } }),
    usageStatesCollection(db).deleteMany({ store_id: storeId, _id: { $in: objects.subscriptions } }),
    subscriptionsCollection(db).deleteMany({ store_id: storeId, test_clock: clockId }),
    checkoutSessionsCollection(db).deleteMany({ store_id: storeId, test_clock: clockId }),
  ]);
  await Promise.all([deleteUsageCustomers(db, storeId, customerIds), deleteEmailClaims(db, objects.customers)]);
  await collections(db).customers.deleteMany({ store_id: storeId, test_clock: clockId });
  await testClocksCollection(db).deleteOne({ _id: clockId, store_id: storeId });
}

/**
 * The clock's open checkout sessions by deadline (ids and expires_at, the earliest `limit`): the advance
 * expires those it passed and stops at the next deadline (sessions are not the clock's waiters).
 */
export function openClockSessionDeadlines(db: Db, storeId: string, clockId: string, limit: number): Promise<{ _id: string; expires_at: number }[]> {
  return checkoutSessionsCollection(db)
    .find({ store_id: storeId, test_clock: clockId, status: 'open' }, { projection: { _id: 1, expires_at: 1 } })
    .sort({ expires_at: 1, _id: 1 })
    .limit(limit)
    .toArray();
}
