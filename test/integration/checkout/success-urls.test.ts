// What this tests: where the thank-you page sends the buyer, set up as an operator does with the admin
// CLI. "The session's success_url takes precedence over ... the offer's and the store's default":
// each level is used when the ones before it are absent. "When the product has downloadable files the
// page does not redirect by itself and shows the files with a continue button." Real HTTP, FerretDB,
// Temporal and a worker; payments with the test card.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { runAdmin } from '../../../admin/cli';
import {
  buyerForm,
  call,
  createSession,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';
import type { TestStore } from '../../support/api';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;
let adminEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  stack = await startCheckoutStack('success-urls');
  store = await createTestStore(stack.mongo.db);
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
  adminEnv = { MONGODB_URI: inject('mongoUri'), MONGODB_DB: stack.mongo.db.databaseName };
  // Before the store's first API call: an API process keeps a store for up to a second.
  await admin('stores', 'set', store.store._id, '--success-url', 'https://shop.example.com/thanks?cs={CHECKOUT_SESSION_ID}');
});

afterAll(async () => {
  await stack?.close();
});

async function admin(...args: string[]): Promise<any> {
  const { code, output } = await runAdmin([...args, '--json'], adminEnv);
  expect(code, output).toBe(0);
  return JSON.parse(output);
}

/** Pays a new session with the test card; the thank-you page the buyer lands on. */
async function paidPage(body: Record<string, unknown>, seller: TestStore = store): Promise<{ id: string; text: string }> {
  const session = (await createSession(stack.api, seller, body)).body;
  const paid = await fetch(`${stack.api.url}/c/${session.id}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...buyerForm(), method: 'card', card_number: '4242424242424242' }).toString(),
  });
  expect(paid.status).toBe(303);
  const page = await fetch(`${stack.api.url}${paid.headers.get('location')}`);
  return { id: session.id, text: await page.text() };
}

const refreshTo = (text: string) => /http-equiv="refresh" content="\d+;url=([^"]+)"/.exec(text)?.[1] ?? null;

describe('success URL precedence', () => {
  test("session's, else the offer's, else the store's default; none at all: the page stays", async () => {
    const bare = await createTestStore(stack.mongo.db);
    const bareCatalog = await seedCheckoutCatalog(stack.mongo.db, bare.store._id);
    expect(refreshTo((await paidPage({ offer: bareCatalog.oneOff._id, redirect_delay: 0 }, bare)).text)).toBeNull();

    const storeDefault = await paidPage({ offer: catalog.oneOff._id, redirect_delay: 0 });
    expect(refreshTo(storeDefault.text)).toBe(`https://shop.example.com/thanks?cs=${storeDefault.id}`);

    await admin('offers', 'set', catalog.oneOff._id, '--success-url', 'https://shop.example.com/course-welcome');
    // The merchant sees it on the offer.
    expect((await call(stack.api, store.key, 'GET', `/v1/offers/${catalog.oneOff._id}`)).body.success_url).toBe(
      'https://shop.example.com/course-welcome',
    );
    expect(refreshTo((await paidPage({ offer: catalog.oneOff._id, redirect_delay: 0 })).text)).toBe('https://shop.example.com/course-welcome');

    const own = await paidPage({ offer: catalog.oneOff._id, redirect_delay: 0, success_url: 'https://shop.example.com/own/{CHECKOUT_SESSION_ID}' });
    expect(refreshTo(own.text)).toBe(`https://shop.example.com/own/${own.id}`);
    // The session object still shows what was sent (null when nothing was).
    expect((await createSession(stack.api, store, { offer: catalog.oneOff._id })).body.success_url).toBeNull();
  });

  test('the admin CLI refuses a success URL that is not https (and removes one with none)', async () => {
    const refused = await runAdmin(['offers', 'set', catalog.monthly._id, '--success-url', 'ftp://shop.example.com/x', '--json'], adminEnv);
    expect(refused.code).toBe(1);
    expect(refused.output).toContain('https://');
    expect((await admin('offers', 'set', catalog.monthly._id, '--success-url', 'none')).success_url).toBeNull();
  });
});

describe('downloadable files', () => {
  test('the thank-you page lists the product files and waits for the buyer: no redirect, a continue button to the success URL', async () => {
    const files = await admin(
      'products',
      'set',
      catalog.product._id,
      '--file',
      'Course workbook (PDF)=https://files.example.com/workbook.pdf',
      '--file',
      'Presets=https://files.example.com/presets.zip',
    );
    expect(files.files).toEqual([
      { name: 'Course workbook (PDF)', url: 'https://files.example.com/workbook.pdf' },
      { name: 'Presets', url: 'https://files.example.com/presets.zip' },
    ]);
    expect((await call(stack.api, store.key, 'GET', `/v1/products/${catalog.product._id}`)).body.files).toEqual(files.files);
    const page = await paidPage({ offer: catalog.oneOff._id, redirect_delay: 0, success_url: 'https://shop.example.com/done' });
    expect(page.text).toContain('data-testid="files"');
    expect(page.text).toContain('<a href="https://files.example.com/workbook.pdf" download rel="noopener">Course workbook (PDF)</a>');
    expect(page.text).toContain('https://files.example.com/presets.zip');
    expect(refreshTo(page.text)).toBeNull();
    expect(page.text).toContain('<a class="button" href="https://shop.example.com/done" data-testid="continue">');

    // Files removed: the page redirects again.
    await admin('products', 'set', catalog.product._id, '--file', 'none');
    expect(refreshTo((await paidPage({ offer: catalog.oneOff._id, redirect_delay: 0, success_url: 'https://shop.example.com/done' })).text)).toBe(
      'https://shop.example.com/done',
    );
  });
});
