// Every index the application's queries need, declared once with the query it serves, and created at
// API, worker and admin CLI start (creating an existing index is a no-op). TTL indexes delete what the
// sweeps delete; the sweeps stay as the fallback for an engine without them: FerretDB v1 answers
// NotImplemented to `expireAfterSeconds` and `partialFilterExpression`, so such an index is created
// without the option it refused (and a partial unique one without uniqueness).
import type { CreateIndexesOptions, Db } from 'mongodb';
import { backfillEmailScopes } from './customers';

interface IndexDeclaration {
  collection: string;
  key: Record<string, 1 | -1>;
  options?: CreateIndexesOptions;
}

const index = (collection: string, key: Record<string, 1 | -1>, options?: CreateIndexesOptions): IndexDeclaration => ({ collection, key, options });
const DAY_S = 24 * 60 * 60;
/** Deletes a document once the Date in the field has passed. */
const expiresAt = { expireAfterSeconds: 0 };
const slugIsSet = (field: string) => ({ unique: true, partialFilterExpression: { [field]: { $type: 'string' } } });

export const INDEXES: readonly IndexDeclaration[] = [
  // Portal pages and the admin CLI: a store by its slug (unique while set) or by its custom domain (findStoreByAddress).
  index('stores', { slug: 1 }, slugIsSet('slug')),
  index('stores', { custom_domain: 1 }),
  // A key's public part is unique; the admin CLI lists a store's keys.
  index('api_keys', { key_id: 1 }, { unique: true }),
  index('api_keys', { store_id: 1, _id: -1 }),
  // One customer per email in a store's scope (its own, or one test clock's); GET /v1/customers?email= and the list (listCustomers,
  // newest first by created then id, as every list but offers).
  index('customers', { store_id: 1, email: 1, email_scope: 1 }, { unique: true }),
  index('customers', { store_id: 1, created: -1, _id: -1 }),
  // A test clock's customers, subscriptions (its advance limit: clockSubscriptionCycles; who its advance waits for: clockSubscriptionIds) and sessions: what its deletion takes (clockObjects).
  index('customers', { store_id: 1, test_clock: 1 }),
  index('subscriptions', { store_id: 1, test_clock: 1 }),
  index('checkout_sessions', { store_id: 1, test_clock: 1 }),
  // GET /v1/test_helpers/test_clocks (listTestClocks).
  index('test_clocks', { store_id: 1, created: -1, _id: -1 }),
  // GET /v1/products (listProducts).
  index('products', { store_id: 1, created: -1, _id: -1 }),
  // GET /v1/offers (listOffers: alphabetical, by type/active) and an offer by slug on the hosted page.
  index('offers', { store_id: 1, name: 1, _id: 1 }),
  index('offers', { store_id: 1, slug: 1 }),
  // A coupon code at checkout, case-insensitively (findCouponByCode).
  index('coupons', { store_id: 1, code_lower: 1 }),
  // Ended idempotency keys (24 h) and rate windows.
  index('idempotency_keys', { expires_at: 1 }, expiresAt),
  index('rate_counters', { expires_at: 1 }, expiresAt),
  // The admin CLI's request log of a store, and its retention.
  index('request_logs', { store_id: 1, _id: -1 }),
  index('request_logs', { expires_at: 1 }, expiresAt),
  // GET /v1/events (listEvents: by type, created), and the retry of a once-only event looking for itself (recentEventsOfType).
  index('events', { store_id: 1, created: -1, _id: -1 }),
  index('events', { store_id: 1, type: 1, created: -1, _id: -1 }),
  // `listen` reads a store's events after its cursor, in _id order (findEventsAfter, countEventsAfter); on MongoDB this index serves it.
  index('events', { store_id: 1, _id: 1 }),
  // The sweeper re-drives outbox entries oldest first.
  index('event_outbox', { created: 1 }),
  // Once-only event claims (claimEmission, by _id), kept 30 days (an activity retries for far less).
  index('event_emissions', { created: 1 }, { expireAfterSeconds: 30 * DAY_S }),
  // GET /v1/orders filters (listOrders), and the portal's orders of a customer (ordersOfCustomer).
  index('orders', { store_id: 1, created: -1, _id: -1 }),
  index('orders', { store_id: 1, customer: 1, created: -1, _id: -1 }),
  index('orders', { store_id: 1, subscription: 1, created: -1, _id: -1 }),
  index('orders', { store_id: 1, status: 1, created: -1, _id: -1 }),
  // A refund made at the provider finds its order by the transaction (findOrderByTransaction).
  index('orders', { store_id: 1, provider_transaction_id: 1 }),
  index('orders', { store_id: 1, external_order_id: 1 }),
  // The plan quota: orders paid in a calendar month (admin CLI `stores quota`).
  index('orders', { store_id: 1, paid_at: 1 }),
  // GET /v1/subscriptions filters (listSubscriptions), the portal (subscriptionsOfCustomer), and the subscription a checkout created
  // (findSubscriptionOfCheckout).
  index('subscriptions', { store_id: 1, created: -1, _id: -1 }),
  index('subscriptions', { store_id: 1, customer: 1, created: -1, _id: -1 }),
  index('subscriptions', { store_id: 1, status: 1, created: -1, _id: -1 }),
  index('subscriptions', { store_id: 1, checkout_session: 1 }),
  // GET /v1/checkout/sessions filters (listCheckoutSessions).
  index('checkout_sessions', { store_id: 1, created: -1, _id: -1 }),
  index('checkout_sessions', { store_id: 1, customer: 1, created: -1, _id: -1 }),
  index('checkout_sessions', { store_id: 1, client_reference_id: 1, created: -1, _id: -1 }),
  index('checkout_sessions', { store_id: 1, status: 1, created: -1, _id: -1 }),
  // A portal sign-in link by its token hash (findPortalLink, claimPortalLink); links and logins expire.
  index('billing_portal_sessions', { token_hash: 1 }, { unique: true }),
  index('billing_portal_sessions', { expires_at: 1 }),
  index('portal_logins', { store_id: 1, customer: 1 }),
  index('portal_logins', { expires_at: 1 }, expiresAt),
  // A renewal confirmation link (3-D Secure in the portal) is looked up by _id (its token's hash); links expire.
  index('renewal_confirmations', { expires_at: 1 }, expiresAt),
  // A charge by its Idempotency-Key (permanent), and GET /v1/subscriptions/{id}/charges (listSubscriptionCharges).
  index('subscription_charges', { store_id: 1, key: 1 }, { unique: true }),
  index('subscription_charges', { store_id: 1, subscription: 1, created: -1, _id: -1 }),
  // Meters: event_name unique per store; GET /v1/billing/meters (listMeters) and a store's meter ids (meterIdsOf).
  index('billing_meters', { store_id: 1, event_name: 1 }, { unique: true }),
  index('billing_meters', { store_id: 1, created: -1, _id: -1 }),
  // A meter event's identifier is unique per meter.
  index('billing_meter_events', { store_id: 1, meter: 1, identifier: 1 }, { unique: true }),
  // event_summaries over any two instants: the partial hours at the range's ends are read event by event (meterEventsBetween).
  index('billing_meter_events', { store_id: 1, meter: 1, customer: 1, timestamp: 1 }),
  // Ingestion journals past their lease (recovery), and a customer's open ones (closing a period).
  index('usage_journals', { lease_until: 1 }),
  index('usage_journals', { customers: 1, created: 1 }),
  // The hourly error report of unattached events, kept a day.
  index('usage_error_reports', { expires_at: 1 }, expiresAt),
  // Webhook endpoints of a store (fan-out, listEndpoints); deliveries of an endpoint (listEndpointDeliveries, by status) and of an event.
  index('webhook_endpoints', { store_id: 1, created: 1, _id: 1 }),
  index('webhook_deliveries', { store_id: 1, webhook_endpoint: 1, created: -1, _id: -1 }),
  index('webhook_deliveries', { store_id: 1, webhook_endpoint: 1, status: 1, created: -1, _id: -1 }),
  index('webhook_deliveries', { store_id: 1, event: 1 }),
  index('webhook_deliveries', { event: 1, webhook_endpoint: 1 }, { unique: true }),
  // The test payment connection finds a charge by transaction (settle notices, the admin CLI).
  index('provider_test_charges', { store_id: 1, transaction_id: 1 }),
  index('provider_test_charges', { transaction_id: 1 }),
  // charge_accounts: a charge key's pinned provider account is found by its _id `<store_id>:<charge_key>` (pinChargeAccount, findChargeAccount).
  // Provider events (Stripe's webhooks) are found by their id (_id), kept 30 days (Stripe re-sends for 3).
  index('provider_events', { received_at: 1 }, { expireAfterSeconds: 30 * DAY_S }),
  // The buyer e-mails about one order or subscription (support: "did the buyer get it?"); an e-mail itself is found by its key (_id).
  index('sent_mail', { store_id: 1, subject_id: 1 }),
];

