// What this tests: change_offer returns next_billing_at from the new offer (spec, Subscriptions actions),
// through HTTP with the worker: the new cycle counts from the current period's start, and its first
// boundary not before the end of the period already paid is the next charge (the paid period is honoured).
// A longer cycle (yearly) bills one year after the period's start; a shorter one (every 9 days) at the
// first 9-day boundary at or after the paid end; the workflow's own state agrees.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSubscriptionStack, type SubscriptionStack } from '../../support/subscription-stack';
import { call } from '../../support/api';
import { waitFor } from '../../support/env';
import { seedSubscription } from '../../support/subscriptions';
import { createOffer } from '../../../store/catalog';
import { findSubscription, type SubscriptionDoc } from '../../../store/subscriptions';
import { addMonths } from '../../../domain/billing-periods';
import type { OfferDoc } from '../../../store/collections';

let stack: SubscriptionStack;
let yearly: OfferDoc;
let everyNineDays: OfferDoc;
const DAY = 86_400;

beforeAll(async () => {
  stack = await startSubscriptionStack('change-offer-cycle');
  yearly = await createOffer(stack.mongo.db, {
    storeId: stack.store.store._id,
    productId: stack.catalog.product._id,
    name: 'Image API yearly',
    type: 'recurring',
    billingCycle: 'yearly',
    prices: [{ currency: 'brl', amount: 49900, default: true }],
  });
  // 9 days: no month of 28 to 31 days is a whole number of them, so the boundary differs from the paid end.
  everyNineDays = await createOffer(stack.mongo.db, {
    storeId: stack.store.store._id,
    productId: stack.catalog.product._id,
    name: 'Image API every 9 days',
    type: 'recurring',
    billingCycle: 'custom',
    customBillingDays: 9,
    prices: [{ currency: 'brl', amount: 1500, default: true }],
  });
});
afterAll(async () => {
  await stack?.close();
});

/** A monthly subscription whose first cycle is paid (active, a current period). */
async function activeMonthly(): Promise<SubscriptionDoc> {
  const { mongo, temporal, taskQueue, store, catalog } = stack;
  const sub = await seedSubscription(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { store: store.store, offer: catalog.monthly, product: catalog.product },
  );
  return waitFor(
    async () => {
      const doc = await findSubscription(mongo.db, store.store._id, sub._id);
      return doc?.status === 'active' && doc.cycles_completed === 1 ? doc : null;
    },
    { description: 'first cycle paid', timeoutMs: 20_000 },
  );
}

const changeOffer = (id: string, offer: string) =>
  call(stack.api, stack.store.key, 'POST', `/v1/subscriptions/${id}/change_offer`, {
    json: { offer },
    headers: { 'Idempotency-Key': `co-${id}-${offer}` },
  });

describe('change_offer next_billing_at', () => {
  it('to a yearly offer: one year after the current period started, the paid month kept', async () => {
    const sub = await activeMonthly();
    const res = await changeOffer(sub._id, yearly._id);
    expect(res.status).toBe(200);
    const start = sub.current_period_start!;
    expect(res.body).toMatchObject({
      billing_cycle: 'yearly',
      amount: 49900,
      current_period_start: start,
      current_period_end: sub.current_period_end,
      next_billing_at: addMonths(start, 12),
    });
    const stored = await findSubscription(stack.mongo.db, stack.store.store._id, sub._id);
    expect(stored?.next_billing_at).toBe(addMonths(start, 12));
  });

  it('to an every-9-days offer: the first 9-day boundary from the period start not before the paid end', async () => {
    const sub = await activeMonthly();
    const res = await changeOffer(sub._id, everyNineDays._id);
    expect(res.status).toBe(200);
    const start = sub.current_period_start!;
    const paidDays = (sub.current_period_end! - start) / DAY;
    const expected = start + Math.ceil(paidDays / 9) * 9 * DAY;
    expect(expected).toBeGreaterThanOrEqual(sub.current_period_end!);
    expect(expected).not.toBe(sub.current_period_end);
    expect(res.body).toMatchObject({ billing_cycle: 'custom', custom_billing_days: 9, next_billing_at: expected });
  });

  it('to an offer of the same cycle: the end of the paid period, as before', async () => {
    const sub = await activeMonthly();
    const res = await changeOffer(sub._id, stack.catalog.monthlyPremium._id);
    expect([res.status, res.body.next_billing_at]).toEqual([200, sub.current_period_end]);
  });
});
