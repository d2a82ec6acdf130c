// The hosted checkout at {checkout_url}/c/{id}: the payment form (open), the thank-you page (paid,
// then success_url after redirect_delay), the PIX / review page that waits (pending), the failed
// page, and expired sessions sent to cancel_url or the unavailable-link page. The form posts here;
// the session workflow runs the payment; the page waits for its outcome up to a bound, else shows
// "processing" (?processing=1), which polls until the attempt has landed.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { checkoutDepsOf, type RouteApp } from '../context';
import { requestOverdueExpiry, type CheckoutDeps } from '../../services/checkout/sessions';
import {
  awaitActionLanded,
  installmentsOffered,
  payCheckoutSession,
  recheckPendingCard,
  settleFromHostedPage,
  testButtonsShown,
  transactionToRecheck,
} from '../../services/checkout/payments';
import { attemptInFlightRecently } from '../../services/checkout/attempt-probe';
import { connectionFor } from '../../adapters/provider';
import type { StripeWebSettings } from '../../adapters/provider/stripe/web';
import type { StoreDoc } from '../../store/collections';
import { findCheckoutSessionForPage, storeActionSecret, storePixImage, type CheckoutSessionDoc } from '../../store/checkout-sessions';
import { sealerFor, type Sealer } from '../sealing';
import { PageProviderReads } from './provider-reads';
import { findOrder } from '../../store/orders';
import { findStore } from '../../store/stores';
import { findCustomer } from '../../store/customers';
import { effectiveStatus } from '../../domain/checkout';
import type { Language } from '../../i18n/languages';
import { choosePageLanguage } from '../../i18n/pages';
import {
  renderCheckoutPage,
  renderFailedPage,
  renderPendingPage,
  renderProcessingPage,
  renderThankYouPage,
  renderUnavailablePage,
  type FormValues,
  type StripeFieldView,
  type StripePendingView,
} from './checkout-views';

const SessionParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const PageQuery = Type.Object({
  currency: Type.Optional(Type.String({ maxLength: 10 })),
  done: Type.Optional(Type.String({ maxLength: 5 })),
  processing: Type.Optional(Type.String({ maxLength: 5 })),
});
const Text = Type.Optional(Type.Union([Type.Null(), Type.String({ maxLength: 500 })]));
// The buyer's form: every field optional here, checked by the payment rules (errors render on the page).
const PayForm = Type.Object({
  method: Text,
  method_choice: Text,
  currency: Text,
  email: Text,
  name: Text,
  phone: Text,
  document_type: Text,
  document_number: Text,
  card_number: Text,
  card_expiry: Text,
  card_cvc: Text,
  installments: Text,
  /** The pm_ id Stripe.js made in the page (a Stripe connection); ignored by the test connection's form. */
  payment_method: Text,
});
const SettleForm = Type.Object({ outcome: Type.Union([Type.Literal('paid'), Type.Literal('refused')]) });
const StatusResponse = Type.Object({ status: Type.String(), payment_status: Type.String(), next: Type.String() });

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** "MM/YY" or "MM/YYYY" -> month and four-digit year; absent or malformed -> undefined (the provider decides). */
function parseExpiry(text: string | null | undefined): { exp_month?: number; exp_year?: number } {
  const match = /^\s*(\d{1,2})\s*\/\s*(\d{2}|\d{4})\s*$/.exec(text ?? '');
  if (!match) return {};
  const month = Number(match[1]);
  const year = match[2].length === 2 ? 2000 + Number(match[2]) : Number(match[2]);
  return month >= 1 && month <= 12 ? { exp_month: month, exp_year: year } : {};
}

/** What the page routes share: the sealer of stored client secrets, and the bound on provider reads pages cause. */
interface PageSecrets {
  sealer: Sealer;
  reads: PageProviderReads;
}

const checkoutPages: FastifyPluginAsyncTypebox = async (app) => {
  const secrets: PageSecrets = { sealer: sealerFor(app.deps.config.secretsKey), reads: new PageProviderReads(app.deps.db) };
  sessionPageRoute(app, secrets);
  payRoute(app, secrets);
  statusRoute(app);
  testSettleRoute(app);
  confirmRoute(app, secrets);
};

/** The store's connected Stripe account (Stripe Connect), when it names one. */
const stripeAccountOf = (store: StoreDoc | null) => store?.stripe_account ?? null;

/**
 * Stripe.js's card field, where the session pays through the Stripe connection (a test clock's session
 * beside a live key pays through the test connection, which keeps its own fields).
 */
function stripeFieldFor(
  stripe: StripeWebSettings | null | undefined,
  deps: CheckoutDeps,
  session: CheckoutSessionDoc,
  store: StoreDoc | null,
): StripeFieldView | null {
  if (!stripe || connectionFor(deps, Boolean(session.test_clock)) !== deps.provider) return null;
  return { publishableKey: stripe.publishableKey, account: stripeAccountOf(store), jsUrl: stripe.jsUrl };
}

