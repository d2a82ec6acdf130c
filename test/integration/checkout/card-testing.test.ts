// What this tests: card testing bounded per offer and per store over real HTTP (API, worker, FerretDB,
// Temporal dev server, the test payment connection): the attack itself, declining cards sent through
// offer-link sessions opened on demand from rotating addresses, past the offer's (or store's) bound of
// declines gets a 429 page in the buyer's language without reaching the provider, one attempt per
// interval still goes through, so a real buyer who waits pays; another store is not slowed.
import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { TestStore } from '../../support/api';
import { buyerForm, createTestStore, seedCheckoutCatalog, startCheckoutStack, type CheckoutStack } from '../../support/checkout-fixtures';

const LIMITS = { perOffer: 4, perStore: 6, slowEveryMs: 3_000 };
let stack: CheckoutStack;

beforeAll(async () => {
  stack = await startCheckoutStack('card-testing', { cardTesting: LIMITS, offerLinkRateLimit: 100_000, ipRateLimit: 100_000 });
});

afterAll(async () => {
  await stack?.close();
});

const rotating = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

/** A new session through the offer link, as a visitor from a fresh address opens it (a single unit: no pack to choose). */
async function offerLinkSession(offerId: string): Promise<string> {
  const res = await fetch(`${stack.api.url}/o/${offerId}?pack=1`, { redirect: 'manual', headers: { 'x-forwarded-for': rotating() } });
  expect(res.status).toBe(303);
  return /\/c\/(cs_\w+)$/.exec(res.headers.get('location')!)![1];
}

async function pay(sessionId: string, card: string, lang = 'es') {
  const res = await fetch(`${stack.api.url}/c/${sessionId}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': rotating(), 'accept-language': lang },
    body: new URLSearchParams({ ...buyerForm(), method: 'card', card_number: card }).toString(),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), location: res.headers.get('location'), text: await res.text() };
}

/** Declining cards, each through a new offer-link session; the statuses in order and how long it took. */
async function attack(offerId: string, attempts: number) {
  const started = Date.now();
  const answers = [];
  for (let i = 0; i < attempts; i++) answers.push(await pay(await offerLinkSession(offerId), '4000000000000002'));
  return { answers, elapsedMs: Date.now() - started };
}

/** Turns handed out while slowed: one per interval the attack lasted (plus the one it started in). */
const turnsIn = (elapsedMs: number) => Math.ceil(elapsedMs / LIMITS.slowEveryMs) + 1;

describe('card testing through rotating offer-link sessions', () => {
  test('past the offer bound the declines stop reaching the provider (429, in the buyer’s language, with Retry-After); a buyer who waits still pays', async () => {
    const store: TestStore = await createTestStore(stack.mongo.db);
    const catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
    const { answers, elapsedMs } = await attack(catalog.oneOff._id, 14);
    const declined = answers.filter((a) => a.status === 402).length;
    const slowed = answers.filter((a) => a.status === 429);
    expect(answers.slice(0, LIMITS.perOffer).map((a) => a.status)).toEqual(Array(LIMITS.perOffer).fill(402));
    expect(declined).toBeLessThanOrEqual(LIMITS.perOffer + turnsIn(elapsedMs));
    expect(slowed.length + declined).toBe(14);
    expect(slowed.length).toBeGreaterThan(0);
    expect(slowed[0].text).toContain('lang="es"');
    expect(slowed[0].text).toContain('Se rechazaron muchas tarjetas en esta tienda');
    expect(Number(slowed[0].retryAfter)).toBeGreaterThan(0);
    expect(Number(slowed[0].retryAfter)).toBeLessThanOrEqual(LIMITS.slowEveryMs / 1000);

    const buyer = await offerLinkSession(catalog.oneOff._id);
    const deadline = Date.now() + 60_000;
    let paid = await pay(buyer, '4242424242424242');
    while (paid.status === 429 && Date.now() < deadline) paid = await pay(buyer, '4242424242424242');
    expect([paid.status, paid.location]).toEqual([303, `/c/${buyer}?done=1`]);
  });

  test('declines spread over offers count against the store: past its bound its offers are slowed too, another store is not', async () => {
    const store: TestStore = await createTestStore(stack.mongo.db);
    const catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
    const offers = [catalog.oneOff._id, catalog.monthly._id];
    for (let i = 0; i < LIMITS.perStore; i++) expect((await pay(await offerLinkSession(offers[i % 2]), '4000000000000002')).status).toBe(402);
    const { answers } = await attack(catalog.oneOff._id, 3);
    expect(answers.filter((a) => a.status === 429).length).toBeGreaterThan(0);
    const other = await createTestStore(stack.mongo.db);
    const otherCatalog = await seedCheckoutCatalog(stack.mongo.db, other.store._id);
    expect((await attack(otherCatalog.oneOff._id, 3)).answers.map((a) => a.status)).toEqual([402, 402, 402]);
  });
});
