// Creating and updating customers: shared by the API and checkout (which creates customers with
// metadata {}). Registration at the provider happens before the record is written, so a refused
// customer leaves nothing behind.
import type { Db } from 'mongodb';
import { ApiError, notFound } from '../domain/errors';
import { normalizeCustomerInput, type CustomerInput } from '../domain/customers';
import { encodeMetadata, normalizeMetadata, type Metadata } from '../domain/metadata';
import type { PaymentProvider } from './provider/types';
import type { CustomerDoc, StoreDoc } from './store/collections';
import {
  customerObject,
  findClaimedCustomer,
  findCustomer,
  insertCustomer,
  isDuplicateKeyError,
  newCustomerDoc,
  updateCustomer,
} from './store/customers';
import { emitEvent, type EventDeps } from './events';
import type { EventRequest } from './store/events';

export interface CustomerDeps extends EventDeps {
  db: Db;
  provider: PaymentProvider;
}

export async function createCustomer(
  deps: CustomerDeps,
  store: StoreDoc,
  input: CustomerInput & { metadata?: unknown },
  request: EventRequest | null,
  options: { nameMin?: number } = {},
): Promise<{ customer: CustomerDoc; created: boolean }> {
  const fields = normalizeCustomerInput(input, store.country, true, options.nameMin);
  const metadata: Metadata = normalizeMetadata(input.metadata);
  // The claim lookup is a single read; a customer without a claim is still found below, when the
  // unique email refuses the insert.
  const existing = await findClaimedCustomer(deps.db, store._id, fields.email!);
  if (existing) return { customer: existing, created: false };

  const doc = newCustomerDoc(store._id, { ...fields, email: fields.email! }, metadata);
  const registered = await deps.provider.registerCustomer({ storeId: store._id, customerId: doc._id, email: doc.email, name: doc.name });
  if (!registered.ok) throw new ApiError('customer_rejected', `The payment provider refused the customer: ${registered.reason}.`);
  doc.provider_customer_id = registered.providerCustomerId;

  const result = await insertCustomer(deps.db, doc);
  if (result.created) {
    await emitEvent(deps, { storeId: store._id, type: 'customer.created', object: customerObject(doc), request });
  }
  return result;
}

export async function changeCustomer(
  deps: CustomerDeps,
  store: StoreDoc,
  id: string,
  input: CustomerInput & { metadata?: unknown },
  request: EventRequest | null,
): Promise<CustomerDoc> {
  const current = await findCustomer(deps.db, store._id, id);
  if (!current) throw notFound('customer', id);
  const fields = normalizeCustomerInput(input, store.country, false);
  const set: Partial<CustomerDoc> = { ...fields } as Partial<CustomerDoc>;
  // Metadata replaces the whole map when sent.
  if (input.metadata !== undefined) set.metadata = encodeMetadata(normalizeMetadata(input.metadata));
  let updated: CustomerDoc | null;
  try {
    updated = await updateCustomer(deps.db, store._id, id, set);
  } catch (error) {
    if (isDuplicateKeyError(error)) {
      throw new ApiError('parameter_invalid', 'Another customer of this store already has this email.', { param: 'email' });
    }
    throw error;
  }
  if (!updated) throw notFound('customer', id);
  await emitEvent(deps, { storeId: store._id, type: 'customer.updated', object: customerObject(updated), request });
  return updated;
}
