// What this tests: how a verified Stripe event reads as a provider notice (adapters/provider/stripe/events.ts)
// and the pages' CSP with a Stripe connection (api/pages/content-security.ts): pure, no server.
import { describe, expect, it } from 'vitest';
import type Stripe from 'stripe';
import { readStripeEvent, type IntentReader } from '../../adapters/provider/stripe/events';
import { CONTENT_SECURITY_POLICY, contentSecurityPolicy } from '../../api/pages/content-security';

const routing = { intentId: 'pi_1', notifyRef: 'checkout-session/cs_1', storeId: 'acct_store', chargeKey: 'checkout/cs_1/1', pix: false };
const reads: Array<[string, string | null]> = [];
const reader: IntentReader = async (id, account) => {
  reads.push([id, account]);
  return { ...routing, intentId: id };
};

const event = (type: string, object: Record<string, unknown>, account?: string) =>
  ({ id: 'evt_1', object: 'event', type, created: 1_800_000_000, livemode: false, account, data: { object } }) as unknown as Stripe.Event;
const intent = (extra: Record<string, unknown> = {}) => ({
  id: 'pi_1',
  object: 'payment_intent',
  payment_method_types: ['card'],
  metadata: { notify_ref: 'checkout-session/cs_1', store_id: 'st_1', charge_key: 'checkout/cs_1/1' },
  ...extra,
});

describe('Stripe events as notices', () => {
  it('succeeded pays the transaction named by the intent, for the workflow in metadata.notify_ref', async () => {
    expect(await readStripeEvent(event('payment_intent.succeeded', intent()), reader)).toEqual({
      kind: 'notice',
      storeId: 'st_1',
      chargeKey: 'checkout/cs_1/1',
      notice: { transactionId: 'pi_1', status: 'paid', code: null, message: null, notifyRef: 'checkout-session/cs_1', settledAt: 1_800_000_000 },
    });
  });

  it('a failed card carries its decline code; a failed or canceled PIX is expired', async () => {
    const declined = await readStripeEvent(
      event(
        'payment_intent.payment_failed',
        intent({ last_payment_error: { decline_code: 'insufficient_funds', code: 'card_declined', message: 'No funds.' } }),
      ),
      reader,
    );
    expect(declined).toMatchObject({ kind: 'notice', notice: { status: 'refused', code: 'insufficient_funds', message: 'No funds.' } });
    const pixFailed = await readStripeEvent(event('payment_intent.payment_failed', intent({ payment_method_types: ['pix'] })), reader);
    expect(pixFailed).toMatchObject({ notice: { status: 'expired', code: 'pix_expired' } });
    const pixCanceled = await readStripeEvent(event('payment_intent.canceled', intent({ payment_method_types: ['pix'] })), reader);
    expect(pixCanceled).toMatchObject({ notice: { status: 'expired' } });
    const canceled = await readStripeEvent(event('payment_intent.canceled', intent({ cancellation_reason: 'abandoned' })), reader);
    expect(canceled).toMatchObject({ notice: { status: 'refused', code: 'canceled' } });
  });

  it('review.closed reads its intent on the event’s connected account: approved pays, any other reason refuses', async () => {
    reads.length = 0;
    const approved = await readStripeEvent(event('review.closed', { id: 'prv_1', reason: 'approved', payment_intent: 'pi_9' }, 'acct_9'), reader);
    expect(approved).toMatchObject({ kind: 'notice', notice: { transactionId: 'pi_9', status: 'paid' } });
    const fraud = await readStripeEvent(event('review.closed', { id: 'prv_2', reason: 'refunded_as_fraud', payment_intent: 'pi_9' }), reader);
    expect(fraud).toMatchObject({ notice: { status: 'refused', message: 'The provider closed the review: refunded_as_fraud.' } });
    expect(reads).toEqual([
      ['pi_9', 'acct_9'],
      ['pi_9', null],
    ]);
  });

  it('charge.refunded refuses the charge’s intent (read when the charge carries no notify_ref)', async () => {
    reads.length = 0;
    const own = await readStripeEvent(
      event('charge.refunded', { id: 'ch_1', payment_intent: 'pi_5', metadata: { notify_ref: 'charge/st_1/k' } }),
      reader,
    );
    expect(own).toMatchObject({ notice: { transactionId: 'pi_5', status: 'refused', code: 'refunded', notifyRef: 'charge/st_1/k' } });
    expect(reads).toEqual([]);
    const read = await readStripeEvent(event('charge.refunded', { id: 'ch_2', payment_intent: 'pi_6', metadata: {} }), reader);
    expect(read).toMatchObject({ notice: { transactionId: 'pi_6', notifyRef: 'checkout-session/cs_1' } });
    const partial = await readStripeEvent(
      event('charge.refunded', { id: 'ch_3', payment_intent: 'pi_7', amount: 19700, amount_refunded: 5000, metadata: {} }),
      reader,
    );
    expect(partial).toMatchObject({ refund: { amount: 19700, amountRefunded: 5000 } });
  });

  it('nothing to deliver: processing, an intent without notify_ref, other types', async () => {
    expect(await readStripeEvent(event('payment_intent.processing', intent()), reader)).toMatchObject({ kind: 'none', intentId: 'pi_1' });
    expect(await readStripeEvent(event('payment_intent.succeeded', intent({ metadata: {} })), reader)).toMatchObject({ kind: 'none' });
    expect(await readStripeEvent(event('customer.created', { id: 'cus_1' }), reader)).toMatchObject({ kind: 'none' });
  });
});

describe('the pages’ Content-Security-Policy', () => {
  it('is the strict policy without Stripe', () => {
    expect(contentSecurityPolicy(null)).toBe(CONTENT_SECURITY_POLICY);
    expect(CONTENT_SECURITY_POLICY).not.toContain('frame-src');
  });

  it('admits Stripe.js, its 3-D Secure frames, its API and QR images for js.stripe.com', () => {
    const policy = contentSecurityPolicy('https://js.stripe.com/v3/');
    expect(policy).toContain("script-src 'self' https://js.stripe.com https://*.js.stripe.com");
    expect(policy).toContain('frame-src https://js.stripe.com https://*.js.stripe.com https://hooks.stripe.com');
    expect(policy).toContain("connect-src 'self' https://api.stripe.com");
    expect(policy).toContain("img-src 'self' data: https://*.stripe.com");
    expect(policy).toContain("frame-ancestors 'none'");
  });

  it('admits only a local fake’s own origin', () => {
    const policy = contentSecurityPolicy('http://127.0.0.1:4000/js.stripe.com/v3/');
    expect(policy).toContain("script-src 'self' http://127.0.0.1:4000;");
    expect(policy).not.toContain('stripe.com');
  });
});
