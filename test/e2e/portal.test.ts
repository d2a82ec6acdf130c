// What this tests: a customer in a real browser (Debian's chromium through playwright-core) opening
// the portal sign-in link from POST /v1/billing_portal/sessions: it works once (a second open is
// refused, while the portal session cookie keeps the customer in), the portal lists the
// subscription bought at checkout and its order, and canceling at period end goes through the
// subscription workflow. Screenshots go to test/artifacts/e2e.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { findCheckoutSession, type CheckoutSessionDoc } from '../../store/checkout-sessions';
import { subscriptionsCollection } from '../../store/subscriptions';
import type { TestStore } from '../support/api';
import {
  call,
  createSession,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../support/checkout-fixtures';
import { launchBrowser, screenshot } from '../support/browser';
import { waitFor } from '../support/env';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;
let browser: Browser;
let bought: CheckoutSessionDoc;

beforeAll(async () => {
  [stack, browser] = await Promise.all([startCheckoutStack('e2e-portal', { ipRateLimit: 100_000 }), launchBrowser()]);
  store = await createTestStore(stack.mongo.db, { name: 'Lumen Photo School', slug: `lumen-${Date.now()}` });
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
  // The subscription is bought through the hosted checkout's form (the browser flow is covered in checkout.test.ts).
  const session = (await createSession(stack.api, store, { offer: catalog.monthly._id })).body;
  const paid = await fetch(`${stack.api.url}/c/${session.id}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      method: 'card',
      card_number: '4242424242424242',
      email: `portal-e2e-${Date.now()}@example.com`,
      name: 'Helena Costa',
      phone: '+5511987654321',
      document_type: 'cpf',
      document_number: '52998224725',
    }).toString(),
  });
  expect(paid.status).toBe(303);
  bought = await waitFor(async () => {
    const doc = await findCheckoutSession(stack.mongo.db, store.store._id, session.id);
    return doc?.subscription ? doc : null;
  });
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

test('the sign-in link works once, the portal lists the subscription and order, and cancel at period end schedules the cancellation', async () => {
  const link = await call(stack.api, store.key, 'POST', '/v1/billing_portal/sessions', { json: { customer: bought.customer } });
  expect(link.status).toBe(200);

  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  try {
    const page = await context.newPage();
    await page.goto(link.body.url);
    // The link says whose account it opens and signs in on one click.
    await page.getByTestId('signin-confirm').waitFor();
    await screenshot(page, '09-portal-continue-as');
    await page.getByTestId('signin-continue').click();
    await page.waitForURL(/\/account$/);
    const subscription = page.getByTestId('subscription');
    await expect.poll(() => subscription.textContent()).toContain(catalog.monthly.name);
    await expect.poll(() => page.getByTestId('order').first().textContent()).toContain(bought.order!);
    await screenshot(page, '10-portal-account');

    await page.getByTestId('cancel').click();
    await page.getByTestId('done').waitFor();
    await page.getByTestId('cancels-on').waitFor();
    await screenshot(page, '11-portal-canceled');
    const sub = (await subscriptionsCollection(stack.mongo.db).findOne({ _id: bought.subscription! }))!;
    expect({ status: sub.status, cancel_at_period_end: sub.cancel_at_period_end }).toEqual({ status: 'active', cancel_at_period_end: true });

    // The link was used: opening it again (even in the same browser) is refused.
    const again = await context.newPage();
    const response = await again.goto(link.body.url);
    expect(response?.status()).toBe(410);
    await again.getByTestId('signin-invalid').waitFor();
    await screenshot(again, '12-portal-link-used');
    // The portal session cookie still lets the customer in.
    await again.goto(`${stack.api.url}/portal/${store.store.slug}/account`);
    await again.getByTestId('subscription').waitFor();
  } finally {
    await context.close();
  }

  // A fresh browser without the cookie cannot reuse the link either.
  const stranger = await browser.newContext();
  try {
    const page = await stranger.newPage();
    const response = await page.goto(link.body.url);
    expect(response?.status()).toBe(410);
  } finally {
    await stranger.close();
  }
});