const NOT_IMPLEMENTED = 238;
const OPTIONS_CONFLICT = [85, 86]; // IndexOptionsConflict, IndexKeySpecsConflict

function errorCode(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null ? (error as { code?: number }).code : undefined;
}

/** The same index without the options an engine refused (a partial unique index loses uniqueness too). */
function withoutRefusedOptions(options: CreateIndexesOptions = {}): CreateIndexesOptions {
  const { expireAfterSeconds: _ttl, partialFilterExpression, ...rest } = options;
  return partialFilterExpression ? { ...rest, unique: false } : rest;
}

async function createIndex(db: Db, { collection, key, options }: IndexDeclaration): Promise<void> {
  const target = db.collection(collection);
  try {
    await target.createIndex(key, options);
  } catch (error) {
    const code = errorCode(error);
    if (code === NOT_IMPLEMENTED) {
      await target.createIndex(key, withoutRefusedOptions(options));
    } else if (code !== undefined && OPTIONS_CONFLICT.includes(code)) {
      // Declared anew with other options (say, a TTL added): replace the old one.
      await target.dropIndex(
        Object.entries(key)
          .map(([field, dir]) => `${field}_${dir}`)
          .join('_'),
      );
      await target.createIndex(key, options);
    } else {
      throw error;
    }
  }
}

const INDEX_NOT_FOUND = 27;

/** Customers' old unique key (store+email), replaced by store+email+scope: scopes filled in first, then it goes. */
async function retireCustomerEmailIndex(db: Db): Promise<void> {
  const customers = db.collection('customers');
  const existing = await customers
    .listIndexes()
    .toArray()
    .catch(() => []);
  if (!existing.some((found) => found.name === 'store_id_1_email_1')) return;
  await backfillEmailScopes(db);
  await customers.dropIndex('store_id_1_email_1').catch((error: unknown) => {
    if (errorCode(error) !== INDEX_NOT_FOUND) throw error;
  });
}

/** Creates every declared index (idempotent) and retires replaced ones; API, worker and admin CLI call it at start. */
export async function ensureIndexes(db: Db): Promise<void> {
  await Promise.all(INDEXES.map((declared) => createIndex(db, declared)));
  await retireCustomerEmailIndex(db);
}
