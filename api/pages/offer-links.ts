// An offer's link (the offer's `checkout_url`): a buyer's visit opens a fresh checkout session for the
// offer and 303s to it, in the browser's language, with `?currency=` and `?pack=` when the offer has
// them; an offer sold in several packs first shows them to pick from. On the shared {checkout_url} the
// link is /o/<store slug>/<offer slug> or /o/<ofr_id>; on a store's custom domain, /o/<offer slug or id>.
// Nothing is created for what is not a buyer: prefetches are refused, link previews (chat apps,
// crawlers, HEAD) get the offer page, whose button opens the checkout by POST. Checkouts opened per
// address are bounded.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { checkoutPageUrl, localeFromAcceptLanguage } from '../../domain/checkout';
import { pageLanguage } from '../../i18n/pages';
import {
  findLinkedOffer,
  linkChoice,
  needsPackChoice,
  openOfferLinkSession,
  type LinkChoice,
  type LinkedOffer,
} from '../../services/checkout/offer-links';
import { SharedRateWindows } from '../../store/rate-counters';
import { checkoutDepsOf } from '../context';
import { clientAddress } from '../client-address';
import { renderUnavailablePage } from './checkout-views';
import { renderLinkBusyPage, renderOfferLinkPage } from './offer-link-views';

const LinkQuery = Type.Object({
  currency: Type.Optional(Type.String({ maxLength: 10 })),
  pack: Type.Optional(Type.String({ maxLength: 6 })),
});
const OneRef = Type.Object({ ref: Type.String({ maxLength: 200 }) });
const StoreAndRef = Type.Object({ store: Type.String({ maxLength: 200 }), ref: Type.String({ maxLength: 200 }) });
// The offer page's buttons: what the link asked for, posted back (currency empty for the default).
const LinkForm = Type.Object({
  currency: Type.Optional(Type.Union([Type.Null(), Type.String({ maxLength: 10 })])),
  pack: Type.Optional(Type.Union([Type.Null(), Type.String({ maxLength: 6 })])),
});
type Asked = { currency?: string | null; pack?: string | null };

const HTML = 'text/html; charset=utf-8';
const hostOf = (request: FastifyRequest) => request.hostname.split(':')[0].toLowerCase();
const localeOf = (request: FastifyRequest) => localeFromAcceptLanguage(request.headers['accept-language']);

/** A request a browser makes for itself (prefetch, prerender, Safari's preview): not a buyer arriving. */
function isSpeculative(request: FastifyRequest): boolean {
  const { headers } = request;
  const purpose = `${headers['sec-purpose'] ?? ''} ${headers.purpose ?? ''} ${headers['x-purpose'] ?? ''} ${headers['x-moz'] ?? ''}`;
  return /prefetch|prerender|preview/i.test(purpose);
}

// Chat apps, social networks and search engines fetch a link to show or index it (Slackbot, Discordbot,
// TelegramBot, LinkedInBot, Googlebot... end in "bot"). App names alone are not matched: Telegram's,
// LinkedIn's or Instagram's in-app browsers carry them while a buyer is paying.
const PREVIEW_AGENTS =
  /bot\b|crawler|spider|slurp|facebookexternalhit|facebookcatalog|meta-externalagent|whatsapp\/|skypeuripreview|embedly|iframely|vkshare|preview/i;

/** A visit that reads the link without buying: it gets the offer page (a human misjudged here still has its button). */
function isLinkPreview(request: FastifyRequest): boolean {
  return request.method === 'HEAD' || PREVIEW_AGENTS.test(String(request.headers['user-agent'] ?? ''));
}

