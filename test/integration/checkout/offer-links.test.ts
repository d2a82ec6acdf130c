// What this tests: an offer's `checkout_url` over real HTTP (FerretDB, Temporal, a worker). A buyer's
// visit opens a fresh session for the offer and 303s to its page, honouring ?currency=, ?pack= and the
// browser's language; an offer sold in several packs shows them first and the chosen one opens the
// checkout; the shared host's link names the store (offer slugs are per store); a store's custom domain
// serves /o/<slug>; a subscription bought through the link has checkout_session null ("from a regular
// link"); an archived offer or unknown link gets the unavailable page; prefetches and link
// previews (chat bots, HEAD) create nothing; an address opening too many checkouts is told to wait; the
// admin CLI refuses a slug another offer of the store holds.
import http from 'node:http';
import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { runAdmin } from '../../../admin/cli';
import { collections, type OfferDoc } from '../../../store/collections';
import { createOffer } from '../../../store/catalog';
import { checkoutSessionsCollection } from '../../../store/checkout-sessions';
import {
  buyerForm,
  call,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';
import type { TestStore } from '../../support/api';
import { waitFor } from '../../support/env';

const CHECKOUTS_PER_ADDRESS = 3;

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;
/** Sold without packs, with a slug. */
let ticket: OfferDoc;
/** Sold in one pack only (of 5). */
let fivePack: OfferDoc;

beforeAll(async () => {
  stack = await startCheckoutStack('offer-links', { offerLinkRateLimit: CHECKOUTS_PER_ADDRESS });
  store = await createTestStore(stack.mongo.db, { name: 'Lumen Photo', slug: `lumen-${Date.now()}` });
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
  const common = { storeId: store.store._id, productId: catalog.product._id, type: 'one_off' as const };
  ticket = await createOffer(stack.mongo.db, {
    ...common,
    name: 'Photo Walk (ticket)',
    slug: `walk-${Date.now()}`,
    prices: [
      { currency: 'brl', amount: 5000, default: true },
      { currency: 'usd', amount: 1000, default: false },
    ],
  });
  fivePack = await createOffer(stack.mongo.db, {
    ...common,
    name: 'Prints (box of 5)',
    prices: [{ currency: 'brl', amount: 900, default: true }],
    packs: [5],
  });
});

afterAll(async () => {
  await stack?.close();
});

interface Answer {
  status: number;
  location: string | null;
  retryAfter: string | null;
  body: string;
}

/** A request with a chosen Host header (fetch cannot set one), without following redirects; each from its own address unless `from` says. */
function visit(
  url: string,
  options: { headers?: Record<string, string>; method?: string; form?: Record<string, string>; from?: string } = {},
): Promise<Answer> {
  const target = new URL(url);
  const api = new URL(stack.api.url);
  const body = options.form ? new URLSearchParams(options.form).toString() : undefined;
  const headers: Record<string, string> = {
    host: target.host,
    'x-forwarded-for': options.from ?? `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`,
    ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)) } : {}),
    ...options.headers,
  };
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: api.hostname, port: api.port, method: options.method ?? 'GET', path: `${target.pathname}${target.search}`, headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            location: res.headers.location ?? null,
            retryAfter: (res.headers['retry-after'] as string | undefined) ?? null,
            body: text,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const sessionCount = () => checkoutSessionsCollection(stack.mongo.db).countDocuments({ store_id: store.store._id });
const buttons = (body: string) => [...body.matchAll(/<button type="submit" data-testid="open-checkout">([^<]+)<\/button>/g)].map((m) => m[1]);

const offerOf = async (id: string, key = store.key) => (await call(stack.api, key, 'GET', `/v1/offers/${id}`)).body as { checkout_url: string };
const sessionOf = async (location: string) => {
  const id = /\/c\/(cs_\w+)$/.exec(location)?.[1];
  expect(id, location).toBeDefined();
  return (await checkoutSessionsCollection(stack.mongo.db).findOne({ _id: id! }))!;
};

