// What this tests: an offer's `checkout_url` over real HTTP (FerretDB, Temporal, a worker). Each visit
// opens a fresh session for the offer and 303s to its page, honouring ?currency=, ?pack= and the
// browser's language; the shared host's link names the store (offer slugs are per store); a store's
// custom domain serves /o/<slug>; an archived offer or unknown link gets the unavailable page; a
// prefetch creates nothing.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { collections } from '../../store/collections';
import { checkoutSessionsCollection } from '../../store/checkout-sessions';
import { call, createTestStore, seedCheckoutCatalog, startCheckoutStack, type CheckoutCatalog, type CheckoutStack } from '../support/checkout-fixtures';
import type { TestStore } from '../support/api';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;

beforeAll(async () => {
  stack = await startCheckoutStack('offer-links');
  store = await createTestStore(stack.mongo.db, { slug: `lumen-${Date.now()}` });
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
});

afterAll(async () => {
  await stack?.close();
});

/** GET with a chosen Host header (fetch cannot set one), without following redirects. */
function visit(url: string, headers: Record<string, string> = {}): Promise<{ status: number; location: string | null; body: string }> {
  const target = new URL(url);
  const api = new URL(stack.api.url);
  return new Promise((resolve, reject) => {
    http
      .get({ host: api.hostname, port: api.port, path: `${target.pathname}${target.search}`, headers: { host: target.host, ...headers } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, location: res.headers.location ?? null, body }));
      })
      .on('error', reject);
  });
}

const offerOf = async (id: string, key = store.key) => (await call(stack.api, key, 'GET', `/v1/offers/${id}`)).body as { checkout_url: string };
const sessionOf = async (location: string) => {
  const id = /\/c\/(cs_\w+)$/.exec(location)?.[1];
  expect(id, location).toBeDefined();
  return (await checkoutSessionsCollection(stack.mongo.db).findOne({ _id: id! }))!;
};

describe('an offer link on the shared checkout host', () => {
  test('names the store and the offer; each visit opens a new session for the offer and sends the browser to its page', async () => {
    const { checkout_url } = await offerOf(catalog.oneOff._id);
    expect(checkout_url).toBe(`${stack.api.config.checkoutUrl}/o/${store.store.slug}/${catalog.oneOff.slug}`);
    const first = await visit(checkout_url);
    const second = await visit(checkout_url);
    expect([first.status, second.status]).toEqual([303, 303]);
    expect(first.location).not.toBe(second.location);
    const session = await sessionOf(first.location!);
    expect(session).toMatchObject({ store_id: store.store._id, status: 'open', offer: { id: catalog.oneOff._id } });
    const page = await visit(first.location!);
    expect(page.status).toBe(200);
    expect(page.body).toContain(catalog.oneOff.name);
  });

  test('honours ?currency= and ?pack=, leaves a currency or pack the offer lacks to the buyer, and opens in the browser language', async () => {
    const { checkout_url } = await offerOf(catalog.oneOff._id);
    const chosen = await sessionOf((await visit(`${checkout_url}?currency=usd&pack=5`, { 'accept-language': 'pt-BR,pt;q=0.9,en;q=0.8' })).location!);
    expect({ currency: chosen.currency, pack: chosen.pack, locale: chosen.locale }).toEqual({ currency: 'usd', pack: 5, locale: 'pt' });
    const lacking = await sessionOf((await visit(`${checkout_url}?currency=eur&pack=3`)).location!);
    expect({ currency: lacking.currency, pack: lacking.pack }).toEqual({ currency: null, pack: null });
  });

  test('an offer without a slug links by its id; a recurring offer opens a subscription session', async () => {
    const { checkout_url } = await offerOf(catalog.monthly._id);
    expect(checkout_url).toBe(`${stack.api.config.checkoutUrl}/o/${catalog.monthly._id}`);
    const session = await sessionOf((await visit(checkout_url)).location!);
    expect(session).toMatchObject({ mode: 'subscription', offer: { id: catalog.monthly._id } });
  });

  test('an archived offer shows the unavailable page (410); an unknown link 404; a prefetch creates no session', async () => {
    const archived = await visit(`${stack.api.config.checkoutUrl}/o/${catalog.archived._id}`);
    expect(archived.status).toBe(410);
    expect(archived.body).toContain('data-testid="unavailable"');
    const unknown = await visit(`${stack.api.config.checkoutUrl}/o/${store.store.slug}/no-such-offer`);
    expect(unknown.status).toBe(404);
    // Another store's slug path does not reach this store's offer.
    const other = await createTestStore(stack.mongo.db, { slug: `other-${Date.now()}` });
    expect((await visit(`${stack.api.config.checkoutUrl}/o/${other.store.slug}/${catalog.oneOff.slug}`)).status).toBe(404);

    const before = await checkoutSessionsCollection(stack.mongo.db).countDocuments({ store_id: store.store._id });
    const { checkout_url } = await offerOf(catalog.oneOff._id);
    const prefetch = await visit(checkout_url, { 'sec-purpose': 'prefetch' });
    expect(prefetch.status).toBe(204);
    expect(await checkoutSessionsCollection(stack.mongo.db).countDocuments({ store_id: store.store._id })).toBe(before);
  });
});

describe("an offer link on the store's custom domain", () => {
  test('is /o/<offer slug> on that domain and opens the session there', async () => {
    const domain = `shop-${Date.now()}.example`;
    const shop = await createTestStore(stack.mongo.db);
    await collections(stack.mongo.db).stores.updateOne({ _id: shop.store._id }, { $set: { custom_domain: domain } });
    const shopCatalog = await seedCheckoutCatalog(stack.mongo.db, shop.store._id);
    const { checkout_url } = await offerOf(shopCatalog.oneOff._id, shop.key);
    expect(checkout_url).toBe(`https://${domain}/o/${shopCatalog.oneOff.slug}`);
    const res = await visit(checkout_url);
    expect(res.status).toBe(303);
    expect(res.location).toMatch(new RegExp(`^https://${domain.replace(/\./g, '\\.')}/c/cs_\\w+$`));
    expect((await sessionOf(res.location!)).store_id).toBe(shop.store._id);
  });
});
