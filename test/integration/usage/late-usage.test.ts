// What this tests: late usage over real HTTP on a test clock (the billing worker on the Temporal dev server):
// late events of one closed period arriving during two later periods are priced on top of all of that
// period's usage so far (its own and the late events an earlier period already charged), so its included
// units are granted once; and late lines count toward the billing threshold like any line (amount_total).
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createClockCustomer, subscribeWithSavedCard } from '../../support/clock-subscriptions';
import { CLOSE_GRACE_SECONDS } from '../../../domain/usage-periods';
import { startSubscriptionStack, type SubscriptionStack } from '../../support/subscription-stack';
import { call } from '../../support/api';
import { waitFor } from '../../support/env';

const DAY = 24 * 60 * 60;
let stack: SubscriptionStack;

beforeAll(async () => {
  stack = await startSubscriptionStack('late-usage');
});

afterAll(async () => {
  await stack?.close();
});

const get = (path: string) => call(stack.api, stack.store.key, 'GET', path);
const post = (path: string, json: unknown) => call(stack.api, stack.store.key, 'POST', path, { json });

interface Line {
  quantity: number;
  amount: number;
  late_period: { start: number; end: number } | null;
}
interface Period {
  period_start: number;
  period_end: number;
  status: string;
  close_reason: string | null;
  amount_total: number;
  charge: string | null;
  lines: Line[];
}

async function advance(clock: string, to: number): Promise<void> {
  expect((await post(`/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: to })).status).toBe(200);
  await waitFor(async () => ((await get(`/v1/test_helpers/test_clocks/${clock}`)).body as { status: string }).status === 'ready' || null, {
    timeoutMs: 60_000,
    intervalMs: 100,
    description: `clock ready at ${to}`,
  });
}

/** A subscription to the 10-day offer on `clock`, its first period paid at the clock's time. */
async function subscribeOnClock(clock: string): Promise<{ id: string; customer: string }> {
  const { mongo, temporal, taskQueue, store, catalog } = stack;
  const customerId = (await createClockCustomer(stack.api, store.key, clock, 'late')).id;
  const deps = { db: mongo.db, temporal: temporal.client, taskQueue };
  const id = await subscribeWithSavedCard(deps, {
    store: store.store,
    customerId,
    offer: catalog.custom,
    product: catalog.product,
    card: '4242424242424242',
  });
  return { id, customer: customerId };
}

const periods = async (sub: string) => (await get(`/v1/subscriptions/${sub}/usage`)).body.data as Period[];
const lateLineOf = (period: Period) => period.lines.find((l) => l.late_period !== null);

test('late events of one period arriving in two later periods grant its included units once; late lines count toward the threshold', async () => {
  const t0 = Math.floor(Date.now() / 1000) - 30 * DAY;
  const clock = ((await post('/v1/test_helpers/test_clocks', { frozen_time: t0 })).body as { id: string }).id;
  const { id: sub, customer } = await subscribeOnClock(clock);
  const meter = (await post('/v1/billing/meters', { display_name: 'Late renders', event_name: 'late.render' })).body as { id: string };
  const item = { meter: meter.id, unit_amount: 100, included_units: 5 };
  expect((await post(`/v1/subscriptions/${sub}/usage_items`, item)).status).toBeLessThan(300);
  await waitFor(async () => (await periods(sub)).length > 0 || null, { timeoutMs: 20_000, description: 'first period open' });
  const send = (value: number, timestamp?: number) =>
    post('/v1/billing/meter_events', { event_name: 'late.render', payload: { customer_id: customer, value }, ...(timestamp ? { timestamp } : {}) });

  // Period 1 (10 days): 3 units, all included.
  expect((await send(3)).body).toMatchObject({ subscription: sub, timestamp: t0 });
  await advance(clock, t0 + 10 * DAY + CLOSE_GRACE_SECONDS + 60);
  expect((await periods(sub)).find((p) => p.period_start === t0)).toMatchObject({ status: 'closed', amount_total: 0 });

  // During period 2: 4 late units of period 1 (3 + 4 = 7, 2 over the 5 included).
  expect((await send(4, t0 + 3600)).status).toBe(201);
  expect(lateLineOf((await periods(sub))[0])).toMatchObject({ quantity: 4, amount: 200, late_period: { start: t0, end: t0 + 10 * DAY } });
  await advance(clock, t0 + 20 * DAY + CLOSE_GRACE_SECONDS + 60);
  const second = (await periods(sub)).find((p) => p.period_start === t0 + 10 * DAY)!;
  expect(second).toMatchObject({ status: 'closed', amount_total: 200 });

  // During period 3: 4 more late units of period 1, on top of the 7 it has so far: all 4 billable.
  expect((await send(4, t0 + 7200)).status).toBe(201);
  const third = (await periods(sub))[0];
  expect(third.period_start).toBe(t0 + 20 * DAY);
  expect(lateLineOf(third)).toMatchObject({ quantity: 4, amount: 400, late_period: { start: t0, end: t0 + 10 * DAY } });
  expect(third.amount_total).toBe(400);

  // A threshold of 3.00: the late line alone reaches it, so the period closes at the threshold and is charged.
  expect((await post(`/v1/subscriptions/${sub}/usage_items`, { ...item, billing_threshold: 300 })).status).toBeLessThan(300);
  // The workflow pulls the end in to a few seconds after the clock's time; advancing before it did would
  // leave the new end ahead of the frozen clock.
  await waitFor(async () => ((await periods(sub))[0].period_end < t0 + 30 * DAY ? true : null), {
    timeoutMs: 30_000,
    description: 'period 3 end pulled in at the threshold',
  });
  await advance(clock, t0 + 20 * DAY + 3600);
  const closed = await waitFor(
    async () => {
      const found = (await periods(sub)).find((p) => p.period_start === t0 + 20 * DAY);
      return found?.status === 'closed' && found.charge !== null ? found : null;
    },
    { timeoutMs: 30_000, description: 'period 3 closed at the threshold' },
  );
  expect(closed).toMatchObject({ close_reason: 'threshold', amount_total: 400 });
}, 150_000);
