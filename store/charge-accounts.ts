// The provider account each charge key's money was made under, pinned before the key's first request
// reaches the provider (first writer wins: an upsert on the unique key {store_id, charge_key}, which is the
// document's _id, so the pin before every charge is one _id upsert): every later request
// under the key (lookups, cancel, refund) goes to the same account, and the provider's events about it
// are believed only from that account, whatever the store's setting is by then. Kept for good, as charge
// keys are (one small document per charge).
import type { Db } from 'mongodb';
import { retryOnDuplicateKey } from './insert-once';

export interface ChargeAccountDoc {
  /** `<store_id>:<charge_key>` (store ids have no colon): the unique key. */
  _id: string;
  store_id: string;
  charge_key: string;
  /** The provider's account the key's requests go to (Stripe: acct_…), null for the platform account. */
  account: string | null;
  /** When the pin was written: no request under the key reached the provider before it. */
  pinned_at: Date;
}

/** The account a key is pinned to, and since when. */
export interface ChargeAccountPin {
  account: string | null;
  pinnedAt: Date;
}

function chargeAccountsCollection(db: Db) {
  return db.collection<ChargeAccountDoc>('charge_accounts');
}

const idOf = (storeId: string, chargeKey: string) => `${storeId}:${chargeKey}`;

const pinOf = (doc: ChargeAccountDoc): ChargeAccountPin => ({ account: doc.account, pinnedAt: doc.pinned_at });

/** Pins `account` for the key unless one is pinned already; returns the pin that holds (the first writer's). */
export async function pinChargeAccount(db: Db, storeId: string, chargeKey: string, account: string | null): Promise<ChargeAccountPin> {
  const pin = () =>
    chargeAccountsCollection(db).findOneAndUpdate(
      { _id: idOf(storeId, chargeKey) },
      { $setOnInsert: { store_id: storeId, charge_key: chargeKey, account, pinned_at: new Date() } },
      { upsert: true, returnDocument: 'after' },
    );
  return pinOf((await retryOnDuplicateKey(pin))!);
}

/** The key's pin, or null when no request under it was made since pins exist. */
export async function findChargeAccount(db: Db, storeId: string, chargeKey: string): Promise<ChargeAccountPin | null> {
  const doc = await chargeAccountsCollection(db).findOne({ _id: idOf(storeId, chargeKey) });
  return doc ? pinOf(doc) : null;
}

/** The port a payment connection takes (adapters/provider: ChargeAccountPins), over this collection. */
export function chargeAccountPins(db: Db) {
  return {
    pin: (storeId: string, chargeKey: string, account: string | null) => pinChargeAccount(db, storeId, chargeKey, account),
    find: (storeId: string, chargeKey: string) => findChargeAccount(db, storeId, chargeKey),
  };
}
