// Subscriptions: persistence. The subscription workflow is the only writer of
// the lifecycle fields, through conditional single-document updates on `version` (so a retried
// write is recognised as already applied); the API writes only client_reference_id and metadata.
import { insertOnce } from './insert-once';
import { definedFields, findPage, NEWEST_FIRST, type PageResult, type PageWindow } from './pagination';
import type { Db } from 'mongodb';
import type { StoredMetadata } from '../domain/metadata';
import type { SubscriptionLife, SubscriptionStatus } from '../domain/subscriptions';

export interface SubscriptionHistoryEntry {
  at: number;
  action: string;
  /** The pause reason (up to 200 characters) or the cancellation reason. */
  reason: string | null;
}

export interface SubscriptionDoc extends SubscriptionLife {
  _id: string;
  store_id: string;
  customer: string | null;
  customer_email: string | null;
  installments: number | null;
  checkout_session: string | null;
  client_reference_id: string | null;
  metadata: StoredMetadata;
  livemode: boolean;
  /** The customer's test clock, whose time the subscription follows (absent on older documents: none). */
  test_clock?: string | null;
  created: number;
  /** Bumped by every lifecycle write (compare-and-set). */
  version: number;
  history: SubscriptionHistoryEntry[];
}

export function subscriptionsCollection(db: Db) {
  return db.collection<SubscriptionDoc>('subscriptions');
}

export async function findSubscription(db: Db, storeId: string, id: string): Promise<SubscriptionDoc | null> {
  return subscriptionsCollection(db).findOne({ _id: id, store_id: storeId });
}

/** Inserts the subscription; a second insert under the same id returns the one stored first. */
/** A page of the store's subscriptions, newest first, of a customer or in a status when asked. */
export function listSubscriptions(
  db: Db,
  storeId: string,
  filter: { customer?: string; status?: string },
  window: PageWindow,
): Promise<PageResult<SubscriptionDoc>> {
  const conditions = definedFields({ customer: filter.customer, status: filter.status });
  return findPage(subscriptionsCollection(db), { storeId, filter: conditions, order: NEWEST_FIRST, ...window });
}

export async function insertSubscriptionOnce(db: Db, doc: SubscriptionDoc): Promise<SubscriptionDoc> {
  return insertOnce(subscriptionsCollection(db), doc, () => findSubscription(db, doc.store_id, doc._id));
}

export class SubscriptionVersionConflict extends Error {
  constructor(id: string, expected: number, found: number | null) {
    super(`subscription ${id}: expected version ${expected}, found ${found ?? 'no document'}`);
    this.name = 'SubscriptionVersionConflict';
  }
}

/**
 * Writes lifecycle fields if the document is still at `expectedVersion`. A retry of a write that
 * already went through finds version expectedVersion + 1 and returns the document as it is.
 */
export async function writeSubscriptionLife(
  db: Db,
  input: { storeId: string; id: string; expectedVersion: number; set: Partial<SubscriptionLife>; history?: SubscriptionHistoryEntry | null },
): Promise<SubscriptionDoc> {
  const collection = subscriptionsCollection(db);
  const update: Record<string, unknown> = { $set: input.set, $inc: { version: 1 } };
  if (input.history) update.$push = { history: input.history };
  const updated = await collection.findOneAndUpdate({ _id: input.id, store_id: input.storeId, version: input.expectedVersion }, update, {
    returnDocument: 'after',
  });
  if (updated) return updated;
  const current = await findSubscription(db, input.storeId, input.id);
  if (current && current.version === input.expectedVersion + 1) return current;
  throw new SubscriptionVersionConflict(input.id, input.expectedVersion, current?.version ?? null);
}

/** client_reference_id and metadata: not lifecycle, so no version and no workflow round trip. */
export async function updateSubscriptionReference(
  db: Db,
  storeId: string,
  id: string,
  set: { client_reference_id?: string | null; metadata?: StoredMetadata },
): Promise<SubscriptionDoc | null> {
  if (Object.keys(set).length === 0) return findSubscription(db, storeId, id);
  return subscriptionsCollection(db).findOneAndUpdate({ _id: id, store_id: storeId }, { $set: set }, { returnDocument: 'after' });
}

export type { SubscriptionStatus };

/** A customer's latest subscriptions, newest first (the portal). */
export function subscriptionsOfCustomer(db: Db, storeId: string, customerId: string, limit = 50): Promise<SubscriptionDoc[]> {
  return subscriptionsCollection(db).find({ store_id: storeId, customer: customerId }).sort({ created: -1, _id: -1 }).limit(limit).toArray();
}

/** The subscription a recurring checkout session became. */
export function findSubscriptionOfCheckout(db: Db, storeId: string, sessionId: string): Promise<SubscriptionDoc | null> {
  return subscriptionsCollection(db).findOne({ store_id: storeId, checkout_session: sessionId });
}

/** Subscriptions of every store with ids after `afterId` (all when null), oldest first: the usage routine's walk. */
export function subscriptionsAfter(db: Db, afterId: string | null): Promise<SubscriptionDoc[]> {
  return subscriptionsCollection(db)
    .find(afterId !== null ? { _id: { $gt: afterId } } : {})
    .sort({ _id: 1 })
    .toArray();
}

/** A test clock's subscriptions in `statuses` (the store/test_clock index). */
const onClockIn = (storeId: string, clockId: string, statuses: SubscriptionStatus[]) => ({
  store_id: storeId,
  test_clock: clockId,
  status: { $in: statuses },
});

/** The billing cycles of a test clock's subscriptions in `statuses` (what bounds an advance). */
export function clockSubscriptionCycles(
  db: Db,
  storeId: string,
  clockId: string,
  statuses: SubscriptionStatus[],
): Promise<Pick<SubscriptionDoc, '_id' | 'billing_cycle' | 'custom_billing_days'>[]> {
  return subscriptionsCollection(db)
    .find(onClockIn(storeId, clockId, statuses), { projection: { billing_cycle: 1, custom_billing_days: 1 } })
    .toArray();
}

/** The ids of a test clock's subscriptions in `statuses`, at most `limit` (those an advance waits to have joined it). */
export async function clockSubscriptionIds(
  db: Db,
  storeId: string,
  clockId: string,
  statuses: SubscriptionStatus[],
  limit: number,
): Promise<string[]> {
  const docs = await subscriptionsCollection(db)
    .find(onClockIn(storeId, clockId, statuses), { projection: { _id: 1 } })
    .sort({ _id: 1 })
    .limit(limit)
    .toArray();
  return docs.map((doc) => doc._id);
}
