// The checkout pay route's card-testing gate (services/checkout/card-testing.ts): a card attempt on an
// offer or store past its bound of declined cards waits its turn; meanwhile the buyer gets a 429 page
// in their language saying how many seconds to wait, and the attempt never reaches the provider.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { admitCardAttempt } from '../../services/checkout/card-testing';
import { findCheckoutSessionForPage } from '../../store/checkout-sessions';
import { choosePageLanguage } from '../../i18n/pages';
import { renderCardsSlowedPage } from './refusal-views';

/** Bound to the checkout pay route (config.paymentSubmit === true), after its form is parsed. */
export function slowCardTesting(app: FastifyInstance): void {
  const { db, config } = app.deps;
  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.config?.paymentSubmit !== true) return;
    if ((request.body as { method?: string } | null)?.method === 'pix') return;
    const session = await findCheckoutSessionForPage(db, (request.params as { id: string }).id);
    if (!session || session.status !== 'open') return;
    const gate = await admitCardAttempt(db, config.cardTesting, session);
    if (gate.admitted) return;
    const lang = choosePageLanguage([session.locale], request.headers['accept-language']);
    return reply
      .status(429)
      .header('Retry-After', String(gate.retryAfter))
      .type('text/html; charset=utf-8')
      .send(renderCardsSlowedPage(lang, gate.retryAfter, `/c/${session._id}`));
  });
}
