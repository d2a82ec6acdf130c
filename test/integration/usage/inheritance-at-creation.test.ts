// What this tests: a new subscription of an offer with usage rows inherits them at its creation (usage rule 4,
// the run its creation triggers), over real HTTP with the billing worker on the Temporal dev server: no
// routine runs here, yet its items are listed at once, the first event sent right after creation is attached
// to it, and that usage is charged (a threshold closes the period within seconds). An offer without rows
// starts no usage.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { addOfferUsageRow } from '../../../store/catalog';
import { findUsageState } from '../../../store/usage';
import { startSubscriptionStack, type SubscriptionStack } from '../../support/subscription-stack';
import { call } from '../../support/api';
import { waitFor } from '../../support/env';
import { seedUsageOffer, seedUsageSubscription } from '../../support/usage';

let stack: SubscriptionStack;

beforeAll(async () => {
  stack = await startSubscriptionStack('usage-inherit-at-creation');
});

afterAll(async () => {
  await stack?.close();
});

const get = (path: string) => call(stack.api, stack.store.key, 'GET', path);
const post = (path: string, json: unknown) => call(stack.api, stack.store.key, 'POST', path, { json });

interface Period {
  status: string;
  close_reason: string | null;
  amount_total: number;
  charge: string | null;
}

test("a new subscription has its offer's usage items at creation: its first event is attached and charged", async () => {
  const meter = (await post('/v1/billing/meters', { display_name: 'Renders', event_name: 'render.done' })).body as { id: string };
  const offer = await seedUsageOffer(stack.mongo.db, stack.store.store._id, { name: 'Metered at once' });
  await addOfferUsageRow(stack.mongo.db, stack.store.store._id, offer._id, {
    meter: meter.id,
    currency: 'brl',
    unit_amount: 100,
    included_units: 0,
    tiers: null,
    rounding: 'up',
    billing_threshold: 500,
    label: 'Renders',
  });
  const { subscription: sub, customer } = await seedUsageSubscription(
    { db: stack.mongo.db, temporal: stack.temporal.client, taskQueue: stack.taskQueue },
    { store: stack.store.store, offer },
  );

  // At once: the item is there and the first event attaches (no routine has run).
  const items = (await get(`/v1/subscriptions/${sub._id}/usage_items`)).body.data as { meter: string; source: string; offer: string }[];
  expect(items).toMatchObject([{ meter: meter.id, source: 'offer', offer: offer._id, unit_amount: 100, billing_threshold: 500 }]);
  const event = await post('/v1/billing/meter_events', { event_name: 'render.done', payload: { customer_id: customer._id, value: 6 } });
  expect(event.status).toBe(201);
  expect(event.body).toMatchObject({ subscription: sub._id, customer: customer._id, value: 6 });

  // 6 x 1.00 reaches the 5.00 threshold: the period closes and is charged.
  const closed = await waitFor(
    async () => {
      const periods = (await get(`/v1/subscriptions/${sub._id}/usage`)).body.data as Period[];
      return periods.find((p) => p.status === 'closed' && p.charge !== null) ?? null;
    },
    { timeoutMs: 30_000, description: 'the first usage period closed at the threshold and charged' },
  );
  expect(closed).toMatchObject({ close_reason: 'threshold', amount_total: 600 });
  const charge = await waitFor(
    async () => {
      const found = (await get(`/v1/subscription_charges/${closed.charge}`)).body as { status: string };
      return found.status === 'pending' ? null : found;
    },
    { timeoutMs: 30_000, description: 'usage charge settled' },
  );
  expect(charge).toMatchObject({ amount: 600, status: 'succeeded', source: 'usage', subscription: sub._id });
}, 90_000);

test('an offer without usage rows starts no usage at creation', async () => {
  const plain = await seedUsageOffer(stack.mongo.db, stack.store.store._id, { name: 'Not metered' });
  const { subscription: sub } = await seedUsageSubscription(
    { db: stack.mongo.db, temporal: stack.temporal.client, taskQueue: stack.taskQueue },
    { store: stack.store.store, offer: plain },
  );
  expect((await get(`/v1/subscriptions/${sub._id}/usage_items`)).body.data).toEqual([]);
  expect(await findUsageState(stack.mongo.db, stack.store.store._id, sub._id)).toBeNull();
});
