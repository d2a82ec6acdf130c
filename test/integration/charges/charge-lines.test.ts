// What this tests: charge lines as the spec types them, over real HTTP with the worker and the test
// connection: `unit_amount` any integer (a negative line is a discount) and `quantity` any integer; what
// is refused is the spec's (lines_total_mismatch, amount_too_small), a fraction or a value past the
// stated bound is parameter_invalid on that line's field.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSubscriptionStack, type SubscriptionStack } from '../../support/subscription-stack';
import { call } from '../../support/api';
import { seedSubscription } from '../../support/subscriptions';
import { CHARGE_LINE_QUANTITY_MAX, CHARGE_LINE_UNIT_AMOUNT_MAX } from '../../../domain/charges';

let stack: SubscriptionStack;
let subscriptionId: string;
let keySeq = 0;

beforeAll(async () => {
  stack = await startSubscriptionStack('charge-lines');
  const { mongo, temporal, taskQueue, store, catalog } = stack;
  // Trialing: chargeable, and nothing else is charged meanwhile.
  subscriptionId = (
    await seedSubscription(
      { db: mongo.db, temporal: temporal.client, taskQueue },
      { store: store.store, offer: catalog.trial, product: catalog.product },
    )
  )._id;
});
afterAll(async () => {
  await stack?.close();
});

const charge = (json: unknown) =>
  call(stack.api, stack.store.key, 'POST', `/v1/subscriptions/${subscriptionId}/charges`, {
    json,
    headers: { 'idempotency-key': `lines-${Date.now()}-${++keySeq}` },
  });

const errorOf = (res: { status: number; body: any }) => [res.status, res.body?.error?.code, res.body?.error?.param];

describe('charge lines', () => {
  it('a negative unit_amount is a discount line: 201 succeeded, the lines and the order items keep it', async () => {
    const lines = [
      { description: 'Seats', quantity: 3, unit_amount: 5000 },
      { description: 'Loyalty discount', unit_amount: -2500 },
      { description: 'Returned seat', quantity: -1, unit_amount: 1000 },
      { description: 'Nothing this month', quantity: 0, unit_amount: 700 },
    ];
    const res = await charge({ amount: 11500, lines });
    expect([res.status, res.body.status]).toEqual([201, 'succeeded']);
    expect(res.body.lines).toEqual([
      { description: 'Seats', quantity: 3, unit_amount: 5000, amount: 15000 },
      { description: 'Loyalty discount', quantity: 1, unit_amount: -2500, amount: -2500 },
      { description: 'Returned seat', quantity: -1, unit_amount: 1000, amount: -1000 },
      { description: 'Nothing this month', quantity: 0, unit_amount: 700, amount: 0 },
    ]);
    const order = await call(stack.api, stack.store.key, 'GET', `/v1/orders/${res.body.order}`);
    expect(order.body.items.map((item: { amount: number }) => item.amount)).toEqual([15000, -2500, -1000, 0]);
    expect(order.body.amount_total).toBe(11500);
  });

  it('a form-encoded negative line works like JSON', async () => {
    const res = await call(stack.api, stack.store.key, 'POST', `/v1/subscriptions/${subscriptionId}/charges`, {
      form: 'amount=900&lines[0][description]=Plan&lines[0][unit_amount]=1000&lines[1][description]=Coupon&lines[1][unit_amount]=-100',
      headers: { 'idempotency-key': `lines-form-${Date.now()}` },
    });
    expect([res.status, res.body.lines?.[1]?.amount]).toEqual([201, -100]);
  });

  it("the refusals left are the spec's: lines_total_mismatch, amount_too_small", async () => {
    expect(
      errorOf(
        await charge({
          amount: 1000,
          lines: [
            { description: 'Plan', unit_amount: 2000 },
            { description: 'Off', unit_amount: -500 },
          ],
        }),
      ),
    ).toEqual([400, 'lines_total_mismatch', 'lines']);
    expect(
      errorOf(
        await charge({
          amount: 50,
          lines: [
            { description: 'Plan', unit_amount: 1000 },
            { description: 'Off', unit_amount: -950 },
          ],
        }),
      ),
    ).toEqual([400, 'amount_too_small', 'amount']);
  });

  it('a fraction, or a value past the bound, is 400 parameter_invalid naming the field', async () => {
    expect(errorOf(await charge({ amount: 1000, lines: [{ description: 'Plan', quantity: 1.5, unit_amount: 1000 }] }))).toEqual([
      400,
      'parameter_invalid',
      'lines[0].quantity',
    ]);
    expect(errorOf(await charge({ amount: 1000, lines: [{ description: 'Plan', unit_amount: 99.5 }] }))).toEqual([
      400,
      'parameter_invalid',
      'lines[0].unit_amount',
    ]);
    const far = { amount: 1000, lines: [{ description: 'Plan', quantity: CHARGE_LINE_QUANTITY_MAX + 1, unit_amount: 1 }] };
    expect(errorOf(await charge(far))).toEqual([400, 'parameter_invalid', 'lines[0].quantity']);
    const huge = { amount: 1000, lines: [{ description: 'Plan', unit_amount: -CHARGE_LINE_UNIT_AMOUNT_MAX - 1 }] };
    expect(errorOf(await charge(huge))).toEqual([400, 'parameter_invalid', 'lines[0].unit_amount']);
  });
});
