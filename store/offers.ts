// Offers, products and coupons: the reads the catalog routes, checkout and the workflows make.
import type { Db } from 'mongodb';
import { collections, type CouponDoc, type OfferDoc, type ProductDoc } from './collections';
import { alphabeticalBy, definedFields, findPage, NEWEST_FIRST, type PageResult, type PageWindow } from './pagination';

/** Products of the given offers in one query. */
export async function productsById(db: Db, storeId: string, ids: string[]): Promise<Map<string, ProductDoc>> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return new Map();
  const docs = await collections(db)
    .products.find({ store_id: storeId, _id: { $in: unique } })
    .toArray();
  return new Map(docs.map((d) => [d._id, d]));
}

/** An offer by ofr_ id or checkout slug. */
export async function findOfferByIdOrSlug(db: Db, storeId: string, ref: string): Promise<OfferDoc | null> {
  const { offers } = collections(db);
  if (ref.startsWith('ofr_')) return offers.findOne({ _id: ref, store_id: storeId });
  return offers.findOne({ store_id: storeId, slug: ref });
}

/** An offer by its id alone, whichever store it is in: an offer link on the shared host names only the id. */
export async function findOfferById(db: Db, id: string): Promise<OfferDoc | null> {
  return collections(db).offers.findOne({ _id: id });
}

export async function findProduct(db: Db, storeId: string, id: string): Promise<ProductDoc | null> {
  return collections(db).products.findOne({ _id: id, store_id: storeId });
}

export async function findOffer(db: Db, storeId: string, id: string): Promise<OfferDoc | null> {
  return collections(db).offers.findOne({ _id: id, store_id: storeId });
}

/** A page of the store's offers, alphabetically by name, of a type or active state when asked. */
export function listOffers(
  db: Db,
  storeId: string,
  filter: { type?: OfferDoc['type']; active?: boolean },
  window: PageWindow,
): Promise<PageResult<OfferDoc>> {
  const conditions = definedFields({ type: filter.type, active: filter.active });
  return findPage(collections(db).offers, { storeId, filter: conditions, order: alphabeticalBy('name'), ...window });
}

/** A page of the store's products, newest first, active or not when asked. */
export function listProducts(db: Db, storeId: string, filter: { active?: boolean }, window: PageWindow): Promise<PageResult<ProductDoc>> {
  return findPage(collections(db).products, { storeId, filter: definedFields({ active: filter.active }), order: NEWEST_FIRST, ...window });
}

/** Ids of the offers, of every store, that have usage rows (the usage routine starts their subscriptions' usage). */
export async function offerIdsWithUsage(db: Db): Promise<Set<string>> {
  const offers = await collections(db)
    .offers.find({}, { projection: { _id: 1, usage: 1 } })
    .toArray();
  return new Set(offers.filter((o) => (o.usage ?? []).length > 0).map((o) => o._id));
}

/** A coupon by its code, case aside. */
export async function findCouponByCode(db: Db, storeId: string, code: string): Promise<CouponDoc | null> {
  return collections(db).coupons.findOne({ store_id: storeId, code_lower: code.trim().toLowerCase() });
}
