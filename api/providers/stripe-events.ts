// POST /providers/stripe/events: Stripe's events (webhooks) in, outside /v1 and without an API key. The
// raw body is verified against STRIPE_WEBHOOK_SECRET before anything is read or recorded (400 otherwise);
// a verified event is recorded once and its notice signaled to the waiting workflow (services/provider/
// stripe-events.ts), answered 200 at once, or 503 when the workflow could not be reached (Stripe re-sends).
// An event of the other mode or from another account than the payment's is answered 200, ignored and logged.
// The route is always there: without a Stripe connection it answers 404 naming what is not configured.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../domain/errors';
import { StripeSignatureError, verifyStripeEvent } from '../../adapters/provider/stripe/events';
import { receiveStripeEvent } from '../../services/provider/stripe-events';

/** Stripe's events are a few kilobytes; anything far larger is not one. */
const EVENT_BODY_LIMIT = 256 * 1024;

function signatureOf(header: string | string[] | undefined): string | undefined {
  return Array.isArray(header) ? header[0] : header;
}

export default async function stripeEventRoutes(app: FastifyInstance): Promise<void> {
  // The signature covers the exact bytes Stripe sent: this scope keeps the body raw instead of parsing it.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: EVENT_BODY_LIMIT }, (_request, body, done) => done(null, body));

  app.post('/providers/stripe/events', { config: { public: true }, bodyLimit: EVENT_BODY_LIMIT, schema: { hide: true } }, async (request, reply) => {
    const stripe = app.deps.stripe;
    if (!stripe?.webhookSecret) {
      throw new ApiError('resource_missing', 'Stripe events are not configured on this server (PAYMENT_PROVIDER=stripe and STRIPE_WEBHOOK_SECRET).');
    }
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    let event;
    try {
      event = verifyStripeEvent(raw, signatureOf(request.headers['stripe-signature']), stripe.webhookSecret);
    } catch (error) {
      if (!(error instanceof StripeSignatureError)) throw error;
      const code = error.reason === 'missing' ? 'parameter_missing' : 'parameter_invalid';
      throw new ApiError(code, error.message, { param: 'Stripe-Signature' });
    }
    const result = await receiveStripeEvent(
      {
        db: app.deps.db,
        temporal: app.deps.temporal,
        readIntent: stripe.readIntent,
        livemode: stripe.livemode ?? app.deps.provider.livemode,
        readChargeRefunds: stripe.readChargeRefunds,
        config: app.deps.config,
      },
      event,
    );
    if (result.status === 'unavailable') {
      request.log.warn({ event: event.id, type: event.type, note: result.note }, 'stripe event not delivered yet; Stripe will send it again');
      throw new ApiError('service_unavailable', 'The event could not be delivered yet; send it again.');
    }
    if (result.status === 'ignored' && result.foreign) {
      // Acknowledged so Stripe stops sending it; logged, since it points at a misconfigured endpoint or a foreign account.
      request.log.warn(
        { event: event.id, type: event.type, account: event.account ?? null, livemode: event.livemode, note: result.note },
        'stripe event ignored: not from where the payment was made',
      );
    }
    return reply.status(200).send({ received: true, status: result.status });
  });
}
