// Section (d) of `npm run bench:charges`: the Stripe connection's own overhead per charge, against a local
// stripe-mock (no network, no card network): a bare fetch POST of the same PaymentIntent form is the
// yardstick, then chargeCard (one POST: the buyer-present charge) through the adapter and the official
// package. Overhead = the adapter's p50 minus the bare request's p50. Sequential, so queueing is not
// measured. (chargeSavedCard is left out: stripe-mock's card has no customer, so it stops after its GET.)
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { createStripeConnection } from '../../adapters/provider/stripe/connection';
import { FAKE_STRIPE_SECRET_KEY, startStripeMock } from '../support/stripe-fakes';
import { round, summarizeLatencies, type LatencySummary } from './lib';

export const stripeSettings = { count: 300, warmup: 30 };

export interface StripeAdapterFigures {
  bareRequest: LatencySummary;
  chargeCard: LatencySummary;
  overheadPerChargeMs: number;
}

async function timed(count: number, task: (i: number) => Promise<unknown>): Promise<LatencySummary> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await task(i);
    ms.push(performance.now() - t);
  }
  return summarizeLatencies(ms);
}

const charge = (i: number) => ({
  storeId: 'st_bench',
  idempotencyKey: `bench/${randomUUID()}`,
  amount: 1000 + (i % 50),
  currency: 'brl',
  description: null,
});

export async function measureStripeAdapter({ count, warmup } = stripeSettings): Promise<StripeAdapterFigures> {
  const mock = await startStripeMock();
  try {
    const stripe = createStripeConnection({ config: { secretKey: FAKE_STRIPE_SECRET_KEY, apiUrl: mock.url, livemode: false } });
    const bare = async (i: number) => {
      const form = new URLSearchParams({ amount: String(1000 + (i % 50)), currency: 'brl', payment_method: 'pm_card_visa', confirm: 'true' });
      form.set('allowed_payment_method_types[0]', 'card');
      form.set('metadata[charge_key]', `bench/${randomUUID()}`);
      const headers = {
        authorization: `Bearer ${FAKE_STRIPE_SECRET_KEY}`,
        'idempotency-key': randomUUID(),
        'content-type': 'application/x-www-form-urlencoded',
      };
      const res = await fetch(`${mock.url}/v1/payment_intents`, { method: 'POST', headers, body: form });
      if (!res.ok) throw new Error(`stripe-mock answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    };
    const card = (i: number) => stripe.chargeCard({ ...charge(i), cardToken: 'pm_card_visa' });
    await timed(warmup, bare);
    await timed(warmup, card);
    const bareRequest = await timed(count, bare);
    const chargeCard = await timed(count, card);
    return { bareRequest, chargeCard, overheadPerChargeMs: round(chargeCard.p50 - bareRequest.p50) };
  } finally {
    await mock.stop();
  }
}
