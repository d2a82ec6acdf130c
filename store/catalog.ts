// Products, offers, coupons and meters as the operator defines them (admin CLI) and the API reads them.
import type { Db } from 'mongodb';
import { newId } from '../domain/ids';
import { collections, type CouponDoc, type OfferDoc, type OfferPrice, type OfferUsageRow, type ProductDoc, type ProductFile } from './collections';

const nowSeconds = (now: number) => Math.floor(now / 1000);

export async function createProduct(
  db: Db,
  input: { storeId: string; name: string; description?: string | null; family?: string | null },
  now = Date.now(),
): Promise<ProductDoc> {
  const doc: ProductDoc = {
    _id: newId('prd', now),
    store_id: input.storeId,
    name: input.name,
    description: input.description ?? null,
    family: input.family ?? null,
    active: true,
    created: nowSeconds(now),
  };
  await collections(db).products.insertOne(doc);
  return doc;
}

export const BILLING_CYCLES = ['daily', 'biweekly', 'monthly', 'quarterly', 'half_yearly', 'yearly', 'custom'] as const;
export type BillingCycle = (typeof BILLING_CYCLES)[number];

export interface NewOffer {
  storeId: string;
  productId: string;
  name: string;
  type: 'one_off' | 'recurring';
  prices: OfferPrice[];
  slug?: string | null;
  billingCycle?: BillingCycle | null;
  customBillingDays?: number | null;
  trialDays?: number | null;
  cycleLimit?: number | null;
  packs?: number[];
  maxInstallments?: number | null;
  active?: boolean;
}

export function validateOffer(input: NewOffer): string | null {
  if (input.prices.length === 0) return 'an offer needs at least one price';
  if (input.prices.filter((p) => p.default).length !== 1) return 'exactly one price must be the default';
  if (new Set(input.prices.map((p) => p.currency)).size !== input.prices.length) return 'one price per currency';
  for (const p of input.prices) {
    if (!/^[a-z]{3}$/.test(p.currency)) return `currency '${p.currency}' is not a lowercase ISO 4217 code`;
    if (!Number.isInteger(p.amount) || p.amount < 0) return 'price amounts are non-negative integers (minor unit)';
  }
  if (input.type === 'recurring') {
    if (!input.billingCycle) return 'a recurring offer needs a billing cycle';
    if (input.billingCycle === 'custom' && !(input.customBillingDays && input.customBillingDays > 0)) {
      return 'a custom billing cycle needs custom billing days';
    }
  }
  for (const pack of input.packs ?? []) {
    if (!Number.isInteger(pack) || pack < 1 || pack > 999) return 'packs are 1 to 999 units';
  }
  return null;
}

export async function createOffer(db: Db, input: NewOffer, now = Date.now()): Promise<OfferDoc> {
  const problem = validateOffer(input);
  if (problem) throw new Error(problem);
  const recurring = input.type === 'recurring';
  const doc: OfferDoc = {
    _id: newId('ofr', now),
    store_id: input.storeId,
    name: input.name,
    slug: input.slug ?? null,
    type: input.type,
    active: input.active ?? true,
    product_id: input.productId,
    prices: input.prices,
    billing_cycle: recurring ? (input.billingCycle ?? null) : null,
    custom_billing_days: recurring && input.billingCycle === 'custom' ? (input.customBillingDays ?? null) : null,
    trial_days: recurring ? (input.trialDays ?? null) : null,
    cycle_limit: recurring ? (input.cycleLimit ?? null) : null,
    packs: input.packs ?? [],
    max_installments: input.maxInstallments ?? null,
    usage: [],
    created: nowSeconds(now),
  };
  await collections(db).offers.insertOne(doc);
  return doc;
}

export async function addOfferUsageRow(db: Db, storeId: string, offerId: string, row: OfferUsageRow): Promise<OfferDoc | null> {
  const offers = collections(db).offers;
  // One row per meter and currency: a new row replaces the old one.
  await offers.updateOne({ _id: offerId, store_id: storeId }, { $pull: { usage: { meter: row.meter, currency: row.currency } } });
  return offers.findOneAndUpdate({ _id: offerId, store_id: storeId }, { $push: { usage: row } }, { returnDocument: 'after' });
}

export async function createCoupon(
  db: Db,
  input: { storeId: string; code: string; percentOff?: number | null; amountOff?: number | null; currency?: string | null },
  now = Date.now(),
): Promise<CouponDoc> {
  const percent = input.percentOff ?? null;
  const amount = input.amountOff ?? null;
  if ((percent === null) === (amount === null)) throw new Error('a coupon has either percent off or amount off');
  if (percent !== null && !(percent > 0 && percent <= 100)) throw new Error('percent off is above 0 and at most 100');
  if (amount !== null && !(Number.isInteger(amount) && amount > 0 && input.currency)) {
    throw new Error('amount off is a positive integer with a currency');
  }
  const existing = await collections(db).coupons.findOne({ store_id: input.storeId, code_lower: input.code.toLowerCase() });
  if (existing) throw new Error(`coupon code '${input.code}' already exists in this store`);
  const doc: CouponDoc = {
    _id: newId('cpn', now),
    store_id: input.storeId,
    code: input.code,
    code_lower: input.code.toLowerCase(),
    percent_off: percent,
    amount_off: amount,
    currency: input.currency?.toLowerCase() ?? null,
    active: true,
    created: nowSeconds(now),
  };
  await collections(db).coupons.insertOne(doc);
  return doc;
}

// Meters live in meters.ts (validation, unique event_name, status); re-exported for the admin CLI and the demo seed.
/** The downloadable files the thank-you page lists (the operator's); null when there is no such product. */
export function setProductFiles(db: Db, id: string, files: ProductFile[]): Promise<ProductDoc | null> {
  return collections(db).products.findOneAndUpdate({ _id: id }, { $set: { files } }, { returnDocument: 'after' });
}

/** Whether another offer of the store already has the slug (its checkout link). */
export async function isOfferSlugTaken(db: Db, storeId: string, slug: string, exceptId?: string): Promise<boolean> {
  const filter = exceptId === undefined ? { store_id: storeId, slug } : { store_id: storeId, slug, _id: { $ne: exceptId } };
  return (await collections(db).offers.findOne(filter)) !== null;
}

/** What the operator changes on an offer (active, name, slug, success_url); null when there is no such offer. */
export function updateOfferFields(
  db: Db,
  id: string,
  set: Partial<Pick<OfferDoc, 'active' | 'name' | 'slug' | 'success_url'>>,
): Promise<OfferDoc | null> {
  return collections(db).offers.findOneAndUpdate({ _id: id }, { $set: set }, { returnDocument: 'after' });
}

export function setCouponActive(db: Db, id: string, active: boolean): Promise<CouponDoc | null> {
  return collections(db).coupons.findOneAndUpdate({ _id: id }, { $set: { active } }, { returnDocument: 'after' });
}

/** A store's offers in creation order and its first coupon (the demo store as it stands). */
export async function storeCatalog(db: Db, storeId: string): Promise<{ offers: OfferDoc[]; coupon: CouponDoc | null }> {
  const { offers, coupons } = collections(db);
  return { offers: await offers.find({ store_id: storeId }).sort({ _id: 1 }).toArray(), coupon: await coupons.findOne({ store_id: storeId }) };
}

export { createMeter, type MeterDoc } from './meters';