/** What a pending Stripe payment shows (the PIX QR image), from the session's own record: a page view never asks Stripe. */
function stripePendingView(
  stripe: StripeWebSettings | null | undefined,
  deps: CheckoutDeps,
  session: CheckoutSessionDoc,
  store: StoreDoc | null,
): StripePendingView | null {
  const field = stripeFieldFor(stripe, deps, session, store);
  return field ? { ...field, clientSecret: null, pixImageUrl: session.payment?.pix_image_url ?? null } : null;
}

/** An open session's card waiting for 3-D Secure: the bank's step with the stored client secret (opened here), or a button that reads it. */
function stripeActionView(field: StripeFieldView | null, session: CheckoutSessionDoc, sealer: Sealer): StripePendingView | null {
  const action = session.pending_action;
  if (!field || !action) return null;
  return { ...field, clientSecret: openedSecret(action.client_secret, sealer), pixImageUrl: null };
}

/** A stored client secret opened; null when none yet or sealed under another SECRETS_KEY (rotated): the confirm button reads it again. */
function openedSecret(sealed: string | null, sealer: Sealer): string | null {
  if (!sealed) return null;
  try {
    return sealer.open(sealed);
  } catch {
    return null;
  }
}

/**
 * The one read of a payment's page data right after the attempt (the client secret of a 3-D Secure, a PIX's
 * QR image), kept on the session (the secret sealed); bounded per session and store. Best effort: a page
 * without it offers the confirm button (3-D Secure) or the copy-paste code (PIX).
 */
async function readPaymentOnce(
  app: RouteApp,
  secrets: PageSecrets,
  session: CheckoutSessionDoc,
  field: StripeFieldView,
  transactionId: string,
  log: FastifyRequest['log'],
): Promise<void> {
  try {
    if (!(await secrets.reads.allow(session.store_id, session._id))) return;
    const payment = await app.deps.stripe!.readPagePayment(transactionId, field.account);
    if (payment?.clientSecret) await storeActionSecret(app.deps.db, session._id, transactionId, secrets.sealer.seal(payment.clientSecret));
    if (payment?.pix?.imageUrl) await storePixImage(app.deps.db, session._id, transactionId, payment.pix.imageUrl);
  } catch (error) {
    log.warn({ err: (error as Error).message }, 'the payment page data could not be read now');
  }
}

const HTML = 'text/html; charset=utf-8';

function hostnameOf(url: string): string | null {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return null;
  }
}

/**
 * The session, when this request came to its checkout host: {checkout_url}'s, or the store's custom
 * domain it was created under. Another host (the API's, a look-alike) gets the unavailable page.
 */
async function sessionServedHere(deps: CheckoutDeps, request: FastifyRequest, id: string): Promise<CheckoutSessionDoc | null> {
  const session = await findCheckoutSessionForPage(deps.db, id);
  if (!session) return null;
  const host = request.hostname.split(':')[0].toLowerCase();
  return host === hostnameOf(deps.checkoutUrl) || host === hostnameOf(session.checkout_base) ? session : null;
}

/** The language of a page no session names: the browser's (Accept-Language), else English. */
const browserLanguage = (request: FastifyRequest) => choosePageLanguage([], request.headers['accept-language']);

/** A session's language: its locale, else its customer's, else the browser's, else English. */
async function sessionLanguage(deps: CheckoutDeps, session: CheckoutSessionDoc, request: FastifyRequest): Promise<Language> {
  const customer = session.locale || !session.customer ? null : await findCustomer(deps.db, session.store_id, session.customer);
  return choosePageLanguage([session.locale, customer?.locale], request.headers['accept-language']);
}

