// Offers and products: the reads the catalog routes and checkout make.
import type { Db } from 'mongodb';
import { collections, type OfferDoc, type ProductDoc } from './collections';

/** Products of the given offers in one query. */
export async function productsById(db: Db, storeId: string, ids: string[]): Promise<Map<string, ProductDoc>> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return new Map();
  const docs = await collections(db).products.find({ store_id: storeId, _id: { $in: unique } }).toArray();
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