describe('an offer link on the shared checkout host', () => {
  test('names the store and the offer; each visit opens a new session for the offer and sends the browser to its page', async () => {
    const { checkout_url } = await offerOf(ticket._id);
    expect(checkout_url).toBe(`${stack.api.config.checkoutUrl}/o/${store.store.slug}/${ticket.slug}`);
    const first = await visit(checkout_url);
    const second = await visit(checkout_url);
    expect([first.status, second.status]).toEqual([303, 303]);
    expect(first.location).not.toBe(second.location);
    const session = await sessionOf(first.location!);
    expect(session).toMatchObject({ store_id: store.store._id, status: 'open', offer: { id: ticket._id }, pack: null });
    const page = await visit(first.location!);
    expect(page.status).toBe(200);
    expect(page.body).toContain(ticket.name);
  });

  test('honours ?currency= and ?pack= (other parameters, such as utm_source, are ignored) and opens in the browser language', async () => {
    const { checkout_url } = await offerOf(catalog.oneOff._id);
    const res = await visit(`${checkout_url}?currency=USD&pack=5&utm_source=newsletter`, {
      headers: { 'accept-language': 'pt-BR,pt;q=0.9,en;q=0.8' },
    });
    expect(res.status).toBe(303);
    const chosen = await sessionOf(res.location!);
    expect({ currency: chosen.currency, pack: chosen.pack, locale: chosen.locale }).toEqual({ currency: 'usd', pack: 5, locale: 'pt' });
    // A currency the offer lacks is left to the buyer, who may switch on the page.
    const lacking = await sessionOf((await visit(`${stack.api.config.checkoutUrl}/o/${ticket._id}?currency=eur`)).location!);
    expect(lacking.currency).toBeNull();
  });

  test('an offer sold in several packs shows them first (also for a pack it lacks); the pack clicked opens the checkout with it', async () => {
    const { checkout_url } = await offerOf(catalog.oneOff._id);
    const before = await sessionCount();
    const choose = await visit(checkout_url, { headers: { 'accept-language': 'es' } });
    expect(choose.status).toBe(200);
    expect(choose.body).toContain('Elige un paquete');
    expect(buttons(choose.body)).toHaveLength(3);
    const lacking = await visit(`${checkout_url}?pack=3&currency=usd`);
    expect(lacking.status).toBe(200);
    expect(buttons(lacking.body)).toEqual(['Pack of 1 units · $39.00', 'Pack of 5 units · $195.00', 'Pack of 10 units · $390.00']);
    expect(await sessionCount()).toBe(before);

    const clicked = await visit(checkout_url, { method: 'POST', form: { currency: 'usd', pack: '10' } });
    expect(clicked.status).toBe(303);
    expect(await sessionOf(clicked.location!)).toMatchObject({ offer: { id: catalog.oneOff._id }, pack: 10, currency: 'usd' });
    // An offer sold in one pack only opens with it at once.
    const single = await visit(`${stack.api.config.checkoutUrl}/o/${fivePack._id}`);
    expect(single.status).toBe(303);
    expect((await sessionOf(single.location!)).pack).toBe(5);
  });

  test('an offer without a slug links by its id; a recurring offer opens a subscription session', async () => {
    const { checkout_url } = await offerOf(catalog.monthly._id);
    expect(checkout_url).toBe(`${stack.api.config.checkoutUrl}/o/${catalog.monthly._id}`);
    const session = await sessionOf((await visit(checkout_url)).location!);
    expect(session).toMatchObject({ mode: 'subscription', offer: { id: catalog.monthly._id } });
  });

  test('a subscription bought through the link is one "from a regular link": checkout_session null; its order still names the session', async () => {
    const { checkout_url } = await offerOf(catalog.monthly._id);
    const opened = await visit(checkout_url);
    const session = await sessionOf(opened.location!);
    const paid = await visit(`${opened.location}/pay`, { method: 'POST', form: { ...buyerForm(), method: 'card', card_number: '4242424242424242' } });
    expect(paid.status).toBe(303);
    const handedOff = await waitFor(async () => (await checkoutSessionsCollection(stack.mongo.db).findOne({ _id: session._id }))?.subscription, {
      description: 'the paid session to get its subscription',
    });
    const subscription = (await call(stack.api, store.key, 'GET', `/v1/subscriptions/${handedOff}`)).body;
    expect(subscription).toMatchObject({ status: 'active', offer: { id: catalog.monthly._id }, checkout_session: null });
    const order = (await call(stack.api, store.key, 'GET', `/v1/orders/${(await sessionOf(opened.location!)).order}`)).body;
    expect(order).toMatchObject({ checkout_session: session._id, subscription: handedOff });
  });

  test('an archived offer shows the unavailable page (410); an unknown link 404', async () => {
    const archived = await visit(`${stack.api.config.checkoutUrl}/o/${catalog.archived._id}`);
    expect(archived.status).toBe(410);
    expect(archived.body).toContain('data-testid="unavailable"');
    const unknown = await visit(`${stack.api.config.checkoutUrl}/o/${store.store.slug}/no-such-offer`);
    expect(unknown.status).toBe(404);
    // Another store's slug path does not reach this store's offer.
    const other = await createTestStore(stack.mongo.db, { slug: `other-${Date.now()}` });
    expect((await visit(`${stack.api.config.checkoutUrl}/o/${other.store.slug}/${ticket.slug}`)).status).toBe(404);
  });
});

