// Customers: persistence and the API object. Email is unique per store (a unique index),
// which is what makes concurrent creates with one email return one customer.
import type { Db } from 'mongodb';
import { decodeMetadata, encodeMetadata, type Metadata } from '../../domain/metadata';
import { newId } from '../../domain/ids';
import type { NormalizedCustomerFields } from '../../domain/customers';
import { collections, type CustomerDoc } from './collections';

export function customerObject(doc: CustomerDoc) {
  return {
    id: doc._id,
    object: 'customer' as const,
    email: doc.email,
    name: doc.name,
    phone: doc.phone,
    document: doc.document ? { type: doc.document.type, number_masked: doc.document.number_masked } : null,
    address: doc.address
      ? {
          line1: doc.address.line1 ?? null,
          line2: doc.address.line2 ?? null,
          number: doc.address.number ?? null,
          district: doc.address.district ?? null,
          city: doc.address.city ?? null,
          state: doc.address.state ?? null,
          postal_code: doc.address.postal_code ?? null,
          country: doc.address.country ?? null,
        }
      : null,
    country: doc.country,
    locale: doc.locale,
    metadata: decodeMetadata(doc.metadata),
    livemode: doc.livemode,
    created: doc.created,
  };
}
export type CustomerObject = ReturnType<typeof customerObject>;

export async function findCustomer(db: Db, storeId: string, id: string): Promise<CustomerDoc | null> {
  return collections(db).customers.findOne({ _id: id, store_id: storeId });
}

export async function findCustomerByEmail(db: Db, storeId: string, email: string): Promise<CustomerDoc | null> {
  return collections(db).customers.findOne({ store_id: storeId, email: email.toLowerCase() });
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

export function isDuplicateKeyError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: number }).code === 11000;
}

/** Inserts the customer, or returns the one that already holds the email (created: false). */
export async function insertCustomer(db: Db, doc: CustomerDoc): Promise<{ customer: CustomerDoc; created: boolean }> {
  try {
    await collections(db).customers.insertOne(doc);
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
  return collections(db).customers.findOneAndUpdate({ _id: id, store_id: storeId }, { $set: set }, { returnDocument: 'after' });
}
