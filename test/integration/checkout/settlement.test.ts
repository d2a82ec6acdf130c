// What this tests: what follows a hosted-checkout payment over real HTTP with FerretDB, Temporal and
// a worker: a PIX refused by the provider's notice (complete/unpaid, never reopens), expired sessions
// (cancel_url, unavailable page, an overdue link marked expired at once), and recurring and trial
// offers creating their subscription with the session's reference and metadata.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { collections } from '../../../store/collections';
import { checkoutSessionsCollection, findCheckoutSession } from '../../../store/checkout-sessions';
import { findOrder } from '../../../store/orders';
import { subscriptionsCollection } from '../../../store/subscriptions';
import { checkoutSessionWorkflowId } from '../../../workflows/checkout-session/messages';
import type { TestStore } from '../../support/api';
import {
  createSession,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  buyerForm,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';
import { waitFor } from '../../support/env';
import { createSubscriptionForCheckout } from '../../../services/checkout/subscriptions';
import { createTestConnection } from '../../../adapters/provider/test-connection';
import { newId } from '../../../domain/ids';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;

const CARD_OK = '4242 4242 4242 4242';

beforeAll(async () => {
  // The unauthenticated-API limit on pages is covered in checkout-pages.test.ts.
  stack = await startCheckoutStack('checkout-settlement', { ipRateLimit: 100_000 });
  store = await createTestStore(stack.mongo.db);
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
});

afterAll(async () => {
  await stack?.close();
});

const buyer = buyerForm;

async function page(path: string, base = stack.api.url) {
  const res = await fetch(`${base}${path}`, { redirect: 'manual' });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function post(path: string, form: Record<string, string>, base = stack.api.url) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, location: res.headers.get('location'), text: await res.text() };
}

async function newSession(body: Record<string, unknown>) {
  const res = await createSession(stack.api, store, body);
  expect(res.status).toBe(201);
  return res.body;
}

const session = async (id: string) => (await findCheckoutSession(stack.mongo.db, store.store._id, id))!;
const eventsOf = async (type: string, objectId: string) =>
  collections(stack.mongo.db).events.countDocuments({ store_id: store.store._id, type, data_json: { $regex: objectId } });

describe('PIX', () => {
  test('PIX completes the session as pending with a copy-paste code; a refused notice ends it complete/unpaid (async_payment_failed)', async () => {
    const s = await newSession({ offer: catalog.oneOff._id, cancel_url: 'https://shop.example.com/cart' });
    const res = await post(`/c/${s.id}/pay`, buyer({ method: 'pix' }));
    expect(res.location).toBe(`/c/${s.id}?done=1`);
    const pending = await session(s.id);
    expect(pending).toMatchObject({ status: 'complete', payment_status: 'pending', payment: { method: 'pix' } });
    expect(pending.payment!.pix_expires_at! - pending.completed_at!).toBeLessThanOrEqual(30 * 60);
    const pixPage = await page(`/c/${s.id}`);
    expect(pixPage.text).toContain(pending.payment!.pix_code!);
    expect(pixPage.text).toContain('data-testid="settle-paid"');

    await post(`/c/${s.id}/test/settle`, { outcome: 'refused' });
    await waitFor(async () => (await session(s.id)).payment_status === 'unpaid');
    const order = (await findOrder(stack.mongo.db, store.store._id, pending.order!))!;
    expect(order.status).toBe('failed');
    await waitFor(async () => (await eventsOf('checkout.session.async_payment_failed', s.id)) === 1);
    await waitFor(async () => (await eventsOf('invoice.payment_failed', order._id)) === 1);
    const failedPage = await page(`/c/${s.id}`);
    expect(failedPage.text).toContain('data-testid="failed"');
    // Never reopens.
    expect((await post(`/c/${s.id}/pay`, buyer({ method: 'pix' }))).location).toBe(`/c/${s.id}`);
  });
});

describe('expired sessions', () => {
  test('an expired session sends the buyer to cancel_url, or shows the unavailable page without one', async () => {
    const withCancel = await newSession({ offer: catalog.oneOff._id, cancel_url: 'https://shop.example.com/cart' });
    await fetch(`${stack.api.url}/v1/checkout/sessions/${withCancel.id}/expire`, {
      method: 'POST',
      headers: { authorization: `Bearer ${store.key}` },
    });
    const res = await page(`/c/${withCancel.id}`);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('https://shop.example.com/cart');

    const without = await newSession({ offer: catalog.oneOff._id });
    await fetch(`${stack.api.url}/v1/checkout/sessions/${without.id}/expire`, { method: 'POST', headers: { authorization: `Bearer ${store.key}` } });
    const unavailable = await page(`/c/${without.id}`);
    expect(unavailable.status).toBe(410);
    expect(unavailable.text).toContain('data-testid="unavailable"');
  });

  test('a session past its deadline shows as expired to the buyer at once and is marked expired with its event', async () => {
    const s = await newSession({ offer: catalog.oneOff._id });
    // The deadline passed (as if the worker's timer were late): only the stored deadline moves.
    await checkoutSessionsCollection(stack.mongo.db).updateOne({ _id: s.id }, { $set: { expires_at: Math.floor(Date.now() / 1000) - 1 } });
    const res = await page(`/c/${s.id}`);
    expect(res.status).toBe(410);
    await waitFor(async () => (await session(s.id)).status === 'expired');
    await waitFor(async () => (await eventsOf('checkout.session.expired', s.id)) === 1);
    expect((await post(`/c/${s.id}/pay`, buyer({ method: 'card', card_number: CARD_OK }))).location).toBe(`/c/${s.id}`);
  });
});

