// The customer portal at the store's portal address ({portal_url}/{slug}, or its custom domain's
// root): the sign-in link (works once, within 15 minutes) shows whose account it opens and, on one
// click, opens a portal session kept in an HttpOnly cookie (Secure when the portal is served over
// https); the account page lists the customer's subscriptions and orders and lets them cancel at
// period end, keep a subscription whose cancellation is scheduled, and replace the card. Forms carry
// an anti-forgery token derived from the portal session; a store that turns its portal off closes it at once.
// A renewal the bank asked the buyer to confirm has its own page, opened by the e-mailed link alone
// (`payments/<token>`, no sign-in): Stripe.js confirms that payment with 3-D Secure there.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { Database } from '../../store/database';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { StoreDoc } from '../../store/collections';
import type { SubscriptionDoc } from '../../store/subscriptions';
import { connectionFor } from '../../adapters/provider';
import type { StripeWebSettings } from '../../adapters/provider/stripe/web';
import type { StripeFieldView } from './checkout-views';
import { findCustomer } from '../../store/customers';
import { findStoreByAddress } from '../../store/stores';
import {
  claimPortalLink,
  closePortalLogin,
  findPortalLink,
  findPortalLogin,
  openPortalLogin,
  sweepPortalDocs,
  type PortalLinkDoc,
  type PortalLoginDoc,
} from '../../store/portal-sessions';
import {
  cancelAtPeriodEndFromPortal,
  portalOrders,
  portalSubscriptions,
  reactivateFromPortal,
  replaceCardFromPortal,
  type PortalActionResult,
  type PortalDeps,
} from '../../services/portal';
import { PORTAL_SESSION_TTL_SECONDS } from '../../domain/checkout';
import type { Language } from '../../i18n/languages';
import { choosePageLanguage } from '../../i18n/pages';
import {
  renderAccountPage,
  renderPortalOffPage,
  renderRenewalConfirmationPage,
  renderSignedOutPage,
  renderSignInConfirmPage,
  renderSignInInvalidPage,
  type RenewalConfirmationPageView,
} from './portal-views';
import { renderTooManyAttemptsPage } from './refusal-views';
import { confirmRenewalPayment, renewalConfirmationView, type RenewalConfirmationDeps } from '../../services/renewal-confirmations';
import { sweepRenewalConfirmations } from '../../store/renewal-confirmations';

export const PORTAL_COOKIE = 'portal_session';
const HTML = 'text/html; charset=utf-8';

const TokenParams = Type.Object({ slug: Type.Optional(Type.String({ maxLength: 100 })), token: Type.String({ maxLength: 100 }) });
const SlugParams = Type.Object({ slug: Type.Optional(Type.String({ maxLength: 100 })) });
const ActionParams = Type.Object({
  slug: Type.Optional(Type.String({ maxLength: 100 })),
  id: Type.String({ maxLength: 64 }),
  action: Type.Union([Type.Literal('cancel'), Type.Literal('reactivate'), Type.Literal('card')]),
});
const ActionForm = Type.Object({
  csrf: Type.String({ maxLength: 128 }),
  card_number: Type.Optional(Type.Union([Type.Null(), Type.String({ maxLength: 40 })])),
  /** The pm_ id a provider's card field (Stripe.js) made in the page, instead of a number. */
  payment_method: Type.Optional(Type.Union([Type.Null(), Type.String({ maxLength: 128 })])),
});
const SignOutForm = Type.Object({ csrf: Type.String({ maxLength: 128 }) });
const ConfirmQuery = Type.Object({ failed: Type.Optional(Type.String({ maxLength: 20 })) });
const DoneQuery = Type.Object({
  done: Type.Optional(Type.String({ maxLength: 20 })),
  failed: Type.Optional(Type.String({ maxLength: 300 })),
});

function readCookie(request: FastifyRequest, name: string): string | null {
  const header = request.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return decodeURIComponent(rest.join('='));
  }
  return null;
}

