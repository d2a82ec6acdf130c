// Customers: persistence. Email is unique per store and email scope (a unique index): the store's own
// customers share one scope, each test clock's customers another, so a buyer never meets a clock's test
// customer. A claim document per scope and email (`customer_emails`, _id `<store>|<email>` or
// `<store>|<clock>|<email>`) makes "who has this email" a primary-key read; it is a shortcut checked
// against the customer it names, never the authority (a customer without one is still found by the unique email).
import type { Db } from 'mongodb';
import { encodeMetadata, type Metadata } from '../domain/metadata';
import { newId } from '../domain/ids';
import { ApiError } from '../domain/errors';
import type { NormalizedCustomerFields } from '../domain/customers';
import { collections, type CustomerDoc } from './collections';
import { isDuplicateKeyError } from './insert-once';
import { findOwnedById } from './owned';
import { definedFields, findPage, NEWEST_FIRST, type PageResult, type PageWindow } from './pagination';

export async function findCustomer(db: Db, storeId: string, id: string): Promise<CustomerDoc | null> {
  return findOwnedById(collections(db).customers, storeId, id);
}

/** A page of the store's customers, newest first; with `email` (as stored: trimmed, lowercase), those of that address. */
export function listCustomers(db: Db, storeId: string, filter: { email?: string }, window: PageWindow): Promise<PageResult<CustomerDoc>> {
  return findPage(collections(db).customers, { storeId, filter: definedFields({ email: filter.email }), order: NEWEST_FIRST, ...window });
}

interface CustomerEmailClaim {
  _id: string;
  store_id: string;
  customer: string;
  created: number;
}

const emailClaims = (db: Db) => db.collection<CustomerEmailClaim>('customer_emails');

/**
 * The email scope of a customer on `clock` (null: the store's own customers). Never null itself: the
 * unique key must hold on an engine that lets nulls repeat in a unique index.
 */
export const emailScopeOf = (clock: string | null | undefined): string => clock || '';

const claimId = (storeId: string, email: string, clock: string | null) => (clock ? `${storeId}|${clock}|${email}` : `${storeId}|${email}`);
const inScope = (doc: Pick<CustomerDoc, 'test_clock'>, clock: string | null) => emailScopeOf(doc.test_clock) === emailScopeOf(clock);

/** The customer an email claim names in the scope (`clock`, null: the store's own), when current; null otherwise (no full read). */
export async function findClaimedCustomer(db: Db, storeId: string, email: string, clock: string | null = null): Promise<CustomerDoc | null> {
  const claim = await emailClaims(db).findOne({ _id: claimId(storeId, email.toLowerCase(), clock) });
  if (!claim) return null;
  const doc = await findCustomer(db, storeId, claim.customer);
  return doc && doc.email === email.toLowerCase() && inScope(doc, clock) ? doc : null;
}

/** The customer with this email (exact, lowercase) in the scope, by its claim or else by the unique email. */
export async function findCustomerByEmail(db: Db, storeId: string, email: string, clock: string | null = null): Promise<CustomerDoc | null> {
  return (
    (await findClaimedCustomer(db, storeId, email, clock)) ??
    collections(db).customers.findOne({ store_id: storeId, email: email.toLowerCase(), email_scope: emailScopeOf(clock) })
  );
}

/** Points the customer's email claim at it; a failure only costs the shortcut. */
export async function claimCustomerEmail(db: Db, doc: CustomerDoc, previousEmail?: string): Promise<void> {
  const clock = doc.test_clock || null;
  try {
    await emailClaims(db).replaceOne(
      { _id: claimId(doc.store_id, doc.email, clock) },
      { store_id: doc.store_id, customer: doc._id, created: doc.created },
      { upsert: true },
    );
    if (previousEmail && previousEmail !== doc.email) {
      await emailClaims(db).deleteOne({ _id: claimId(doc.store_id, previousEmail, clock), customer: doc._id });
    }
  } catch {
    // Lookups fall back to the unique email.
  }
}

/** Drops these customers' email claims (their customers are being deleted). */
export async function deleteEmailClaims(db: Db, customers: Pick<CustomerDoc, '_id' | 'store_id' | 'email' | 'test_clock'>[]): Promise<void> {
  if (customers.length === 0) return;
  await emailClaims(db).deleteMany({ _id: { $in: customers.map((c) => claimId(c.store_id, c.email, c.test_clock || null)) } });
}

/**
 * Customers written before email scopes existed get theirs (a clock's customers their clock's, the
 * rest the store's): run once, while the old store+email unique index is still there.
 */
export async function backfillEmailScopes(db: Db): Promise<void> {
  const customers = collections(db).customers;
  const onClocks = await customers
    .find({ email_scope: { $exists: false }, test_clock: { $type: 'string' } }, { projection: { _id: 1, test_clock: 1 } })
    .toArray();
  for (const doc of onClocks)
    await customers.updateOne({ _id: doc._id, email_scope: { $exists: false } }, { $set: { email_scope: emailScopeOf(doc.test_clock) } });
  await customers.updateMany({ email_scope: { $exists: false } }, { $set: { email_scope: '' } });
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
    email_scope: '',
    livemode: true,
    created: Math.floor(now / 1000),
  };
}

/** The customer's test clock alone (null: none); null when the store has no such customer. */
export async function findCustomerClock(db: Db, storeId: string, id: string): Promise<{ test_clock: string | null } | null> {
  const found = await collections(db).customers.findOne({ _id: id, store_id: storeId }, { projection: { _id: 1, test_clock: 1 } });
  return found ? { test_clock: found.test_clock ?? null } : null;
}

/** Inserts the customer, or returns the one that already holds the email in its scope (created: false). */
export async function insertCustomer(db: Db, doc: CustomerDoc): Promise<{ customer: CustomerDoc; created: boolean }> {
  doc.email_scope = emailScopeOf(doc.test_clock);
  try {
    await collections(db).customers.insertOne(doc);
    await claimCustomerEmail(db, doc);
    return { customer: doc, created: true };
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
    const existing = await findCustomerByEmail(db, doc.store_id, doc.email, doc.test_clock || null);
    if (!existing) throw error;
    return { customer: existing, created: false };
  }
}

/** The unique email in the customer's scope refused the update: the spec's parameter error on email. */
function refuseTakenEmail(error: unknown): never {
  if (isDuplicateKeyError(error))
    throw new ApiError('parameter_invalid', 'Another customer of this store already has this email.', { param: 'email' });
  throw error;
}

/** Writes `set` to the customer; an email another customer of its scope holds is refused (400 on email). */
export async function updateCustomer(db: Db, storeId: string, id: string, set: Partial<CustomerDoc>): Promise<CustomerDoc | null> {
  const current = await findCustomer(db, storeId, id);
  if (!current) return null;
  const updated = await collections(db)
    .customers.findOneAndUpdate({ _id: id, store_id: storeId }, { $set: set }, { returnDocument: 'after' })
    .catch(refuseTakenEmail);
  if (updated && updated.email !== current.email) await claimCustomerEmail(db, updated, current.email);
  return updated;
}
