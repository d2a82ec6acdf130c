// What the API process needs of a Stripe connection beside the adapter: the webhook secret that verifies
// its events, the publishable key and Stripe.js address of the hosted page's card field, and a reader of a
// PaymentIntent's routing (events about charges and reviews carry no intent metadata). Read from STRIPE_*.
import Stripe from 'stripe';
import { refundRecordOf, routingOfIntent, type ChargeRefundsReader, type IntentReader, type StripeRefundRecord } from './events';
import { REFUND_LOOKUP_PAGE_SIZE, REFUND_LOOKUP_PAGES } from './refunds';
import { createStripeClient } from './client';
import { readStripeConfig } from './config';

export interface StripeWebSettings {
  /** STRIPE_WEBHOOK_SECRET (whsec_…): null answers the events endpoint 404 (not configured). */
  webhookSecret: string | null;
  /** STRIPE_PUBLISHABLE_KEY (pk_…): the page's Stripe.js is created with it. */
  publishableKey: string;
  /** STRIPE_JS_URL: where the page loads Stripe.js from (its origin joins the page's CSP). */
  jsUrl: string;
  readIntent: IntentReader;
  /** The connection's mode (its secret key's): events of the other mode are ignored. Absent: the store connection's. */
  livemode?: boolean;
  /** Reads a charge's refunds (charge.refunded carries them only in older API versions). */
  readChargeRefunds?: ChargeRefundsReader;
  /** What the hosted page shows of a pending payment: a 3-D Secure client secret, a PIX QR code. */
  readPagePayment: PagePaymentReader;
  /** The renewal a buyer confirms in the portal (3-D Secure); absent: the portal has nothing to confirm with. */
  readRenewalPayment?: RenewalPaymentReader;
}

/** A renewal's PaymentIntent as the portal's confirmation page needs it; the client secret only while it can be confirmed. */
export interface RenewalPayment {
  status: Stripe.PaymentIntent.Status;
  storeId: string | null;
  clientSecret: string | null;
  /** The saved card the renewal charged: the buyer confirms that card's payment. */
  paymentMethodId: string | null;
}
export type RenewalPaymentReader = (intentId: string, account: string | null) => Promise<RenewalPayment | null>;

const CONFIRMABLE_RENEWAL: readonly Stripe.PaymentIntent.Status[] = ['requires_payment_method', 'requires_confirmation', 'requires_action'];

/** Reads a renewal's intent (one request); an unknown one reads as none. */
export function renewalPaymentReader(client: Stripe): RenewalPaymentReader {
  return async (intentId, account) => {
    try {
      const intent = await client.paymentIntents.retrieve(intentId, {}, account ? { stripeAccount: account } : {});
      const method = intent.payment_method ?? intent.last_payment_error?.payment_method ?? null;
      return {
        status: intent.status,
        storeId: intent.metadata?.store_id || null,
        clientSecret: CONFIRMABLE_RENEWAL.includes(intent.status) ? intent.client_secret : null,
        paymentMethodId: typeof method === 'string' ? method : (method?.id ?? null),
      };
    } catch (error) {
      if (error instanceof Stripe.errors.StripeInvalidRequestError && error.code === 'resource_missing') return null;
      throw error;
    }
  };
}

/** A pending PaymentIntent as the page needs it; the client secret only while the buyer must act. */
export interface PagePayment {
  status: Stripe.PaymentIntent.Status;
  clientSecret: string | null;
  pix: { code: string; imageUrl: string | null; expiresAt: number } | null;
}
export type PagePaymentReader = (intentId: string, account: string | null) => Promise<PagePayment | null>;

/** The page's view of an intent; another store's or an unknown intent reads as none. */
export function pagePaymentReader(client: Stripe): PagePaymentReader {
  return async (intentId, account) => {
    try {
      if (intentId.startsWith('seti_')) return await pageSetup(client, intentId, account);
      const intent = await client.paymentIntents.retrieve(intentId, {}, account ? { stripeAccount: account } : {});
      const qr = intent.next_action?.pix_display_qr_code;
      return {
        status: intent.status,
        clientSecret: intent.status === 'requires_action' ? intent.client_secret : null,
        pix: qr?.data && qr.expires_at ? { code: qr.data, imageUrl: qr.image_url_png ?? null, expiresAt: qr.expires_at } : null,
      };
    } catch (error) {
      if (error instanceof Stripe.errors.StripeInvalidRequestError && error.code === 'resource_missing') return null;
      throw error;
    }
  };
}

/** A free trial's SetupIntent waiting for 3-D Secure: its client secret while the buyer must act. */
async function pageSetup(client: Stripe, setupId: string, account: string | null): Promise<PagePayment> {
  const setup = await client.setupIntents.retrieve(setupId, {}, account ? { stripeAccount: account } : {});
  const waiting = setup.status === 'requires_action';
  return { status: waiting ? 'requires_action' : 'processing', clientSecret: waiting ? setup.client_secret : null, pix: null };
}

/** Reads an intent under the connected account the event came from. */
export function intentReader(client: Stripe): IntentReader {
  return async (intentId, account) => {
    const intent = await client.paymentIntents.retrieve(intentId, {}, account ? { stripeAccount: account } : {});
    return routingOfIntent(intent);
  };
}

/** Reads a charge's refunds under the event's account, at most REFUND_LOOKUP_PAGES pages; a longer list throws (cannot tell). */
export function chargeRefundsReader(client: Stripe): ChargeRefundsReader {
  return async (chargeId, account) => {
    const found: StripeRefundRecord[] = [];
    let after: string | undefined;
    for (let page = 0; page < REFUND_LOOKUP_PAGES; page++) {
      const params: Stripe.RefundListParams = { charge: chargeId, limit: REFUND_LOOKUP_PAGE_SIZE, ...(after ? { starting_after: after } : {}) };
      const listed = await client.refunds.list(params, account ? { stripeAccount: account } : {});
      found.push(...listed.data.map(refundRecordOf));
      if (!listed.has_more || listed.data.length === 0) return found;
      after = listed.data[listed.data.length - 1].id;
    }
    throw new Error(`charge ${chargeId} has more than ${REFUND_LOOKUP_PAGES * REFUND_LOOKUP_PAGE_SIZE} refunds: they cannot be read whole`);
  };
}

/** The settings when PAYMENT_PROVIDER=stripe (checked as the connection checks them); null for any other connection. */
export function stripeWebSettings(env: NodeJS.ProcessEnv = process.env): StripeWebSettings | null {
  if (env.PAYMENT_PROVIDER !== 'stripe') return null;
  const config = readStripeConfig(env);
  const client = createStripeClient(config);
  return {
    webhookSecret: config.webhookSecret,
    publishableKey: config.publishableKey,
    jsUrl: config.jsUrl,
    readIntent: intentReader(client),
    livemode: config.livemode,
    readChargeRefunds: chargeRefundsReader(client),
    readPagePayment: pagePaymentReader(client),
    readRenewalPayment: renewalPaymentReader(client),
  };
}
