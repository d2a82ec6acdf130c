// The pages buyers and customers open in a browser (hosted checkout, customer portal, the API's
// error reference at /docs) and their assets, outside /v1 and without an API key. Every page answer
// carries a strict Content-Security-Policy (scripts and styles only from this origin, nothing inline;
// with a Stripe connection also Stripe.js's origin: content-security.ts) and is never framed; failures
// render as a page, not as an API error object.
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import checkoutPages from './checkout';
import offerLinkPages from './offer-links';
import portalPages from './portal';
import docsPage from './docs';
import { PAGES_CSS, PAGES_JS } from './assets';
import { renderBrokenPage, renderTooManyAttemptsPage } from './refusal-views';
import { slowCardTesting } from './card-testing';
import { SharedRateWindows } from '../../store/rate-counters';
import { redactPath } from '../redact';
import { contentSecurityPolicy } from './content-security';
import { clientAddress } from '../client-address';
import { choosePageLanguage } from '../../i18n/pages';

/** The browser's language (Accept-Language): these answers come before any session or customer is read. */
const browserLanguage = (request: FastifyRequest) => choosePageLanguage([], request.headers['accept-language']);

export { CONTENT_SECURITY_POLICY } from './content-security';

/**
 * Card testing through the pages is bounded per address (PAGE_POST_RATE_LIMIT per window), across
 * every API process; beyond it a page says when to come back (429, Retry-After). The limit is the
 * route's (config.paymentSubmit), never a pattern on the raw URL: every encoding of a path counts alike.
 */
function limitPaymentSubmits(app: FastifyInstance): void {
  const { config, db } = app.deps;
  const windows = new SharedRateWindows(db);
  app.addHook('onRequest', async (request, reply) => {
    const submit = request.routeOptions.config?.paymentSubmit;
    if (!submit || (submit !== true && !submit(request.params as Record<string, string>))) return;
    const hit = await windows.hit(`page-pay:${clientAddress(request)}`, config.pagePostRateLimit, config.pagePostRateWindowMs);
    if (hit.allowed) return;
    const retryAfter = Math.max(1, hit.resetAt - Math.floor(Date.now() / 1000));
    return reply
      .status(429)
      .header('Retry-After', String(retryAfter))
      .type('text/html; charset=utf-8')
      .send(renderTooManyAttemptsPage(browserLanguage(request), retryAfter));
  });
}

export default async function pages(app: FastifyInstance): Promise<void> {
  // Stripe.js's origin joins the policy where the pages load it (PAYMENT_PROVIDER=stripe).
  const policy = contentSecurityPolicy(app.deps.stripe?.jsUrl);
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('Content-Security-Policy', policy);
    reply.header('X-Content-Type-Options', 'nosniff');
    reply.header('X-Frame-Options', 'DENY');
    reply.header('Referrer-Policy', 'same-origin');
    return payload;
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = (error as { statusCode?: number }).statusCode;
    if (status && status >= 400 && status < 500) {
      request.log.info({ code: (error as { code?: string }).code, url: redactPath(request.url) }, 'page request refused');
    } else {
      // The error only: page bodies (card fields) are never logged.
      request.log.error({ err: { message: error.message, stack: error.stack }, requestId: request.id }, 'page failed');
    }
    return reply
      .status(status && status >= 400 && status < 500 ? status : 500)
      .type('text/html; charset=utf-8')
      .send(renderBrokenPage(browserLanguage(request), request.id));
  });

  const asset = (content: string, type: string) => async (_request: unknown, reply: import('fastify').FastifyReply) =>
    reply.header('Cache-Control', 'public, max-age=86400, immutable').type(type).send(content);
  app.get('/assets/pages.css', { config: { public: true }, schema: { hide: true } }, asset(PAGES_CSS, 'text/css; charset=utf-8'));
  app.get('/assets/pages.js', { config: { public: true }, schema: { hide: true } }, asset(PAGES_JS, 'text/javascript; charset=utf-8'));

  limitPaymentSubmits(app);
  slowCardTesting(app);
  await app.register(checkoutPages);
  await app.register(offerLinkPages);
  await app.register(portalPages);
  await app.register(docsPage);
}
