// Creating and updating customers: shared by the API and checkout (which creates customers with
// metadata {}). Registration at the provider happens before the record is written, so a refused
// customer leaves nothing behind; checkout prepares the customer before the payment and writes it
// only once the payment is taken.
import type { Database } from '../store/database';
import { ApiError, notFound } from '../domain/errors';
import { normalizeCustomerInput, normalizeEmail, type CustomerInput } from '../domain/customers';
import { encodeMetadata, normalizeMetadata, type Metadata } from '../domain/metadata';
import type { PaymentProvider } from '../adapters/provider/types';
import type { CustomerDoc, StoreDoc } from '../store/collections';
import {
  findClaimedCustomer,
  findCustomer,
  emailScopeOf,
  findCustomerByEmail,
  insertCustomer,
  newCustomerDoc,
  updateCustomer,
} from '../store/customers';
import { requireTestClock } from '../store/test-clocks';
import { connectionFor } from '../adapters/provider';
import { releaseClockObject, requireTestPayments, reserveClockObject } from './test-clocks';
import { customerObject } from '../resources/customer';
import { emitEvent, type EventDeps } from './events/events';
import type { EventRequest } from '../store/events';

export interface CustomerDeps extends EventDeps {
  db: Database;
  provider: PaymentProvider;
  testProvider?: PaymentProvider | null;
}

/**
 * The customer these fields name: the customer holding the email in the scope (the store's own
 * customers, or the test clock's when `testClock` is given: a buyer never finds a clock's customer) (`existing`), else a new one
 * checked and registered at the provider but not yet written. `id` proposes the new customer's id
 * (checkout derives one, so attempts racing for one buyer register one customer); an id already held
 * by a customer with another email (since renamed) gives way to a fresh one.
 */
export async function prepareCustomer(
  deps: CustomerDeps,
  store: StoreDoc,
  input: CustomerInput & { metadata?: unknown },
  options: { nameMin?: number; id?: (email: string) => string; testClock?: string | null } = {},
): Promise<{ customer: CustomerDoc; existing: boolean }> {
  const fields = normalizeCustomerInput(input, store, true, options.nameMin);
  const metadata: Metadata = normalizeMetadata(input.metadata);
  const email = fields.email!;
  // The claim lookup is a single read; a customer without a claim is still found when the unique
  // email refuses the insert.
  const clock = options.testClock ?? null;
  const existing = await findClaimedCustomer(deps.db, store._id, email, clock);
  if (existing) return { customer: existing, existing: true };

  const doc = newCustomerDoc(store._id, { ...fields, email }, metadata);
  if (clock) Object.assign(doc, { test_clock: clock, email_scope: emailScopeOf(clock) });
  const proposed = options.id?.(email);
  if (proposed) {
    const holder = await findCustomer(deps.db, store._id, proposed);
    if (holder?.email === email && emailScopeOf(holder.test_clock) === doc.email_scope) return { customer: holder, existing: true };
    if (!holder) doc._id = proposed;
  }
  // A clock's customer is registered where its money will go: a test connection.
  const registered = await connectionFor(deps, clock !== null).registerCustomer({
    storeId: store._id,
    customerId: doc._id,
    email: doc.email,
    name: doc.name,
    phone: doc.phone,
    document: doc.document ? { type: doc.document.type, number: doc.document.number } : null,
  });
  if (!registered.ok) throw new ApiError('customer_rejected', `The payment provider refused the customer: ${registered.reason}.`);
  doc.provider_customer_id = registered.providerCustomerId;
  return { customer: doc, existing: false };
}

/**
 * "If a customer with that email already exists: 200 with the existing customer, no field changed",
 * whatever else was sent: the store's customer holding `email` (a valid address, any case, trimmed),
 * else null. The email itself is still checked: a malformed one names nobody. The claim answers in one
 * primary-key read; `authoritative` also asks the unique email, for a customer without a claim.
 */
export async function existingCustomerByEmail(
  db: Database,
  storeId: string,
  email: unknown,
  authoritative: boolean,
  clock: string | null = null,
): Promise<CustomerDoc | null> {
  if (typeof email !== 'string') return null;
  let normalized: string;
  try {
    normalized = normalizeEmail(email);
  } catch {
    return null;
  }
  return authoritative ? findCustomerByEmail(db, storeId, normalized, clock) : findClaimedCustomer(db, storeId, normalized, clock);
}

/** Inserts the customer; one on a test clock takes one of the clock's customer slots (400 test_clock_limit when full). */
async function insertClockBounded(deps: CustomerDeps, doc: CustomerDoc): ReturnType<typeof insertCustomer> {
  const clock = doc.test_clock;
  if (!clock) return insertCustomer(deps.db, doc);
  await reserveClockObject(deps.db, doc.store_id, clock, 'customers', 'test_clock');
  const result = await insertCustomer(deps.db, doc).catch(async (error: unknown) => {
    await releaseClockObject(deps.db, doc.store_id, clock, 'customers');
    throw error;
  });
  if (!result.created) await releaseClockObject(deps.db, doc.store_id, clock, 'customers');
  return result;
}

export async function createCustomer(
  deps: CustomerDeps,
  store: StoreDoc,
  input: CustomerInput & { metadata?: unknown; test_clock?: string | null },
  request: EventRequest | null,
  options: { nameMin?: number } = {},
): Promise<{ customer: CustomerDoc; created: boolean }> {
  let prepared: Awaited<ReturnType<typeof prepareCustomer>>;
  try {
    // The clock a new customer attaches to must be one of the store's (creation is the only time it is set).
    const testClock = input.test_clock ? (await requireTestClock(deps.db, store._id, input.test_clock, 'test_clock'))._id : null;
    if (testClock) requireTestPayments(deps, 'test_clock');
    prepared = await prepareCustomer(deps, store, input, { ...options, testClock });
  } catch (error) {
    // A field refused by the rules (or the provider) does not matter when the email is already a customer's.
    const existing =
      error instanceof ApiError ? await existingCustomerByEmail(deps.db, store._id, input.email, true, input.test_clock ?? null) : null;
    if (existing) return { customer: existing, created: false };
    throw error;
  }
  if (prepared.existing) return { customer: prepared.customer, created: false };
  const result = await insertClockBounded(deps, prepared.customer);
  if (result.created) {
    await emitEvent(deps, { storeId: store._id, type: 'customer.created', object: customerObject(result.customer), request });
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
  const fields = normalizeCustomerInput(input, store, false);
  const set: Partial<CustomerDoc> = { ...fields } as Partial<CustomerDoc>;
  // Metadata replaces the whole map when sent.
  if (input.metadata !== undefined) set.metadata = encodeMetadata(normalizeMetadata(input.metadata));
  const updated = await updateCustomer(deps.db, store._id, id, set);
  if (!updated) throw notFound('customer', id);
  await emitEvent(deps, { storeId: store._id, type: 'customer.updated', object: customerObject(updated), request });
  return updated;
}
