// What this tests: a buyer in a real browser (Debian's chromium through playwright-core) on the
// hosted checkout, against the real API, worker, Temporal and FerretDB: a one-off offer paid by
// card lands on success_url; a declined card then an approved one; PIX paid by the provider's
// notice (the test connection's button) while the page waits; a card in review pending, then
// refused; a recurring offer creating its subscription; an expired link going to cancel_url.
// Screenshots of each page go to test/artifacts/e2e.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, afterEach, describe, expect, test } from 'vitest';
import { findCheckoutSession } from '../../store/checkout-sessions';
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
import { launchBrowser, screenshot, startMerchantSite, type MerchantSite } from '../support/browser';
import { waitFor } from '../support/env';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;
let browser: Browser;
let merchant: MerchantSite;
let page: Page;
let seq = 0;

beforeAll(async () => {
  [stack, browser, merchant] = await Promise.all([
    startCheckoutStack('e2e-checkout', { ipRateLimit: 100_000 }),
    launchBrowser(),
    startMerchantSite(),
  ]);
  store = await createTestStore(stack.mongo.db, { name: 'Lumen Photo School' });
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
});

afterAll(async () => {
  await browser?.close();
  await merchant?.close();
  await stack?.close();
});

beforeEach(async () => {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  page = await context.newPage();
});

afterEach(async () => {
  await page?.context().close();
});

async function openCheckout(body: Record<string, unknown>) {
  const res = await createSession(stack.api, store, {
    success_url: `${merchant.url}/success?session={CHECKOUT_SESSION_ID}`,
    cancel_url: `${merchant.url}/cart`,
    redirect_delay: 1,
    ...body,
  });
  expect(res.status).toBe(201);
  await page.goto(res.body.url);
  return res.body as { id: string; url: string };
}

async function fillBuyer() {
  seq += 1;
  await page.getByLabel('E-mail').fill(`e2e${seq}-${Date.now()}@example.com`);
  await page.getByLabel('Full name').fill('Beatriz Lima');
  await page.getByLabel('Phone').fill('+55 21 99876-5432');
  await page.getByLabel('Document', { exact: true }).fill('529.982.247-25');
}

async function payWithCard(number: string) {
  await page.getByLabel('Card number').fill(number);
  await page.getByLabel('Expiry (MM/YY)').fill('12/30');
  await page.getByLabel('Security code').fill('123');
  await page.getByTestId('pay-card').click();
}

