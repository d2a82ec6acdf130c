// Offer links (an offer's `checkout_url`): which store and offer a link names on the host it reached,
// what the link's query asks for (kept only where the offer has it), and a new checkout session for a
// buyer who follows it, marked as the link's (its subscription is then one "from a regular link").
import type { Database } from '../../store/database';
import { ApiError } from '../../domain/errors';
import { offerOnSale } from '../../domain/checkout';
import type { OfferDoc, ProductDoc, StoreDoc } from '../../store/collections';
import { markOfferLinkSession, type CheckoutSessionDoc } from '../../store/checkout-sessions';
import { findOfferById, findOfferByIdOrSlug, findProduct } from '../../store/offers';
import { findStore, findStoreByAddress } from '../../store/stores';
import { createCheckoutSession, type CheckoutDeps, type CreateCheckoutSessionInput } from './sessions';

export interface LinkedOffer {
  store: StoreDoc;
  offer: OfferDoc;
  product: ProductDoc | null;
  /** False when a session could not be opened now (archived, store not selling): the link is unavailable. */
  onSale: boolean;
}

export interface LinkAddress {
  /** The request's host name, lowercase, without the port. */
  host: string;
  /** {checkout_url}'s host name: there a link names the store by its slug, or the offer by its id. */
  checkoutHost: string;
  storeSlug: string | null;
  /** The offer's slug or ofr_ id. */
  ref: string;
}

/** What a visit buys: a currency and a pack of the offer's, or null for the default / no pack. */
export interface LinkChoice {
  currency: string | null;
  pack: number | null;
}

/** The store and offer a link names on this host; null when it names none here. */
export async function findLinkedOffer(db: Database, address: LinkAddress): Promise<LinkedOffer | null> {
  const store = await storeOfLink(db, address);
  if (!store) return null;
  const offer = await findOfferByIdOrSlug(db, store._id, address.ref);
  if (!offer) return null;
  const product = await findProduct(db, store._id, offer.product_id);
  return { store, offer, product, onSale: offerOnSale(store, offer, product) };
}

async function storeOfLink(db: Database, { host, checkoutHost, storeSlug, ref }: LinkAddress): Promise<StoreDoc | null> {
  if (storeSlug !== null) return host === checkoutHost ? findStoreByAddress(db, { slug: storeSlug }) : null;
  if (host !== checkoutHost) return findStoreByAddress(db, { customDomain: host });
  // An ofr_ id names one offer of one store: the shared host serves it.
  const offer = ref.startsWith('ofr_') ? await findOfferById(db, ref) : null;
  return offer ? findStore(db, offer.store_id) : null;
}

/** The link's ?currency= and ?pack=, each kept only when the offer has it; an offer sold in one pack only uses it. */
export function linkChoice(offer: OfferDoc, query: { currency?: string | null; pack?: string | null }): LinkChoice {
  const currency = (query.currency ?? '').trim().toLowerCase();
  const pack = /^\d{1,3}$/.test(query.pack ?? '') ? Number(query.pack) : NaN;
  return {
    currency: offer.prices.some((p) => p.currency === currency) ? currency : null,
    pack: offer.packs.includes(pack) ? pack : offer.packs.length === 1 ? offer.packs[0] : null,
  };
}

/** The buyer picks a pack first: the offer is sold in several and the link named none of them. */
export function needsPackChoice(offer: OfferDoc, choice: LinkChoice): boolean {
  return choice.pack === null && offer.packs.length > 1;
}

/** A new session for the offer, in the buyer's language; null when the offer cannot sell any more. */
export async function openOfferLinkSession(
  deps: CheckoutDeps,
  linked: LinkedOffer,
  choice: LinkChoice,
  locale: string | null,
): Promise<CheckoutSessionDoc | null> {
  const body: CreateCheckoutSessionInput = { offer: linked.offer._id };
  if (choice.currency !== null) body.currency = choice.currency;
  if (choice.pack !== null) body.pack = choice.pack;
  if (locale !== null) body.locale = locale;
  let session: CheckoutSessionDoc;
  try {
    session = await createCheckoutSession(deps, linked.store, body);
  } catch (error) {
    // Archived or blocked between the look-up and now: the link shows it is unavailable.
    if (error instanceof ApiError) return null;
    throw error;
  }
  // Marked before the buyer is sent to the page, so before any payment: its subscription is one
  // "from a regular link" (checkout_session null), read when the paid session is handed off.
  await markOfferLinkSession(deps.db, linked.store._id, session._id);
  return { ...session, origin: 'offer_link' };
}