describe('what is not a buyer opens nothing', () => {
  test('a browser prefetch or prerender is refused (not a 2xx the browser would keep and show), and no session is created', async () => {
    const { checkout_url } = await offerOf(ticket._id);
    const before = await sessionCount();
    const speculative: Record<string, string>[] = [
      { 'sec-purpose': 'prefetch' },
      { 'sec-purpose': 'prefetch;prerender' },
      { purpose: 'prefetch' },
      { 'x-purpose': 'preview' },
    ];
    for (const headers of speculative) {
      expect((await visit(checkout_url, { headers })).status, JSON.stringify(headers)).toBe(503);
    }
    expect(await sessionCount()).toBe(before);
  });

  test("a chat app's link preview, a crawler and a HEAD get the offer page with its title; its button opens the checkout", async () => {
    const { checkout_url } = await offerOf(ticket._id);
    const before = await sessionCount();
    const agents = [
      'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)',
      'WhatsApp/2.23.20.0',
      'facebookexternalhit/1.1',
      'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
    ];
    for (const agent of agents) {
      const preview = await visit(checkout_url, { headers: { 'user-agent': agent } });
      expect(preview.status, agent).toBe(200);
      expect(preview.body).toContain(`<meta property="og:title" content="${ticket.name}">`);
      expect(preview.body).toContain('<meta property="og:site_name" content="Lumen Photo">');
      expect(buttons(preview.body)).toEqual(['Continue to checkout']);
    }
    expect((await visit(checkout_url, { method: 'HEAD' })).status).toBe(200);
    expect(await sessionCount()).toBe(before);

    // Someone the agent list misjudges (a phone whose model name ends in "bot") still gets to pay.
    const phone = 'Mozilla/5.0 (Linux; Android 9; CUBOT P30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36';
    const page = await visit(checkout_url, { headers: { 'user-agent': phone } });
    const action = /<form method="post" action="([^"]+)"/.exec(page.body)?.[1];
    expect(action).toBe(new URL(checkout_url).pathname);
    const clicked = await visit(`${stack.api.config.checkoutUrl}${action}`, {
      method: 'POST',
      form: { currency: '' },
      headers: { 'user-agent': phone },
    });
    expect(clicked.status).toBe(303);
    expect(await sessionOf(clicked.location!)).toMatchObject({ offer: { id: ticket._id }, currency: null });
  });

  test('a buyer in an in-app browser (Telegram, Instagram, LinkedIn) goes straight to the checkout', async () => {
    const { checkout_url } = await offerOf(ticket._id);
    const inApp = [
      'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Mobile Safari/537.36 Telegram-Android/10.12.0 (Google Pixel 8; Android 14; SDK 34; HIGH)',
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 329.0.3.29.120 (iPhone15,3; iOS 17_4; pt_BR)',
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [LinkedInApp]/9.29.6',
    ];
    for (const agent of inApp) expect((await visit(checkout_url, { headers: { 'user-agent': agent } })).status, agent).toBe(303);
  });

  test('an address that opened too many checkouts is told when to come back; other addresses still buy', async () => {
    const { checkout_url } = await offerOf(ticket._id);
    const from = '192.0.2.77';
    for (let i = 0; i < CHECKOUTS_PER_ADDRESS; i++) expect((await visit(checkout_url, { from })).status).toBe(303);
    const before = await sessionCount();
    const refused = await visit(checkout_url, { from, headers: { 'accept-language': 'pt-BR' } });
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.retryAfter);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(600);
    expect(refused.body).toContain('data-testid="too-many-checkouts"');
    expect(refused.body).toContain(
      `Muitos pagamentos foram abertos a partir do seu endereço. Tente novamente em ${Math.ceil(retryAfter / 60)} minutos.`,
    );
    expect(await sessionCount()).toBe(before);
    expect((await visit(checkout_url)).status).toBe(303);
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
    // The pack page's buttons post to the link on the same domain.
    const choose = await visit(checkout_url);
    expect(/<form method="post" action="([^"]+)"/.exec(choose.body)?.[1]).toBe(`/o/${shopCatalog.oneOff.slug}`);
    const res = await visit(checkout_url, { method: 'POST', form: { currency: '', pack: '5' } });
    expect(res.status).toBe(303);
    expect(res.location).toMatch(new RegExp(`^https://${domain.replace(/\./g, '\\.')}/c/cs_\\w+$`));
    expect((await sessionOf(res.location!)).store_id).toBe(shop.store._id);
  });
});

describe('offer slugs (admin CLI)', () => {
  const admin = (...args: string[]) => runAdmin([...args, '--json'], { MONGODB_URI: inject('mongoUri'), MONGODB_DB: stack.mongo.db.databaseName });

  test("a slug another offer of the store holds is refused (both would share one link); a new slug moves the offer's link", async () => {
    const taken = await admin('offers', 'set', ticket._id, '--slug', catalog.oneOff.slug!);
    expect(taken.code).toBe(1);
    expect(taken.output).toContain('is taken');

    const slug = `walk-renamed-${Date.now()}`;
    expect((await admin('offers', 'set', ticket._id, '--slug', slug)).code).toBe(0);
    const { checkout_url } = await offerOf(ticket._id);
    expect(checkout_url).toBe(`${stack.api.config.checkoutUrl}/o/${store.store.slug}/${slug}`);
    const res = await visit(checkout_url);
    expect(res.status).toBe(303);
    expect((await sessionOf(res.location!)).offer.id).toBe(ticket._id);
  });
});