function csrfToken(login: PortalLoginDoc): string {
  return createHmac('sha256', login.csrf_secret).update(`portal:${login._id}`).digest('hex');
}

function csrfValid(login: PortalLoginDoc, sent: string): boolean {
  const expected = Buffer.from(csrfToken(login));
  const given = Buffer.from(sent);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** The path of {portal_url} ('/portal' by default, '' when it is a host's root): the routes live under it. */
export function portalRoutePath(portalUrl: string): string {
  return new URL(portalUrl).pathname.replace(/\/+$/, '');
}

function hostOf(request: FastifyRequest): string {
  return (request.headers.host ?? '').split(':')[0].toLowerCase();
}

/** The store this portal address belongs to: by slug, or by the custom domain the request came to. */
async function storeAt(request: FastifyRequest, slug: string | undefined): Promise<StoreDoc | null> {
  return findStoreByAddress(request.server.deps.db, slug ? { slug } : { customDomain: hostOf(request) });
}

function cookieHeader(site: PortalSite, request: FastifyRequest, value: string, maxAge: number): string {
  const secure = site.https || request.protocol === 'https' ? '; Secure' : '';
  return `${PORTAL_COOKIE}=${encodeURIComponent(value)}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure}`;
}

/** What every portal handler needs: the database, the portal's services and the path it is served under. */
interface PortalSite {
  db: Database;
  deps: PortalDeps;
  /** Sign-in links are built from PORTAL_URL (portalAddress), so the routes follow its path. */
  path: string;
  /** PORTAL_URL is https (a TLS proxy in front): cookies are Secure even though this hop is http. */
  https: boolean;
  /** Stripe.js's settings with a Stripe connection (the card change draws its field), else null. */
  stripe: StripeWebSettings | null;
  /** A renewal's 3-D Secure confirmed by the buyer (the e-mailed link's page). */
  confirmations: RenewalConfirmationDeps;
}

const portalPages: FastifyPluginAsyncTypebox = async (app) => {
  const { db, provider, testProvider, temporal, config } = app.deps;
  const site: PortalSite = {
    db,
    deps: { db, provider, testProvider, temporal, taskQueue: config.taskQueue },
    path: portalRoutePath(config.portalUrl),
    https: new URL(config.portalUrl).protocol === 'https:',
    stripe: app.deps.stripe ?? null,
    confirmations: { db, temporal, readRenewalPayment: app.deps.stripe?.readRenewalPayment ?? null },
  };

  const sweep = () => Promise.all([sweepPortalDocs(db), sweepRenewalConfirmations(db)]);
  const sweeper = setInterval(() => sweep().catch((err) => app.log.warn({ err }, 'portal sweep failed')), 60 * 60_000);
  sweeper.unref();
  app.addHook('onClose', async () => clearInterval(sweeper));

  // Under {portal_url}/{slug}, and at the root of a store's custom domain.
  for (const prefix of [`${site.path}/:slug`, '']) {
    const config = { public: true };
    app.get(`${prefix}/session/:token`, { config, schema: { hide: true, params: TokenParams } }, confirmSignIn.bind(null, site));
    app.post(`${prefix}/session/:token`, { config, schema: { hide: true, params: TokenParams } }, signIn.bind(null, site));
    app.get(`${prefix}/account`, { config, schema: { hide: true, params: SlugParams, querystring: DoneQuery } }, account.bind(null, site));
    app.post(
      `${prefix}/account/subscriptions/:id/:action`,
      { config: { ...config, paymentSubmit: ({ action }) => action === 'card' }, schema: { hide: true, params: ActionParams, body: ActionForm } },
      act.bind(null, site),
    );
    // The renewal confirmation link of a buyer's e-mail: each view and post may read the intent at Stripe, so
    // both count in the page payment limit per address (and each link has its own bound of provider reads).
    const confirmConfig = { ...config, paymentSubmit: true as const };
    app.get(
      `${prefix}/payments/:token`,
      { config: confirmConfig, schema: { hide: true, params: TokenParams, querystring: ConfirmQuery } },
      renewalPage.bind(null, site),
    );
    app.post(`${prefix}/payments/:token`, { config: confirmConfig, schema: { hide: true, params: TokenParams } }, renewalConfirm.bind(null, site));
    app.post(`${prefix}/account/sign-out`, { config, schema: { hide: true, params: SlugParams, body: SignOutForm } }, signOut.bind(null, site));
    // A bare /:slug (PORTAL_URL at a host's root) would catch every unknown top-level page.
    if (prefix && site.path) app.get(prefix, { config, schema: { hide: true, params: SlugParams } }, entry.bind(null, site));
  }
};

/** Where the portal lives in this request: under {portal_url}/{slug}, or the custom domain's root. */
function basePath(site: PortalSite, slug: string | undefined): string {
  return slug ? `${site.path}/${encodeURIComponent(slug)}` : '';
}

/** The signed-in customer of this portal address, or null (no cookie, expired, another store). */
async function loginOf(site: PortalSite, request: FastifyRequest, store: StoreDoc | null): Promise<PortalLoginDoc | null> {
  const cookie = readCookie(request, PORTAL_COOKIE);
  if (!cookie || !store) return null;
  const login = await findPortalLogin(site.db, cookie);
  return login && login.store_id === store._id ? login : null;
}

/** A link that still works at this store's address, looked up without using it. */
async function usableLink(site: PortalSite, store: StoreDoc | null, token: string): Promise<PortalLinkDoc | null> {
  const link = await findPortalLink(site.db, token);
  const now = Math.floor(Date.now() / 1000);
  return store && link && link.store_id === store._id && link.used_at === null && link.expires_at > now ? link : null;
}

function maskedEmail(email: string): string {
  const [user, domain] = email.split('@');
  return domain ? `${user.slice(0, 1)}***@${domain}` : '***';
}

/** The portal's language: the customer's locale when it is one of the ten, else the browser's (Accept-Language), else English. */
const portalLanguage = (request: FastifyRequest, customerLocale?: string | null): Language =>
  choosePageLanguage([customerLocale], request.headers['accept-language']);

const invalidLink = (reply: FastifyReply, lang = portalLanguage(reply.request)) =>
  reply.status(410).type(HTML).send(renderSignInInvalidPage(lang, 'signin-invalid'));

const portalOff = (reply: FastifyReply, lang = portalLanguage(reply.request)) => reply.status(403).type(HTML).send(renderPortalOffPage(lang));

/**
 * Opening the link only shows whose account it opens: a link someone else planted (login CSRF) cannot
 * sign a visitor into that account without their click on "Continue as a***@…".
 */
async function confirmSignIn(site: PortalSite, request: FastifyRequest<{ Params: { slug?: string; token: string } }>, reply: FastifyReply) {
  const store = await storeAt(request, request.params.slug);
  if (store && !store.portal_enabled) return portalOff(reply);
  const link = await usableLink(site, store, request.params.token);
  if (!store || !link) return invalidLink(reply);
  const customer = await findCustomer(site.db, store._id, link.customer);
  const lang = portalLanguage(request, customer?.locale);
  return reply.type(HTML).send(renderSignInConfirmPage(lang, store.name, maskedEmail(customer?.email ?? '')));
}

/** A browser says where a form was sent from; one sent from another site is not the customer's click. */
function fromAnotherSite(request: FastifyRequest): boolean {
  if (request.headers['sec-fetch-site'] === 'cross-site') return true;
  const origin = request.headers.origin;
  if (!origin || origin === 'null') return origin === 'null';
  try {
    return new URL(origin).host.toLowerCase() !== (request.headers.host ?? '').toLowerCase();
  } catch {
    return true;
  }
}

async function signIn(site: PortalSite, request: FastifyRequest<{ Params: { slug?: string; token: string } }>, reply: FastifyReply) {
  const { slug, token } = request.params;
  const store = await storeAt(request, slug);
  if (store && !store.portal_enabled) return portalOff(reply);
  // Looked up before it is used, so a link opened at another store's address (or posted from another site) is not burnt.
  if (fromAnotherSite(request) || !(await usableLink(site, store, token))) return invalidLink(reply);
  const claimed = await claimPortalLink(site.db, token);
  if (!claimed) return invalidLink(reply);
  const base = basePath(site, slug);
  const { cookie } = await openPortalLogin(site.db, { storeId: claimed.store_id, customer: claimed.customer, basePath: base });
  reply.header('Set-Cookie', cookieHeader(site, request, cookie, PORTAL_SESSION_TTL_SECONDS));
  return reply.redirect(`${base}/account`, 303);
}

/** Stripe.js's card field for a subscription whose card goes to the Stripe connection (a test clock's goes to the test one). */
function stripeFieldOf(site: PortalSite, store: StoreDoc, sub: SubscriptionDoc): StripeFieldView | null {
  const { stripe, deps } = site;
  if (!stripe || connectionFor(deps, Boolean(sub.test_clock)) !== deps.provider) return null;
  return { publishableKey: stripe.publishableKey, account: store.stripe_account ?? null, jsUrl: stripe.jsUrl };
}

async function account(
  site: PortalSite,
  request: FastifyRequest<{ Params: { slug?: string }; Querystring: { done?: string; failed?: string } }>,
  reply: FastifyReply,
) {
  const { db } = site;
  const { slug } = request.params;
  const store = await storeAt(request, slug);
  if (store && !store.portal_enabled) return portalOff(reply);
  const login = await loginOf(site, request, store);
  if (!store || !login) {
    return reply
      .status(401)
      .type(HTML)
      .send(renderSignInInvalidPage(portalLanguage(request), 'signin-needed'));
  }
  const customer = await findCustomer(db, store._id, login.customer);
  const lang = portalLanguage(request, customer?.locale);
  const [subscriptions, orders] = await Promise.all([
    portalSubscriptions(db, store._id, login.customer),
    portalOrders(db, store._id, login.customer),
  ]);
  const { done, failed } = request.query;
  const view = {
    storeName: store.name,
    email: customer?.email ?? '',
    base: basePath(site, slug),
    csrf: csrfToken(login),
    timeZone: store.timezone,
    subscriptions,
    orders,
    done,
    failed,
    stripeFor: (sub: SubscriptionDoc) => stripeFieldOf(site, store, sub),
  };
  return reply.type(HTML).send(renderAccountPage(lang, view));
}

async function act(
  site: PortalSite,
  request: FastifyRequest<{
    Params: { slug?: string; id: string; action: 'cancel' | 'reactivate' | 'card' };
    Body: { csrf: string; card_number?: string | null; payment_method?: string | null };
  }>,
  reply: FastifyReply,
) {
  const { deps } = site;
  const { slug, id, action } = request.params;
  const store = await storeAt(request, slug);
  if (store && !store.portal_enabled) return portalOff(reply);
  const login = await loginOf(site, request, store);
  const base = basePath(site, slug);
  if (!store || !login || !csrfValid(login, request.body.csrf)) return reply.redirect(`${base}/account`, 303);
  let result: PortalActionResult;
  if (action === 'cancel') result = await cancelAtPeriodEndFromPortal(deps, store._id, login.customer, id);
  else if (action === 'reactivate') result = await reactivateFromPortal(deps, store._id, login.customer, id);
  else {
    const card = { number: request.body.card_number ?? '', paymentMethod: request.body.payment_method || null };
    result = await replaceCardFromPortal(deps, store._id, login.customer, id, card);
  }
  const done = { cancel: 'canceled', reactivate: 'reactivated', card: 'card' }[action];
  const query = result.ok ? `done=${done}` : `failed=${encodeURIComponent(result.reason.slice(0, 200))}`;
  return reply.redirect(`${base}/account?${query}`, 303);
}

async function signOut(site: PortalSite, request: FastifyRequest<{ Params: { slug?: string }; Body: { csrf: string } }>, reply: FastifyReply) {
  const { slug } = request.params;
  const store = await storeAt(request, slug);
  const login = await loginOf(site, request, store);
  const cookie = readCookie(request, PORTAL_COOKIE);
  if (login && cookie && csrfValid(login, request.body.csrf)) await closePortalLogin(site.db, cookie);
  reply.header('Set-Cookie', cookieHeader(site, request, '', 0));
  const customer = login ? await findCustomer(site.db, login.store_id, login.customer) : null;
  const lang = portalLanguage(request, customer?.locale);
  return reply.type(HTML).send(renderSignedOutPage(lang));
}

async function entry(site: PortalSite, request: FastifyRequest<{ Params: { slug?: string } }>, reply: FastifyReply) {
  return reply.redirect(`${basePath(site, request.params.slug)}/account`, 303);
}

export default portalPages;

/** A link's provider reads are spent: come back later (the link itself stays; its renewal is retried by dunning anyway). */
const readsSpent = (reply: FastifyReply, lang: Language) =>
  reply.status(429).header('Retry-After', '3600').type(HTML).send(renderTooManyAttemptsPage(lang, 3600));

/** The page an e-mailed renewal confirmation link opens (never cached: it may carry the intent's client secret). */
async function renewalPage(
  site: PortalSite,
  request: FastifyRequest<{ Params: { slug?: string; token: string }; Querystring: { failed?: string } }>,
  reply: FastifyReply,
) {
  const { slug, token } = request.params;
  const store = await storeAt(request, slug);
  if (store && !store.portal_enabled) return portalOff(reply);
  const view = store ? await renewalConfirmationView(site.confirmations, store, token) : null;
  if (!store || !view) return invalidLink(reply);
  const customer = view.link.customer ? await findCustomer(site.db, store._id, view.link.customer) : null;
  const lang = portalLanguage(request, customer?.locale);
  if (view.state === 'spent') return readsSpent(reply, lang);
  const page: RenewalConfirmationPageView = {
    state: view.state === 'open' && request.query.failed ? 'failed' : view.state,
    storeName: store.name,
    product: view.sub.product.name || view.sub.offer.name,
    amount: view.order.amount_total,
    currency: view.order.currency,
    action: `${basePath(site, slug)}/payments/${encodeURIComponent(token)}`,
  };
  if (view.state === 'open' && site.stripe) {
    const field = { publishableKey: site.stripe.publishableKey, account: store.stripe_account ?? null, jsUrl: site.stripe.jsUrl };
    page.stripe = { ...field, clientSecret: view.clientSecret, paymentMethodId: view.paymentMethodId };
  }
  return reply.header('Cache-Control', 'no-store').type(HTML).send(renderRenewalConfirmationPage(lang, page));
}

/** What the page's Stripe.js completes with: our server reads the intent and, paid, tells the subscription. */
async function renewalConfirm(site: PortalSite, request: FastifyRequest<{ Params: { slug?: string; token: string } }>, reply: FastifyReply) {
  const { slug, token } = request.params;
  const store = await storeAt(request, slug);
  if (store && !store.portal_enabled) return portalOff(reply);
  const outcome = store && !fromAnotherSite(request) ? await confirmRenewalPayment(site.confirmations, store, token) : null;
  if (!store || !outcome) return invalidLink(reply);
  if (outcome === 'spent') return readsSpent(reply, portalLanguage(request));
  const page = `${basePath(site, slug)}/payments/${encodeURIComponent(token)}`;
  return reply.redirect(outcome === 'not_confirmed' ? `${page}?failed=1` : page, 303);
}
