// Offers and products as the API shows them (read-only), and the checkout URL of an offer.
import type { Db } from 'mongodb';
import { collections, type OfferDoc, type ProductDoc } from './collections';

export function productObject(doc: ProductDoc) {
  return {
    id: doc._id,
    object: 'product' as const,
    name: doc.name,
    description: doc.description,
    family: doc.family,
    active: doc.active,
    livemode: true,
    created: doc.created,
  };
}

export function offerObject(doc: OfferDoc, product: ProductDoc | null, checkoutBaseUrl: string) {
  return {
    id: doc._id,
    object: 'offer' as const,
    name: doc.name,
    slug: doc.slug,
    type: doc.type,
    active: doc.active,
    product: product ? { id: product._id, name: product.name } : { id: doc.product_id, name: null },
    checkout_url: doc.slug ? `${checkoutBaseUrl}/o/${doc.slug}` : `${checkoutBaseUrl}/o/${doc._id}`,
    prices: doc.prices,
    billing_cycle: doc.billing_cycle,
    custom_billing_days: doc.custom_billing_days,
    trial_days: doc.trial_days,
    cycle_limit: doc.cycle_limit,
    packs: doc.packs,
    max_installments: doc.max_installments,
    usage: doc.usage,
    livemode: true,
    created: doc.created,
  };
}

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