describe('subscriptions from checkout', () => {
  test('a recurring offer paid by card creates an active subscription with subscription_data metadata, the saved card and the reference', async () => {
    const s = await newSession({
      offer: catalog.monthly._id,
      client_reference_id: 'acct-9',
      metadata: { source: 'landing' },
      subscription_data: { metadata: { plan: 'club' } },
    });
    const res = await post(`/c/${s.id}/pay`, buyer({ method: 'card', card_number: CARD_OK }));
    expect(res.location).toBe(`/c/${s.id}?done=1`);
    const done = await waitFor(async () => {
      const doc = await session(s.id);
      return doc.subscription ? doc : null;
    });
    const sub = (await subscriptionsCollection(stack.mongo.db).findOne({ _id: done.subscription! }))!;
    expect(sub).toMatchObject({
      status: 'active',
      customer: done.customer,
      checkout_session: s.id,
      client_reference_id: 'acct-9',
      metadata: [{ k: 'plan', v: 'club' }],
      cycles_completed: 1,
      currency: 'brl',
      amount: 4990,
    });
    expect(sub.default_payment_method?.last4).toBe('4242');
    const order = (await findOrder(stack.mongo.db, store.store._id, done.order!))!;
    expect(order).toMatchObject({ subscription: sub._id, recurrence: 'scheduled', metadata: [{ k: 'source', v: 'landing' }] });
    const workflow = await stack.temporal.client.workflow.getHandle(`subscription/${sub._id}`).describe();
    expect(workflow.status.name).toBe('RUNNING');
    await waitFor(async () => (await eventsOf('customer.subscription.created', sub._id)) === 1);
    const result = await stack.temporal.client.workflow.getHandle(checkoutSessionWorkflowId(s.id)).result();
    expect(result.subscription).toBe(sub._id);
  });

  test('the hand-off retried after a timeout (three retries overlapping, the first never recorded): one subscription, one event, one workflow', async () => {
    const s = await newSession({ offer: catalog.monthly._id });
    await post(`/c/${s.id}/pay`, buyer({ method: 'card', card_number: CARD_OK }));
    const paid = await waitFor(async () => ((await session(s.id)).subscription ? session(s.id) : null));
    // A paid session whose hand-off has not run yet: the first try times out mid-insert and its retries overlap it.
    const handOff = { ...paid, _id: newId('cs'), subscription: null, order: null };
    await checkoutSessionsCollection(stack.mongo.db).insertOne(handOff);
    const deps = {
      db: stack.mongo.db,
      provider: createTestConnection({ db: stack.mongo.db }),
      temporal: stack.temporal.client,
      taskQueue: stack.taskQueue,
    };
    const ids = await Promise.all([1, 2, 3].map(() => createSubscriptionForCheckout(deps, handOff)));
    const again = await createSubscriptionForCheckout(deps, handOff);
    expect(new Set([...ids, again]).size).toBe(1);
    expect(await subscriptionsCollection(stack.mongo.db).countDocuments({ store_id: store.store._id, checkout_session: handOff._id })).toBe(1);
    expect((await session(handOff._id)).subscription).toBe(again);
    await waitFor(async () => (await eventsOf('customer.subscription.created', again!)) >= 1);
    expect(await eventsOf('customer.subscription.created', again!)).toBe(1);
    const runs = await stack.temporal.client.workflow.count(`WorkflowId = 'subscription/${again}'`);
    expect(runs.count).toBe(1);
  });

  test('a recurring offer without subscription_data gives the subscription the session metadata', async () => {
    const s = await newSession({ offer: catalog.monthly._id, metadata: { ref: 'abc' } });
    await post(`/c/${s.id}/pay`, buyer({ method: 'card', card_number: CARD_OK }));
    const done = await waitFor(async () => ((await session(s.id)).subscription ? session(s.id) : null));
    const sub = (await subscriptionsCollection(stack.mongo.db).findOne({ _id: done.subscription! }))!;
    expect(sub.metadata).toEqual([{ k: 'ref', v: 'abc' }]);
  });

  test('a trial offer saves the card without charging: session paid, an order of amount 0, a trialing subscription', async () => {
    const s = await newSession({ offer: catalog.trial._id });
    const res = await post(`/c/${s.id}/pay`, buyer({ method: 'card', card_number: CARD_OK }));
    expect(res.location).toBe(`/c/${s.id}?done=1`);
    const done = await waitFor(async () => ((await session(s.id)).subscription ? session(s.id) : null));
    expect(await findOrder(stack.mongo.db, store.store._id, done.order!)).toMatchObject({ status: 'paid', amount_total: 0 });
    const sub = (await subscriptionsCollection(stack.mongo.db).findOne({ _id: done.subscription! }))!;
    expect(sub.status).toBe('trialing');
    expect(sub.default_payment_method?.last4).toBe('4242');
    expect(await stack.mongo.db.collection('provider_test_charges').countDocuments({ key: { $regex: s.id } })).toBe(0);
  });
});