const offerLinkPages: FastifyPluginAsyncTypebox = async (app) => {
  const deps = checkoutDepsOf(app.deps);
  const { db, config } = app.deps;
  const windows = new SharedRateWindows(db);
  const checkoutHost = new URL(deps.checkoutUrl).hostname.toLowerCase();

  const unavailable = (request: FastifyRequest, reply: FastifyReply, status: 404 | 410) =>
    reply
      .status(status)
      .type(HTML)
      .send(renderUnavailablePage(pageLanguage(localeOf(request))));

  /** GET (buyers and previews) and POST (the offer page's buttons): the offer page, or a new checkout. */
  async function answer(
    request: FastifyRequest,
    reply: FastifyReply,
    link: { storeSlug: string | null; ref: string },
    asked: Asked,
    mayOpen: boolean,
  ) {
    const linked = await findLinkedOffer(db, { host: hostOf(request), checkoutHost, ...link });
    if (!linked) return unavailable(request, reply, 404);
    if (!linked.onSale) return unavailable(request, reply, 410);
    const choice = linkChoice(linked.offer, asked);
    const picking = needsPackChoice(linked.offer, choice);
    if (mayOpen && !picking) return open(request, reply, linked, choice);
    const choices = picking ? linked.offer.packs : [choice.pack];
    const page = renderOfferLinkPage(pageLanguage(localeOf(request)), {
      storeName: linked.store.name,
      offer: linked.offer,
      productName: linked.product?.name ?? null,
      currency: choice.currency,
      choices,
      action: request.url.split('?')[0],
    });
    return reply.header('Cache-Control', 'no-store').type(HTML).send(page);
  }

  async function open(request: FastifyRequest, reply: FastifyReply, linked: LinkedOffer, choice: LinkChoice) {
    const locale = localeOf(request);
    const hit = await windows.hit(`offer-link:${clientAddress(request)}`, config.offerLinkRateLimit, config.offerLinkRateWindowMs);
    if (!hit.allowed) {
      const retryAfter = Math.max(1, hit.resetAt - Math.floor(Date.now() / 1000));
      return reply
        .status(429)
        .header('Retry-After', String(retryAfter))
        .type(HTML)
        .send(renderLinkBusyPage(pageLanguage(locale), retryAfter));
    }
    const session = await openOfferLinkSession(deps, linked, choice, locale);
    if (!session) return unavailable(request, reply, 410);
    return reply.header('Cache-Control', 'no-store').redirect(checkoutPageUrl(session.checkout_base, session._id), 303);
  }

  function visit(request: FastifyRequest, reply: FastifyReply, link: { storeSlug: string | null; ref: string }, query: Asked) {
    // Refused rather than answered: a 2xx would be kept and shown on the real visit (a 204 as nothing at all).
    if (isSpeculative(request)) return reply.status(503).header('Cache-Control', 'no-store').header('Vary', 'Sec-Purpose').send();
    return answer(request, reply, link, query, !isLinkPreview(request));
  }

  const options = { config: { public: true }, exposeHeadRoute: false };
  const page = { hide: true, querystring: LinkQuery };
  const button = { hide: true, body: LinkForm };
  app.route({
    method: ['GET', 'HEAD'],
    url: '/o/:ref',
    ...options,
    schema: { ...page, params: OneRef },
    handler: (request, reply) => visit(request, reply, { storeSlug: null, ref: request.params.ref }, request.query),
  });
  app.route({
    method: ['GET', 'HEAD'],
    url: '/o/:store/:ref',
    ...options,
    schema: { ...page, params: StoreAndRef },
    handler: (request, reply) => visit(request, reply, { storeSlug: request.params.store, ref: request.params.ref }, request.query),
  });
  app.post('/o/:ref', { ...options, schema: { ...button, params: OneRef } }, (request, reply) =>
    answer(request, reply, { storeSlug: null, ref: request.params.ref }, request.body, true),
  );
  app.post('/o/:store/:ref', { ...options, schema: { ...button, params: StoreAndRef } }, (request, reply) =>
    answer(request, reply, { storeSlug: request.params.store, ref: request.params.ref }, request.body, true),
  );
};

export default offerLinkPages;
