// Collection names and document shapes shared by the API, the worker and the admin CLI (their indexes
// are declared in indexes.ts).
import type { Collection, Db } from 'mongodb';
import type { StoredMetadata } from '../domain/metadata';

export interface StoreDoc {
  _id: string;
  name: string;
  slug: string | null;
  country: string;
  currency: string;
  timezone: string;
  active: boolean;
  api_enabled: boolean;
  plan_overdue: boolean;
  portal_enabled: boolean;
  custom_domain: string | null;
  /** Where the thank-you page continues when neither the session nor the offer says (admin CLI). */
  default_success_url?: string | null;
  /** The store's purchase confirmation e-mail is active (admin CLI); absent means on. */
  purchase_confirmation_email?: boolean;
  /** Buyer e-mails of test purchases also go to addresses a page visitor typed (admin CLI `--test-buyer-emails`); absent means off. */
  test_buyer_emails?: boolean;
  /** The largest one-off charge, in minor units (admin CLI); absent: a million units of the charge's currency. */
  max_charge_amount?: number | null;
  /** The store's connected Stripe account (acct_…, admin CLI): its charges land there; absent: the platform account. */
  stripe_account?: string | null;
  /** CPF and CNPJ check digits are verified (admin CLI `--verify-document-digits`); absent means off, as the spec accepts any digits. */
  verify_document_digits?: boolean;
  created: number;
}

export type Scope = 'read' | 'write';

export interface ApiKeyDoc {
  _id: string;
  store_id: string;
  /** The 12 characters after `vk_live_`: public, used for lookup. */
  key_id: string;
  secret_hash: string;
  last4: string;
  name: string;
  scopes: Scope[];
  version: string;
  expires_at: number | null;
  revoked_at: number | null;
  created: number;
}

export interface CustomerDoc {
  _id: string;
  store_id: string;
  email: string;
  name: string | null;
  phone: string | null;
  document: { type: string; number: string; number_masked: string } | null;
  address: Record<string, string | null> | null;
  country: string | null;
  locale: string | null;
  metadata: StoredMetadata;
  provider_customer_id: string | null;
  /** The test clock it is attached to (set at creation only); absent on customers made before clocks. */
  test_clock?: string | null;
  /** Where its email is unique (store/customers.ts `emailScopeOf`): its clock's id, '' for the store's own customers. */
  email_scope?: string;
  livemode: boolean;
  created: number;
}

export interface ProductDoc {
  _id: string;
  store_id: string;
  name: string;
  description: string | null;
  family: string | null;
  active: boolean;
  /** Downloadable files the thank-you page lists (admin CLI); the page then waits for the buyer. */
  files?: ProductFile[];
  created: number;
}

export interface ProductFile {
  name: string;
  url: string;
}

export interface OfferPrice {
  currency: string;
  amount: number;
  default: boolean;
}

export interface OfferUsageRow {
  meter: string;
  currency: string;
  unit_amount: number;
  included_units: number;
  tiers: { up_to: number | null; unit_amount: number; flat_amount?: number | null }[] | null;
  rounding: 'up' | 'nearest';
  billing_threshold: number | null;
  label: string | null;
}

export interface OfferDoc {
  _id: string;
  store_id: string;
  name: string;
  slug: string | null;
  type: 'one_off' | 'recurring';
  active: boolean;
  product_id: string;
  prices: OfferPrice[];
  billing_cycle: string | null;
  custom_billing_days: number | null;
  trial_days: number | null;
  cycle_limit: number | null;
  packs: number[];
  max_installments: number | null;
  usage: OfferUsageRow[];
  /** The thank-you page's target when the session has no success_url (admin CLI); before the store's default. */
  success_url?: string | null;
  created: number;
}

export interface CouponDoc {
  _id: string;
  store_id: string;
  /** Lowercase, for case-insensitive lookup. */
  code_lower: string;
  code: string;
  percent_off: number | null;
  amount_off: number | null;
  currency: string | null;
  active: boolean;
  created: number;
}

export interface IdempotencyDoc {
  _id: string;
  store_id: string;
  key: string;
  fingerprint: string;
  state: 'running' | 'done';
  locked_until: number;
  request_id: string;
  response: { status: number; body: string; headers: Record<string, string> } | null;
  created: number;
  /** created + 24 hours: the TTL index deletes the key then; null for a key that never expires (charges). */
  expires_at: Date | null;
}

export interface RateCounterDoc {
  _id: string;
  count: number;
  /** The window's end: the TTL index deletes the counter then. */
  expires_at: Date;
}

export interface RequestLogDoc {
  _id: string;
  store_id: string | null;
  api_key: string | null;
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  ip: string;
  created: number;
  /** Set by the writer (created + retention), for the TTL index. */
  expires_at?: Date;
}

export interface EventDoc {
  _id: string;
  store_id: string;
  type: string;
  api_version: string;
  created: number;
  livemode: boolean;
  request: { id: string | null; idempotency_key: string | null } | null;
  /** `data` as JSON text: user metadata keys may hold '.' or '$', which MongoDB before 5.0 refuses as field names. */
  data_json: string;
  /** Test events (webhook endpoint test) are kept out of GET /v1/events. */
  test: boolean;
  /**
   * Written until 2026-11-28 and no longer read: an event awaits dispatch while its outbox entry exists
   * (store/events.ts), which saves a write per event.
   */
  dispatched?: boolean;
  /** Webhook endpoint ids the event goes to, matched when it was written (services/events/events.ts). */
  targets?: string[];
  /** On a 2026-11-01 event: the fact's name in catalog 2026-09-01 (null: none there); what `listen` renders for that catalog. */
  legacy_type?: string | null;
}

export interface Collections {
  stores: Collection<StoreDoc>;
  apiKeys: Collection<ApiKeyDoc>;
  customers: Collection<CustomerDoc>;
  products: Collection<ProductDoc>;
  offers: Collection<OfferDoc>;
  coupons: Collection<CouponDoc>;
  idempotency: Collection<IdempotencyDoc>;
  rateCounters: Collection<RateCounterDoc>;
  requestLogs: Collection<RequestLogDoc>;
  events: Collection<EventDoc>;
  // Later resources use db.collection(...) with their own typed accessors.
  db: Db;
}

// Built once per database handle: every request asks for them, twice on the hot read path.
const byDb = new WeakMap<Db, Collections>();

export function collections(db: Db): Collections {
  let found = byDb.get(db);
  if (!found) byDb.set(db, (found = openCollections(db)));
  return found;
}

function openCollections(db: Db): Collections {
  return {
    stores: db.collection<StoreDoc>('stores'),
    apiKeys: db.collection<ApiKeyDoc>('api_keys'),
    customers: db.collection<CustomerDoc>('customers'),
    products: db.collection<ProductDoc>('products'),
    offers: db.collection<OfferDoc>('offers'),
    coupons: db.collection<CouponDoc>('coupons'),
    idempotency: db.collection<IdempotencyDoc>('idempotency_keys'),
    rateCounters: db.collection<RateCounterDoc>('rate_counters'),
    requestLogs: db.collection<RequestLogDoc>('request_logs'),
    events: db.collection<EventDoc>('events'),
    db,
  };
}