/** The page a session shows now: the form while open, else its outcome (or the cancel URL once expired). */
async function renderSession(
  deps: CheckoutDeps,
  session: CheckoutSessionDoc,
  lang: Language,
  options: { currency?: string; done?: boolean; processing?: boolean; stripe?: StripeWebSettings | null; sealer: Sealer },
) {
  const status = effectiveStatus(session, nowSeconds());
  if (status === 'expired') {
    // Overdue but not yet marked: the workflow marks it now (its timer may be a moment behind).
    if (session.status === 'open') void requestOverdueExpiry(deps, session._id);
    if (session.cancel_url) return { redirect: session.cancel_url };
    return { status: 410, body: renderUnavailablePage(lang) };
  }
  if (status === 'open') {
    // After a submit: while the workflow still charges (or cannot be asked), the buyer waits instead of paying again.
    const unsettled = options.processing ? await attemptInFlightRecently(deps, session._id) : false;
    if (unsettled !== false) return { status: 200, body: renderProcessingPage(lang, session, unsettled === 'unknown') };
    const stripe = options.stripe ? stripeFieldFor(options.stripe, deps, session, await findStore(deps.db, session.store_id)) : null;
    const action = stripeActionView(stripe, session, options.sealer);
    return {
      status: 200,
      body: renderCheckoutPage(lang, session, {
        currency: options.currency,
        pixAvailable: true,
        installmentsIn: installmentsOffered(deps, session),
        stripe,
        action,
      }),
    };
  }
  const order = session.order ? await findOrder(deps.db, session.store_id, session.order) : null;
  if (session.payment_status === 'paid') return { status: 200, body: renderThankYouPage(lang, session, order, Boolean(options.done)) };
  if (session.payment_status === 'pending') {
    const store = await findStore(deps.db, session.store_id);
    const stripe = stripePendingView(options.stripe, deps, session, store);
    return { status: 200, body: renderPendingPage(lang, session, order, testButtonsShown(deps, session), store?.timezone ?? 'UTC', stripe) };
  }
  return { status: 200, body: renderFailedPage(lang, session) };
}

/** The unavailable-link page (404) in the browser's language: no such session, or not one this host serves. */
function sendUnavailable(request: FastifyRequest, reply: FastifyReply) {
  return reply
    .status(404)
    .type(HTML)
    .send(renderUnavailablePage(browserLanguage(request)));
}

/** GET /c/:id: the session's page. */
function sessionPageRoute(app: RouteApp, secrets: PageSecrets): void {
  const deps = checkoutDepsOf(app.deps);
  app.get('/c/:id', { config: { public: true }, schema: { hide: true, params: SessionParams, querystring: PageQuery } }, async (request, reply) => {
    const session = await sessionServedHere(deps, request, request.params.id);
    if (!session) return sendUnavailable(request, reply);
    const { currency, done, processing } = request.query;
    const lang = await sessionLanguage(deps, session, request);
    const page = await renderSession(deps, session, lang, {
      currency,
      done: done === '1',
      processing: processing === '1',
      stripe: app.deps.stripe,
      sealer: secrets.sealer,
    });
    if ('redirect' in page) return reply.redirect(page.redirect!, 303);
    return reply.status(page.status).type(HTML).send(page.body);
  });
}

/** POST /c/:id/pay: the pay button; a refusal shows the form again with its message. */
function payRoute(app: RouteApp, secrets: PageSecrets): void {
  const deps = checkoutDepsOf(app.deps);
  app.post(
    '/c/:id/pay',
    { config: { public: true, paymentSubmit: true }, schema: { hide: true, params: SessionParams, body: PayForm } },
    async (request, reply) => {
      const session = await sessionServedHere(deps, request, request.params.id);
      if (!session) return sendUnavailable(request, reply);
      const form = request.body;
      const method = form.method === 'pix' ? 'pix' : 'card';
      const installments = form.installments ? Number(form.installments) : null;
      const store = app.deps.stripe ? await findStore(deps.db, session.store_id) : null;
      const stripe = stripeFieldFor(app.deps.stripe, deps, session, store);
      const result = await payCheckoutSession(deps, session, {
        providerCardField: Boolean(stripe),
        paymentMethod: stripe ? form.payment_method : null,
        method,
        email: form.email,
        name: form.name,
        phone: form.phone,
        document_type: form.document_type,
        document_number: form.document_number,
        currency: form.currency,
        installments,
        card: method === 'card' ? { number: form.card_number ?? '', cvc: form.card_cvc ?? undefined, ...parseExpiry(form.card_expiry) } : null,
      });
      if (result.kind === 'closed') return reply.redirect(`/c/${session._id}`, 303);
      if (result.kind === 'action') {
        if (stripe) await readPaymentOnce(app, secrets, session, stripe, result.transactionId, request.log);
        return reply.redirect(`/c/${session._id}`, 303);
      }
      if (result.kind === 'done') {
        // A PIX made now: its QR image is read once and kept, so the pending page never asks Stripe.
        const made = stripe && method === 'pix' ? await findCheckoutSessionForPage(deps.db, session._id) : null;
        const pix = made?.payment?.method === 'pix' ? made.payment.transaction_id : null;
        if (stripe && pix) await readPaymentOnce(app, secrets, session, stripe, pix, request.log);
        return reply.redirect(`/c/${session._id}?done=1`, 303);
      }
      if (result.kind === 'processing') return reply.redirect(`/c/${session._id}?processing=1`, 303);
      // Declined or a field to fix: the same form again with the message; the card number is not echoed.
      const values: FormValues = {
        email: form.email,
        name: form.name,
        phone: form.phone,
        document_type: form.document_type,
        document_number: form.document_number,
        method,
        installments,
      };
      const fresh = (await findCheckoutSessionForPage(deps.db, session._id)) ?? session;
      const lang = await sessionLanguage(deps, fresh, request);
      const status = result.field === 'payment' ? 402 : 400;
      return reply
        .status(status)
        .type(HTML)
        .send(
          renderCheckoutPage(lang, fresh, {
            currency: form.currency,
            error: result,
            values,
            pixAvailable: true,
            installmentsIn: installmentsOffered(deps, fresh),
            stripe,
          }),
        );
    },
  );
}

