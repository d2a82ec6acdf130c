// Subscription charges: one document per (store, Idempotency-Key), made permanent by a unique index
// so a key keeps answering with its charge long after Temporal has forgotten the workflow run.
import type { Db } from 'mongodb';
import type { StoredMetadata } from '../domain/metadata';
import type { ChargeLine } from '../domain/charges';
import { isDuplicateKeyError } from './collections';

export type ChargeStatus = 'pending' | 'succeeded' | 'failed';
export type ChargeSource = 'api' | 'dashboard' | 'usage';
/** How the provider answered: decides the HTTP answer of the charge call and of every replay. */
export type ChargeOutcomeKind = 'approved' | 'review' | 'declined' | 'refused';

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
}

export function chargesCollection(db: Db) {
  return db.collection<SubscriptionChargeDoc>('subscription_charges');
}

export async function findCharge(db: Db, storeId: string, id: string): Promise<SubscriptionChargeDoc | null> {
  return chargesCollection(db).findOne({ _id: id, store_id: storeId });
}

export async function findChargeByKey(db: Db, storeId: string, key: string): Promise<SubscriptionChargeDoc | null> {
  return chargesCollection(db).findOne({ store_id: storeId, key });
}

/** Inserts the charge once; a retry (or a second writer under the key) gets the stored one. */
export async function insertChargeOnce(db: Db, doc: SubscriptionChargeDoc): Promise<SubscriptionChargeDoc> {
  try {
    await chargesCollection(db).insertOne(doc);
    return doc;
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
    const existing = await findChargeByKey(db, doc.store_id, doc.key);
    if (!existing) throw error;
    return existing;
  }
}

/** pending -> succeeded or failed, once (compare-and-set on status). */
export async function settleChargeDoc(
  db: Db,
  storeId: string,
  id: string,
  set: { status: 'succeeded' | 'failed'; failure_code: string | null; failure_message: string | null; settled_at: number },
): Promise<SubscriptionChargeDoc | null> {
  const updated = await chargesCollection(db).findOneAndUpdate({ _id: id, store_id: storeId, status: 'pending' }, { $set: set }, { returnDocument: 'after' });
  return updated ?? findCharge(db, storeId, id);
}