describe('hosted checkout in a browser', () => {
  test('a one-off offer paid by card shows the thank-you page, then lands on success_url with the session id', async () => {
    const session = await openCheckout({ offer: catalog.oneOff._id });
    await expect.poll(() => page.title()).toContain('Photography Course');
    await screenshot(page, '01-checkout-card');
    await fillBuyer();
    await payWithCard('4242 4242 4242 4242');
    await page.getByTestId('thank-you').waitFor();
    await screenshot(page, '02-thank-you');
    await page.waitForURL(`${merchant.url}/success?session=${session.id}`);
    await screenshot(page, '03-success-url');
    expect(merchant.visits).toContain(`/success?session=${session.id}`);
    const doc = (await findCheckoutSession(stack.mongo.db, store.store._id, session.id))!;
    expect({ status: doc.status, payment_status: doc.payment_status }).toEqual({ status: 'complete', payment_status: 'paid' });
  });

  test('a declined card stays on the checkout with a message; an approved card then completes it', async () => {
    const session = await openCheckout({ offer: catalog.oneOff._id });
    await fillBuyer();
    await payWithCard('4000 0000 0000 0002');
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain('Your card was declined');
    await screenshot(page, '04-declined');
    expect((await findCheckoutSession(stack.mongo.db, store.store._id, session.id))!.status).toBe('open');
    // The buyer's details are kept; only the card is typed again.
    expect(await page.getByLabel('Full name').inputValue()).toBe('Beatriz Lima');
    expect(await page.getByLabel('Card number').inputValue()).toBe('');
    await payWithCard('4242 4242 4242 4242');
    await page.getByTestId('thank-you').waitFor();
    await page.waitForURL(`${merchant.url}/success?session=${session.id}`);
  });

  test('PIX shows the copy-paste code, waits, and goes on once the provider notice says it is paid', async () => {
    const session = await openCheckout({ offer: catalog.oneOff._id, locale: 'pt' });
    await page.getByLabel('E-mail').fill(`pix${Date.now()}@example.com`);
    await page.getByLabel('Nome completo').fill('Carlos Pereira');
    await page.getByLabel('Telefone').fill('(11) 98765-4321');
    await page.getByLabel('Documento', { exact: true }).fill('52998224725');
    await page.getByLabel('PIX').check();
    // The card fields hide once PIX is chosen.
    await expect.poll(() => page.getByLabel('Número do cartão').isVisible()).toBe(false);
    await page.getByTestId('pay-pix').click();
    const code = page.getByTestId('pix-code');
    await code.waitFor();
    expect(await code.inputValue()).toMatch(/^00020126/);
    await screenshot(page, '05-pix-pending');
    expect((await findCheckoutSession(stack.mongo.db, store.store._id, session.id))!.payment_status).toBe('pending');

    await page.getByTestId('settle-paid').click();
    // The page polls the status and moves on by itself.
    await page.getByTestId('thank-you').waitFor({ timeout: 20_000 });
    await screenshot(page, '06-pix-paid');
    await page.waitForURL(`${merchant.url}/success?session=${session.id}`);
    expect((await findCheckoutSession(stack.mongo.db, store.store._id, session.id))!.payment_status).toBe('paid');
  });

  test('a card left in review shows the pending page; refused by the provider, the page turns to payment not completed', async () => {
    const session = await openCheckout({ offer: catalog.oneOff._id });
    await fillBuyer();
    await payWithCard('4000 0000 0000 4954');
    await page.getByTestId('pending').waitFor();
    await screenshot(page, '08-review-pending');
    await page.getByTestId('settle-refused').click();
    await page.getByTestId('failed').waitFor({ timeout: 20_000 });
    await screenshot(page, '09-payment-failed');
    const doc = (await findCheckoutSession(stack.mongo.db, store.store._id, session.id))!;
    expect({ status: doc.status, payment_status: doc.payment_status }).toEqual({ status: 'complete', payment_status: 'unpaid' });
  });

  test('a recurring offer paid by card creates the subscription', async () => {
    const session = await openCheckout({ offer: catalog.monthly._id, subscription_data: { metadata: { plan: 'club' } } });
    await expect.poll(() => page.title()).toContain('Photo Club');
    await screenshot(page, '13-recurring-checkout');
    await fillBuyer();
    await payWithCard('4242424242424242');
    await page.getByTestId('thank-you').waitFor();
    await screenshot(page, '14-recurring-thank-you');
    const doc = await waitFor(async () => {
      const s = await findCheckoutSession(stack.mongo.db, store.store._id, session.id);
      return s?.subscription ? s : null;
    });
    const sub = (await subscriptionsCollection(stack.mongo.db).findOne({ _id: doc.subscription! }))!;
    expect(sub).toMatchObject({ status: 'active', customer: doc.customer, checkout_session: session.id, metadata: [{ k: 'plan', v: 'club' }] });
    const api = await call(stack.api, store.key, 'GET', `/v1/checkout/sessions/${session.id}`);
    expect(api.body.subscription).toBe(sub._id);
  });

  test('an expired link takes the buyer to cancel_url', async () => {
    const res = await createSession(stack.api, store, { offer: catalog.oneOff._id, cancel_url: `${merchant.url}/cart` });
    await call(stack.api, store.key, 'POST', `/v1/checkout/sessions/${res.body.id}/expire`);
    await page.goto(`${stack.api.url}/c/${res.body.id}`);
    await page.waitForURL(`${merchant.url}/cart`);
    await page.locator('#merchant').waitFor();
    await screenshot(page, '15-cancel-url');
    const plain = await createSession(stack.api, store, { offer: catalog.oneOff._id });
    await call(stack.api, store.key, 'POST', `/v1/checkout/sessions/${plain.body.id}/expire`);
    await page.goto(`${stack.api.url}/c/${plain.body.id}`);
    await page.getByTestId('unavailable').waitFor();
    await screenshot(page, '07-unavailable');
  });
});