/**
 * GET /c/:id/status: what the waiting pages poll; an open session with an attempt charging (or unknown) is
 * `processing`, one whose card waits for 3-D Secure `action_required`. Our own state only: never the provider.
 */
function statusRoute(app: RouteApp): void {
  const deps = checkoutDepsOf(app.deps);
  app.get(
    '/c/:id/status',
    { config: { public: true }, schema: { hide: true, params: SessionParams, response: { 200: StatusResponse, 404: StatusResponse } } },
    async (request, reply) => {
      const session = await sessionServedHere(deps, request, request.params.id);
      if (!session) return reply.status(404).send({ status: 'expired', payment_status: 'unpaid', next: `/c/${request.params.id}` });
      const status = effectiveStatus(session, nowSeconds());
      const next = status === 'complete' && session.payment_status === 'paid' ? `/c/${session._id}?done=1` : `/c/${session._id}`;
      const processing = status === 'open' && (await attemptInFlightRecently(deps, session._id)) !== false;
      // A card waiting for 3-D Secure: the page reloads once it lands (paid, or declined by the provider's event).
      const action = status === 'open' && !processing && session.pending_action ? 'action_required' : null;
      return { status: processing ? 'processing' : (action ?? status), payment_status: session.payment_status, next };
    },
  );
}

/** POST /c/:id/test/settle: the test connection's buttons settle a pending PIX or review. */
function testSettleRoute(app: RouteApp): void {
  const deps = checkoutDepsOf(app.deps);
  app.post(
    '/c/:id/test/settle',
    { config: { public: true }, schema: { hide: true, params: SessionParams, body: SettleForm } },
    async (request, reply) => {
      const session = await sessionServedHere(deps, request, request.params.id);
      if (!session) return sendUnavailable(request, reply);
      if (testButtonsShown(deps, session)) await settleFromHostedPage(deps, session, request.body.outcome);
      return reply.redirect(`/c/${session._id}`, 303);
    },
  );
}

/** How long a confirm waits for the 3-D Secure's outcome to land before showing the page again. */
const CONFIRM_LANDING_WAIT_MS = 5_000;

/**
 * POST /c/:id/confirm: the page finished Stripe's next action (3-D Secure). The provider is asked once
 * (the client secret, when the page has none yet; else what became of the payment), bounded per session
 * and store beside the page payment limit; the outcome reaches the workflow as its event would.
 */
function confirmRoute(app: RouteApp, secrets: PageSecrets): void {
  const deps = checkoutDepsOf(app.deps);
  app.post(
    '/c/:id/confirm',
    { config: { public: true, paymentSubmit: true }, schema: { hide: true, params: SessionParams } },
    async (request, reply) => {
      const session = await sessionServedHere(deps, request, request.params.id);
      if (!session) return sendUnavailable(request, reply);
      const transactionId = transactionToRecheck(session);
      if (transactionId && (await secrets.reads.allow(session.store_id, session._id))) {
        await confirmOnce(app, deps, secrets, session, transactionId).catch((error: Error) =>
          // The provider unreachable now: its event still comes, and the page keeps polling.
          request.log.warn({ err: error.message }, 'pending card re-check failed'),
        );
      }
      return reply.redirect(`/c/${session._id}`, 303);
    },
  );
}

/** One provider read: the missing client secret of an open session's 3-D Secure, else the payment's outcome (delivered as its notice). */
async function confirmOnce(app: RouteApp, deps: CheckoutDeps, secrets: PageSecrets, session: CheckoutSessionDoc, transactionId: string) {
  const action = session.status === 'open' ? session.pending_action : null;
  const store = action && !action.client_secret ? await findStore(deps.db, session.store_id) : null;
  const field = store ? stripeFieldFor(app.deps.stripe, deps, session, store) : null;
  if (field) {
    const payment = await app.deps.stripe!.readPagePayment(transactionId, field.account);
    if (payment?.clientSecret) return storeActionSecret(app.deps.db, session._id, transactionId, secrets.sealer.seal(payment.clientSecret));
    // No longer waiting for the buyer: its outcome is a second read, counted too.
    if (!(await secrets.reads.allow(session.store_id, session._id))) return;
  }
  if (!(await recheckPendingCard(deps, session))) return;
  if (action) await awaitActionLanded(deps, session, transactionId, CONFIRM_LANDING_WAIT_MS);
}

export default checkoutPages;
