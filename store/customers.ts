// Customers: persistence. Email is unique per store (a unique index), so concurrent creates with one
// email make one customer. A claim document per email (`customer_emails`, _id `<store>|<email>`) makes
// "who has this email" a primary-key read; it is a shortcut checked against the customer it names, never
// the authority (a customer without one is still found by the unique email).
import type { Db } from 'mongodb';
import { encodeMetadata, type Metadata } from '../domain/metadata';
import { newId } from '../domain/ids';
import type { NormalizedCustomerFields } from '../domain/customers';
import { collections, type CustomerDoc, isDuplicateKeyError } from './collections';
import { findOwnedById } from './owned';

export async function findCustomer(db: Db, storeId: string, id: string): Promise<CustomerDoc | null> {
  return findOwnedById(collections(db).customers, storeId, id);
}

interface CustomerEmailClaim {
  _id: string;
  store_id: string;
  customer: string;
  created: number;
}

const emailClaims = (db: Db) => db.collection<CustomerEmailClaim>('customer_emails');
const claimId = (storeId: string, email: string) => `${storeId}|${email}`;

/** The customer an email claim names, when the claim is current; null otherwise (no full read). */
export async function findClaimedCustomer(db: Db, storeId: string, email: string): Promise<CustomerDoc | null> {
  const claim = await emailClaims(db).findOne({ _id: claimId(storeId, email.toLowerCase()) });
  if (!claim) return null;
  const doc = await findCustomer(db, storeId, claim.customer);
  return doc && doc.email === email.toLowerCase() ? doc : null;
}

/** The customer with this email (exact, lowercase), by its claim or else by the unique email. */
export async function findCustomerByEmail(db: Db, storeId: string, email: string): Promise<CustomerDoc | null> {
  return (await findClaimedCustomer(db, storeId, email)) ?? collections(db).customers.findOne({ store_id: storeId, email: email.toLowerCase() });
}

/** Points the customer's email claim at it; a failure only costs the shortcut. */
export async function claimCustomerEmail(db: Db, doc: CustomerDoc, previousEmail?: string): Promise<void> {
  try {
    await emailClaims(db).replaceOne(
      { _id: claimId(doc.store_id, doc.email) },
      { store_id: doc.store_id, customer: doc._id, created: doc.created },
      { upsert: true },
    );
    if (previousEmail && previousEmail !== doc.email) {
      await emailClaims(db).deleteOne({ _id: claimId(doc.store_id, previousEmail), customer: doc._id });
    }
  } catch {
    // Lookups fall back to the unique email.
  }
}

/** Drops these customers' email claims (their customers are being deleted). */
export async function deleteEmailClaims(db: Db, customers: Pick<CustomerDoc, '_id' | 'store_id' | 'email'>[]): Promise<void> {
  if (customers.length === 0) return;
  await emailClaims(db).deleteMany({ _id: { $in: customers.map((c) => claimId(c.store_id, c.email)) } });
}

export function newCustomerDoc(
  storeId: string,
  fields: NormalizedCustomerFields & { email: string },
  metadata: Metadata,
  now = Date.now(),
): CustomerDoc {
  return {
    _id: newId('cust', now),
    store_id: storeId,
    email: fields.email,
    name: fields.name ?? null,
    phone: fields.phone ?? null,
    document: fields.document ?? null,
    address: fields.address ?? null,
    country: fields.country ?? null,
    locale: fields.locale ?? null,
    metadata: encodeMetadata(metadata),
    provider_customer_id: null,
    livemode: true,
    created: Math.floor(now / 1000),
  };
}

/** Inserts the customer, or returns the one that already holds the email (created: false). */
export async function insertCustomer(db: Db, doc: CustomerDoc): Promise<{ customer: CustomerDoc; created: boolean }> {
  try {
    await collections(db).customers.insertOne(doc);
    await claimCustomerEmail(db, doc);
    return { customer: doc, created: true };
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
    const existing = await findCustomerByEmail(db, doc.store_id, doc.email);
    if (!existing) throw error;
    return { customer: existing, created: false };
  }
}

export async function updateCustomer(
  db: Db,
  storeId: string,
  id: string,
  set: Partial<CustomerDoc>,
): Promise<CustomerDoc | null> {
  const current = await findCustomer(db, storeId, id);
  if (!current) return null;
  const updated = await collections(db).customers.findOneAndUpdate({ _id: id, store_id: storeId }, { $set: set }, { returnDocument: 'after' });
  if (updated && updated.email !== current.email) await claimCustomerEmail(db, updated, current.email);
  return updated;
}
