// An offer's link (the offer's `checkout_url`): each visit opens a fresh checkout session for the offer
// and sends the browser to it, in the language the browser asks for, with `?currency=` and `?pack=`
// when the offer has them. On the shared {checkout_url} the link is /o/<store slug>/<offer slug> or
// /o/<ofr_id>; on a store's custom domain, /o/<offer slug or id>. Link previews and prefetches get the
// page's address without a session; visits per address are bounded like payment submits.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors';
import { checkoutPageUrl, localeFromAcceptLanguage } from '../../domain/checkout';
import { pageLanguage } from '../../domain/checkout-i18n';
import { createCheckoutSession, type CreateCheckoutSessionInput } from '../../services/checkout-sessions';
import { collections, type OfferDoc, type StoreDoc } from '../../store/collections';
import { findOfferByIdOrSlug } from '../../store/offers';
import { SharedRateWindows } from '../../store/rate-counters';
import { checkoutDepsOf } from '../context';
import { renderUnavailablePage } from './checkout-views';

const LinkQuery = Type.Object({
  currency: Type.Optional(Type.String({ maxLength: 10 })),
  pack: Type.Optional(Type.String({ maxLength: 6 })),
});
const OneRef = Type.Object({ ref: Type.String({ maxLength: 200 }) });
const StoreAndRef = Type.Object({ store: Type.String({ maxLength: 200 }), ref: Type.String({ maxLength: 200 }) });
type Query = { currency?: string; pack?: string };

const HTML = 'text/html; charset=utf-8';
const hostOf = (request: FastifyRequest) => request.hostname.split(':')[0].toLowerCase();

/** A visit a browser makes for itself (prefetch, prerender, link preview) is not a buyer arriving. */
function isPrefetch(request: FastifyRequest): boolean {
  const purpose = `${request.headers['sec-purpose'] ?? ''} ${request.headers.purpose ?? ''} ${request.headers['x-moz'] ?? ''}`;
  return /prefetch|prerender/i.test(purpose);
}

const offerLinkPages: FastifyPluginAsyncTypebox = async (app) => {
  const deps = checkoutDepsOf(app.deps);
  const { db, config } = app.deps;
  const windows = new SharedRateWindows(db);
  const checkoutHost = new URL(deps.checkoutUrl).hostname.toLowerCase();

  /** The store and offer a link names on this host; null when it names none here. */
  async function resolve(request: FastifyRequest, storeSlug: string | null, ref: string): Promise<{ store: StoreDoc; offer: OfferDoc } | null> {
    const { stores, offers } = collections(db);
    const host = hostOf(request);
    let store: StoreDoc | null;
    if (storeSlug !== null) store = host === checkoutHost ? await stores.findOne({ slug: storeSlug }) : null;
    else if (host !== checkoutHost) store = await stores.findOne({ custom_domain: host });
    else {
      // An ofr_ id names one offer of one store: the shared host serves it.
      const offer = ref.startsWith('ofr_') ? await offers.findOne({ _id: ref }) : null;
      store = offer ? await stores.findOne({ _id: offer.store_id }) : null;
    }
    if (!store) return null;
    const offer = await findOfferByIdOrSlug(db, store._id, ref);
    return offer ? { store, offer } : null;
  }

  async function visit(request: FastifyRequest, reply: FastifyReply, storeSlug: string | null, ref: string, query: Query) {
    if (isPrefetch(request)) return reply.status(204).header('Cache-Control', 'no-store').send();
    const hit = await windows.hit(`offer-link:${request.ip}`, config.pagePostRateLimit, config.pagePostRateWindowMs);
    if (!hit.allowed) return reply.status(429).header('Retry-After', String(Math.max(1, hit.resetAt - Math.floor(Date.now() / 1000)))).type(HTML).send(renderUnavailablePage('en'));
    const found = await resolve(request, storeSlug, ref);
    const locale = localeFromAcceptLanguage(request.headers['accept-language']);
    if (!found) return reply.status(404).type(HTML).send(renderUnavailablePage(pageLanguage(locale)));
    const session = await openSession(found, query, locale);
    if (!session) return reply.status(410).type(HTML).send(renderUnavailablePage(pageLanguage(locale)));
    return reply.header('Cache-Control', 'no-store').redirect(checkoutPageUrl(session.checkout_base, session._id), 303);
  }

  /** A new session for the offer; a currency or pack the offer lacks is left to the buyer. Null when the offer cannot sell. */
  async function openSession(found: { store: StoreDoc; offer: OfferDoc }, query: Query, locale: string | null) {
    const body: CreateCheckoutSessionInput = { offer: found.offer._id, ...(locale ? { locale } : {}) };
    if (query.currency) body.currency = query.currency.toLowerCase();
    if (query.pack && /^\d+$/.test(query.pack)) body.pack = Number(query.pack);
    for (;;) {
      try {
        return await createCheckoutSession(deps, found.store, body);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const param = error.param;
        if (param === 'currency' && body.currency !== undefined) delete body.currency;
        else if (param === 'pack' && body.pack !== undefined) delete body.pack;
        else return null;
      }
    }
  }

  const options = { config: { public: true }, exposeHeadRoute: false, schema: { hide: true, querystring: LinkQuery } };
  app.get('/o/:ref', { ...options, schema: { ...options.schema, params: OneRef } }, (request, reply) =>
    visit(request, reply, null, request.params.ref, request.query),
  );
  app.get('/o/:store/:ref', { ...options, schema: { ...options.schema, params: StoreAndRef } }, (request, reply) =>
    visit(request, reply, request.params.store, request.params.ref, request.query),
  );
};

export default offerLinkPages;
