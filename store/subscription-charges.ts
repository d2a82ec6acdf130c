// Subscription charges: one document per (store, Idempotency-Key), made permanent by a unique index
// so a key keeps answering with its charge long after Temporal has forgotten the workflow run.
import type { Db } from 'mongodb';
import type { StoredMetadata } from '../domain/metadata';
import type { ChargeLine } from '../domain/charges';
import { insertOnce } from './insert-once';
import { definedFields, findPage, NEWEST_FIRST, type PageResult, type PageWindow } from './pagination';

export type ChargeStatus = 'pending' | 'succeeded' | 'failed';
export type ChargeSource = 'api' | 'dashboard' | 'usage';
/**
 * How the provider answered: decides the HTTP answer of the charge call and of every replay. `undecided`:
 * not yet, and a request was answered before it did (201 pending), so the charge is shown while it runs.
 */
export type ChargeOutcomeKind = 'approved' | 'review' | 'declined' | 'refused' | 'undecided';

export interface SubscriptionChargeDoc {
  _id: string;
  store_id: string;
  /** The Idempotency-Key (or `usage:<period id>` for usage charges). */
  key: string;
  /** Hash of method, path and body of the request that created it: a different request under the key is refused. */
  fingerprint: string;
  status: ChargeStatus;
  outcome: ChargeOutcomeKind;
  subscription: string;
  customer: string | null;
  amount: number;
  currency: string;
  description: string | null;
  lines: ChargeLine[];
  order: string | null;
  transaction: string | null;
  failure_code: string | null;
  failure_message: string | null;
  source: ChargeSource;
  billing_reason: string;
  metadata: StoredMetadata;
  livemode: boolean;
  created: number;
  settled_at: number | null;
  /** Request-Id of the request that created it (Original-Request-Id on replays). */
  request_id: string | null;
  idempotency_key: string | null;
  /** A request was answered before the provider decided (201 pending): replays answer 200 with the charge as it is now. */
  answered_undecided?: boolean;
}

export function chargesCollection(db: Db) {
  return db.collection<SubscriptionChargeDoc>('subscription_charges');
}

export async function findCharge(db: Db, storeId: string, id: string): Promise<SubscriptionChargeDoc | null> {
  return chargesCollection(db).findOne({ _id: id, store_id: storeId });
}

/** A page of a subscription's charges, newest first, in one status when asked. */
export function listSubscriptionCharges(
  db: Db,
  storeId: string,
  subscriptionId: string,
  filter: { status?: ChargeStatus },
  window: PageWindow,
): Promise<PageResult<SubscriptionChargeDoc>> {
  const conditions = { subscription: subscriptionId, ...definedFields({ status: filter.status }) };
  return findPage(chargesCollection(db), { storeId, filter: conditions, order: NEWEST_FIRST, ...window });
}

export async function findChargeByKey(db: Db, storeId: string, key: string): Promise<SubscriptionChargeDoc | null> {
  return chargesCollection(db).findOne({ store_id: storeId, key });
}

/** Inserts the charge once; a retry (or a second writer under the key) gets the stored one. */
export async function insertChargeOnce(db: Db, doc: SubscriptionChargeDoc): Promise<SubscriptionChargeDoc> {
  return insertOnce(chargesCollection(db), doc, () => findChargeByKey(db, doc.store_id, doc.key));
}

/** What the provider's decision sets on a charge shown undecided; the rest was written from the same input. */
const DECIDED_FIELDS = ['status', 'outcome', 'order', 'transaction', 'failure_code', 'failure_message', 'settled_at'] as const;

/**
 * Writes the provider's decision once: inserted, or set on the charge shown undecided (compare-and-set on
 * `outcome`), whichever was first; a retry, or a decision already written, gets the stored charge.
 */
export async function decideChargeOnce(db: Db, doc: SubscriptionChargeDoc): Promise<SubscriptionChargeDoc> {
  const stored = await insertChargeOnce(db, doc);
  if (stored.outcome !== 'undecided' || doc.outcome === 'undecided') return stored;
  const set = Object.fromEntries(DECIDED_FIELDS.map((field) => [field, doc[field]]));
  const decided = await chargesCollection(db).findOneAndUpdate(
    { _id: stored._id, store_id: doc.store_id, outcome: 'undecided' },
    { $set: set },
    { returnDocument: 'after' },
  );
  return decided ?? (await findChargeByKey(db, doc.store_id, doc.key))!;
}

/** pending -> succeeded or failed, once (compare-and-set on status); the charge as it now is. */
export async function settleCharge(
  db: Db,
  storeId: string,
  id: string,
  set: { status: 'succeeded' | 'failed'; failure_code: string | null; failure_message: string | null; settled_at: number },
): Promise<SubscriptionChargeDoc | null> {
  const updated = await chargesCollection(db).findOneAndUpdate(
    { _id: id, store_id: storeId, status: 'pending' },
    { $set: set },
    { returnDocument: 'after' },
  );
  return updated ?? findCharge(db, storeId, id);
}

/** A charge by its id alone, whichever store it is in (the operator CLI names only the sch_ id). */
export async function findChargeById(db: Db, id: string): Promise<SubscriptionChargeDoc | null> {
  return chargesCollection(db).findOne({ _id: id });
}
