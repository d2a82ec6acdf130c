// The local Stripe for `npm start` (docs/going-live.md): localstripe plus the gap-filling layer of
// test/support/stripe-gaps.ts, with their events (localstripe's card events, the layer's PIX events) signed
// and sent to the API's POST /providers/stripe/events. Prints the STRIPE_* values to start the stack with;
// Ctrl-C stops both. Run: npx tsx test/support/stripe-fake-server.ts [API origin, default http://localhost:3000]
import { FAKE_STRIPE_PUBLISHABLE_KEY, FAKE_STRIPE_SECRET_KEY, startLocalstripe } from './stripe-fakes';
import { startStripeGaps } from './stripe-gaps';

/** A fixed, well-formed webhook secret for the local fake only. */
const LOCAL_WEBHOOK_SECRET = 'whsec_localfakelocalfakelocalfake';

const apiOrigin = (process.argv[2] ?? 'http://localhost:3000').replace(/\/$/, '');
const webhook = { url: `${apiOrigin}/providers/stripe/events`, secret: LOCAL_WEBHOOK_SECRET };
const localstripe = await startLocalstripe();
const gaps = await startStripeGaps(localstripe.url, { webhook });
// localstripe signs its own events (payment_intent.succeeded after 3-D Secure, ...) with the same secret.
await fetch(`${localstripe.url}/_config/webhooks/api`, {
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams({ url: webhook.url, secret: webhook.secret }).toString(),
});
console.log(`Local Stripe (localstripe ${localstripe.url} behind ${gaps.url}); start the stack with:

PAYMENT_PROVIDER=stripe STRIPE_SECRET_KEY=${FAKE_STRIPE_SECRET_KEY} STRIPE_PUBLISHABLE_KEY=${FAKE_STRIPE_PUBLISHABLE_KEY} \\
  STRIPE_WEBHOOK_SECRET=${LOCAL_WEBHOOK_SECRET} STRIPE_API_URL=${gaps.url} STRIPE_JS_URL=${gaps.jsUrl} npm start

Pay a pending PIX: curl -X POST ${gaps.url}/_gaps/pix/<pi_pix…>/paid   (its signed event goes to ${webhook.url})`);

const stop = async () => {
  await gaps.close();
  await localstripe.stop();
  process.exit(0);
};
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());
