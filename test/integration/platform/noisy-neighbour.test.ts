// What this tests: one tenant cannot hurt another (R3 3/7). Store A attacks one API process (real
// FerretDB, Temporal, worker, HTTP): five listen readers that never read a 6 MB replay each (and a sixth
// past the per-store cap), and keyless, offer-link and card-testing page floods from rotating forged
// X-Forwarded-For entries in front of the trusted proxy hop. Store B sells through checkout: B's
// checkout-create p99 in attacked blocks stays within 2x of its p99 in quiet blocks (floods paused,
// the blocked readers still connected; blocks alternate so the shared machine's other work weighs on
// both alike), every B payment completes, A only ever gets 2xx/3xx/typed 4xx (never a 5xx or a hang),
// and the readers hold a bounded number of bytes in the API (measured; the API shares this process
// with the worker and the test, so process RSS would measure the worker's workflow isolates instead).
// Floods are paced (one request per FLOOD_PACE_MS per flood, 60 a second together): an unpaced loop in
// the API's own process would measure the CPU, not the isolation. The second test runs api/server.ts in
// a process of its own (as deployed) and adds the clock attack: A's test clock at its caps (3 customers,
// 7 monthly subscriptions renewing at staggered stops, 3 open sessions: its 10 slots) advanced a month
// whenever ready, with more clock objects asked for past the caps, while B also renews on real time: the
// same p99 method, B's renewal paid, A's clock calls typed 400s, the API's RSS under API_RSS_BOUND_MIB.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { randomInt } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenLimitsFrom } from '../../../api/listen-limits';
import { DEFAULT_CARD_TESTING_LIMITS } from '../../../services/checkout/card-testing';
import { listenSessionsInProcess } from '../../../api/routes/webhook-listen';
import { buildEventDoc, insertEvents } from '../../../store/events';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { collections } from '../../../store/collections';
import { findCustomer } from '../../../store/customers';
import { ordersCollection } from '../../../store/orders';
import { createTestConnection } from '../../../adapters/provider/test-connection';
import { createSubscription } from '../../../services/subscriptions/subscriptions';
import { reserveClockObject, TEST_CLOCK_LIMITS } from '../../../services/test-clocks';
import { periodEnd } from '../../../domain/billing-periods';
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
import { startApiProcess } from '../../support/app-processes';

const CARD_OK = '4242424242424242';
const CARD_DECLINED = '4000000000000002';
const FLOOD_PACE_MS = 50;
/**
 * B's creates measured quiet and attacked each, in alternating blocks of BLOCK. Both run beside CI's other test
 * files, so p99 is the 3rd slowest of 300, not the 2nd of 150: one outside stall does not decide it.
 */
const SAMPLES = 300;
const BLOCK = 15;
const EVENT_BYTES = 20_000;

let stack: CheckoutStack;
let storeA: TestStore;
let storeB: TestStore;
let catalogA: CheckoutCatalog;
let catalogB: CheckoutCatalog;
/** The API the attacks and B's traffic go to: the stack's (in this process), or an API process of its own. */
let target: { url: string };

beforeAll(async () => {
  // One trusted proxy hop: the last X-Forwarded-For entry is the client, anything before it is the client's own words.
  stack = await startCheckoutStack('noisy-neighbour', {
    trustProxy: 1,
    pagePostRateLimit: 10,
    offerLinkRateLimit: 10,
    listen: { ...listenLimitsFrom({}), stallMs: 120_000 },
    cardTesting: DEFAULT_CARD_TESTING_LIMITS,
    // B creates back to back, past its key's default 100 per 2 s on a fast machine (its own 429 in CI on fa12d4f);
    // A's floods carry no key, so raising it changes no attack. Pacing B instead lowered its quiet p99 so far that
    // the ratio, not the isolation, decided the test.
    keyRateLimit: 1_000,
  });
  [storeA, storeB] = await Promise.all([createTestStore(stack.mongo.db), createTestStore(stack.mongo.db)]);
  [catalogA, catalogB] = await Promise.all([
    seedCheckoutCatalog(stack.mongo.db, storeA.store._id),
    seedCheckoutCatalog(stack.mongo.db, storeB.store._id),
  ]);
  target = stack.api;
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const p99 = (samples: number[]) => [...samples].sort((a, b) => a - b)[Math.ceil(samples.length * 0.99) - 1];

/** B's checkout creates, one after another: each one's latency in ms. */
async function createLatencies(n: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const res = await call(target, storeB.key, 'POST', '/v1/checkout/sessions', { json: { offer: catalogB.oneOff._id } });
    latencies.push(performance.now() - started);
    expect(res.status).toBe(201);
  }
  return latencies;
}

/** A's requests: each status, with a deadline so a hang fails the test instead of stalling it. */
const statusesOfA: number[] = [];
async function asA(path: string, init: RequestInit & { forged?: boolean } = {}): Promise<void> {
  const forged = `${randomInt(1, 224)}.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
  const headers = { ...(init.headers as Record<string, string>), 'x-forwarded-for': `${forged}, 203.0.113.66` };
  const res = await fetch(`${target.url}${path}`, { ...init, headers, redirect: 'manual', signal: AbortSignal.timeout(15_000) });
  await res.arrayBuffer();
  statusesOfA.push(res.status);
}

/** The floods run while this is true (the attacked blocks of B's measurement). */
let attacking = false;

/** Runs `attack` paced, during the attacked blocks, until `stop` aborts. */
async function flood(stop: AbortSignal, attack: () => Promise<void>): Promise<void> {
  while (!stop.aborted) {
    if (attacking) await attack();
    await delay(FLOOD_PACE_MS);
  }
}

/** Five readers of a large replay that never read (the per-store cap), connected raw so nothing consumes their sockets. */
async function slowReaders(): Promise<net.Socket[]> {
  const docs = Array.from({ length: 300 }, (_, i) =>
    buildEventDoc(
      { storeId: storeA.store._id, type: 'customer.updated', object: { id: `cus_${i}`, note: 'x'.repeat(EVENT_BYTES) } },
      Date.now() - (300 - i) * 2,
    ),
  );
  for (let i = 0; i < docs.length; i += 100) await insertEvents(stack.mongo.db, docs.slice(i, i + 100));
  const port = Number(new URL(target.url).port);
  const readers = Array.from({ length: 5 }, () => {
    const socket = net.connect(port, '127.0.0.1');
    socket.pause();
    socket.write(`GET /v1/webhook_endpoints/listen?since=${docs[0]._id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${storeA.key}\r\n\r\n`);
    return socket;
  });
  // Measured once each has filled its socket: from then on a reader that does not read costs nothing but its buffer.
  if (target === stack.api) {
    await waitFor(() => listenSessionsInProcess().behind === 5, { timeoutMs: 30_000, description: "A's five listen sessions to fill their sockets" });
  } else {
    await waitFor(async () => (await sixthListenStatus()) === 429 || null, { timeoutMs: 30_000, description: "A's five listen sessions open" });
  }
  return readers;
}

/** A sixth listen of A's (headers only, then dropped): 429 once the five readers hold the store's sessions. */
async function sixthListenStatus(): Promise<number> {
  const res = await fetch(`${target.url}/v1/webhook_endpoints/listen`, {
    headers: { authorization: `Bearer ${storeA.key}` },
    signal: AbortSignal.timeout(5_000),
  });
  await res.body?.cancel();
  return res.status;
}

/** One B buyer pays by card on the hosted page, from an address of its own. */
async function payAsB(n: number): Promise<string> {
  const session = (await call(target, storeB.key, 'POST', '/v1/checkout/sessions', { json: { offer: catalogB.oneOff._id } })).body as {
    id: string;
  };
  const form = { ...buyerForm({ method: 'card' }), card_number: CARD_OK, card_expiry: '12/30', card_cvc: '123' };
  const res = await fetch(`${target.url}/c/${session.id}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': `198.51.100.${n}` },
    body: new URLSearchParams(form).toString(),
  });
  await res.arrayBuffer();
  expect(res.status).toBe(303);
  return session.id;
}

const DAY = 24 * 60 * 60;

/** A monthly subscription of `customerId` whose first period began at `startMs` (its clock's or real time), card 4242 saved. */
async function subscribeAt(store: TestStore, offerId: string, customerId: string, startMs: number): Promise<string> {
  const db = stack.mongo.db;
  const provider = createTestConnection({ db });
  const customer = (await findCustomer(db, store.store._id, customerId))!;
  const offer = (await collections(db).offers.findOne({ _id: offerId }))!;
  const product = (await collections(db).products.findOne({ _id: offer.product_id }))!;
  const saved = await provider.saveCard({ storeId: store.store._id, customerId, card: { number: CARD_OK } });
  if (!saved.ok) throw new Error(saved.message);
  const deps = { db, provider, temporal: stack.temporal.client, taskQueue: stack.taskQueue };
  const doc = await createSubscription(deps, {
    store: store.store,
    customer,
    offer,
    product,
    paymentMethod: saved.card,
    firstPeriodPaid: true,
    now: startMs,
  });
  return doc._id;
}

const customerFields = { name: 'Ana Clock', phone: '+5511999990000', document: { type: 'cpf', number: '529.982.247-25' } };

/**
 * A's clock at its caps: 3 customers, 7 monthly subscriptions bought a day apart (each renews at its own
 * stop) and 3 open sessions, 10 slots in all (the subscriptions take theirs as their checkouts would have).
 */
async function fullClockOfA(): Promise<{ clock: string; customer: string }> {
  const t0 = Math.floor(Date.now() / 1000);
  const post = (path: string, json: unknown) => call(target, storeA.key, 'POST', path, { json });
  const clock = (await post('/v1/test_helpers/test_clocks', { frozen_time: t0 })).body.id as string;
  const customers: string[] = [];
  for (let i = 0; i < TEST_CLOCK_LIMITS.customers; i++) {
    customers.push((await post('/v1/customers', { email: `a-clock-${i}-${t0}@example.com`, ...customerFields, test_clock: clock })).body.id);
  }
  const sessions = 3;
  for (let i = 0; i < TEST_CLOCK_LIMITS.checkout_sessions - sessions; i++) {
    await reserveClockObject(stack.mongo.db, storeA.store._id, clock, 'checkout_sessions', 'customer');
    await subscribeAt(storeA, catalogA.monthly._id, customers[i % customers.length], (t0 - (i + 1) * DAY) * 1000);
  }
  for (let i = 1; i <= sessions; i++) {
    const made = await post('/v1/checkout/sessions', { offer: catalogA.oneOff._id, customer: customers[0], expires_at: t0 + i * 3600 });
    expect(made.status).toBe(201);
  }
  return { clock, customer: customers[0] };
}

/** A's clock calls (from an address of their own, so the keyless flood's address limit does not stop them): each status and error code. */
const clockAnswersOfA: { what: string; status: number; code: string | null }[] = [];
async function asAOnClock(method: string, path: string, json?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${target.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${storeA.key}`,
      'x-forwarded-for': '203.0.113.77',
      ...(json === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: json === undefined ? undefined : JSON.stringify(json),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await res.json()) as any;
  clockAnswersOfA.push({ what: `${method} ${path.split('/').pop()}`, status: res.status, code: body?.error?.code ?? null });
  return { status: res.status, body };
}

/** One round of A's clock attack: advance a month whenever ready (else asked anyway: 400 test_clock_advancing), and one more object past each cap. */
async function clockAttack(clock: string, customer: string): Promise<void> {
  const now = await asAOnClock('GET', `/v1/test_helpers/test_clocks/${clock}`);
  await asAOnClock('POST', `/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: now.body.frozen_time + 30 * DAY });
  await asAOnClock('POST', '/v1/customers', { email: `a-more-${randomInt(1e9)}@example.com`, ...customerFields, test_clock: clock });
  await asAOnClock('POST', '/v1/checkout/sessions', { offer: catalogA.oneOff._id, customer });
}

/** B's monthly subscription on real time, its period ending `inSeconds` from now: its renewal runs during the attack. */
async function renewingSoonOfB(inSeconds: number): Promise<string> {
  const end = Math.floor(Date.now() / 1000) + inSeconds;
  const start = new Date(end * 1000);
  start.setUTCMonth(start.getUTCMonth() - 1);
  const startSeconds = Math.floor(start.getTime() / 1000);
  expect(periodEnd(startSeconds, 'monthly', null)).toBe(end);
  const customer = (await call(target, storeB.key, 'POST', '/v1/customers', { json: { email: `b-renews-${end}@example.com`, ...customerFields } }))
    .body.id as string;
  return subscribeAt(storeB, catalogB.monthly._id, customer, startSeconds * 1000);
}

describe('store A attacks while store B sells', () => {
  it("B's checkout p99 stays within 2x of quiet, every B payment completes, A gets only typed 4xx, listen memory bounded", async () => {
    await createLatencies(10); // warm up: the first requests compile routes and open connections
    const readers = await slowReaders();
    const sessionOfA = (await call(target, storeA.key, 'POST', '/v1/checkout/sessions', { json: { offer: catalogA.oneOff._id } })).body as {
      id: string;
    };
    const declining = new URLSearchParams({
      ...buyerForm({ method: 'card' }),
      card_number: CARD_DECLINED,
      card_expiry: '12/30',
      card_cvc: '123',
    }).toString();
    const stop = new AbortController();
    const floods = [
      flood(stop.signal, () => asA('/v1/customers')),
      flood(stop.signal, () => asA(`/o/${catalogA.oneOff._id}?pack=1`)),
      flood(stop.signal, () =>
        asA(`/c/${sessionOfA.id}/pay`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: declining }),
      ),
    ];
    const quiet: number[] = [];
    const noisy: number[] = [];
    let maxBuffered = 0;
    const sampler = setInterval(() => (maxBuffered = Math.max(maxBuffered, listenSessionsInProcess().bufferedBytes)), 50);
    try {
      const sixth = await call(target, storeA.key, 'GET', '/v1/webhook_endpoints/listen');
      expect(sixth.status).toBe(429);
      expect(sixth.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit' });
      // Quiet and attacked blocks alternate, so the machine's other work weighs on both alike.
      for (let block = 0; block < SAMPLES / BLOCK; block++) {
        attacking = false;
        quiet.push(...(await createLatencies(BLOCK)));
        attacking = true;
        noisy.push(...(await createLatencies(BLOCK)));
      }
      const paid = [];
      for (let n = 1; n <= 5; n++) paid.push(await payAsB(n));
      for (const id of paid) {
        const doc = await findCheckoutSession(stack.mongo.db, storeB.store._id, id);
        expect({ status: doc?.status, payment_status: doc?.payment_status }).toEqual({ status: 'complete', payment_status: 'paid' });
      }
    } finally {
      stop.abort();
      await Promise.all(floods);
      clearInterval(sampler);
      for (const reader of readers) reader.destroy();
    }
    console.info(`In-process API: B create p99 quiet ${p99(quiet).toFixed(1)} ms, attacked ${p99(noisy).toFixed(1)} ms`);
    expect(p99(noisy), `quiet p99 ${p99(quiet).toFixed(1)} ms, attacked p99 ${p99(noisy).toFixed(1)} ms`).toBeLessThanOrEqual(2 * p99(quiet));

    // A was refused where it went too far, always with a typed 4xx, never a 5xx.
    expect(statusesOfA.filter((s) => s >= 500)).toEqual([]);
    expect(statusesOfA.filter((s) => s === 429).length).toBeGreaterThan(statusesOfA.length / 2);
    // A's keyless flood named no store, so no log was written for it; B's calls were logged (the writes go in order).
    const logs = collections(stack.mongo.db).requestLogs;
    await waitFor(async () => (await logs.countDocuments({ store_id: storeB.store._id })) >= SAMPLES * 2, { description: "B's request logs" });
    expect(await logs.countDocuments({ store_id: null })).toBe(0);
    // Five readers hold at most the socket's high-water mark and one event each, not their 6 MB replays.
    expect(maxBuffered).toBeLessThanOrEqual(5 * (16_384 + EVENT_BYTES + 2_000));
  }, 400_000);
});

/** The API's resident memory bound under every attack at once (docs/limits.md), its own process as deployed. */
const API_RSS_BOUND_MIB = 512;
const MIB = 2 ** 20;

/** A process's resident memory (Linux /proc), in bytes. */
function rssOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return line ? Number(line.split(/\s+/)[1]) * 1024 : 0;
}

/** An API process of its own on the stack's database, Temporal and task queue, limits as the stack's. */
function apiProcessAsStack() {
  return startApiProcess({
    MONGODB_DB: stack.mongo.db.databaseName,
    TEMPORAL_NAMESPACE: stack.temporal.namespace,
    TEMPORAL_TASK_QUEUE: stack.taskQueue,
    TRUST_PROXY: '1',
    PAGE_POST_RATE_LIMIT: '10',
    OFFER_LINK_RATE_LIMIT: '10',
    LISTEN_STALL_MS: '120000',
  });
}

describe('the API in a process of its own (as deployed), A adding the clock attack', () => {
  it(`B's checkout p99 stays within 2x of quiet, B's payments and real renewal complete, A gets only typed 4xx, the API stays under ${API_RSS_BOUND_MIB} MiB RSS`, async () => {
    const api = await apiProcessAsStack();
    target = api;
    const rss: number[] = [];
    const sampler = setInterval(() => rss.push(rssOf(api.group.pid)), 100);
    const stop = new AbortController();
    const floods: Promise<void>[] = [];
    let readers: net.Socket[] = [];
    const warm = { mib: 0 };
    const quiet: number[] = [];
    const noisy: number[] = [];
    try {
      await createLatencies(30); // warm up: routes compiled, connections open
      warm.mib = Math.max(...rss) / MIB;
      rss.length = 0;
      const { clock, customer } = await fullClockOfA();
      const renewingOfB = await renewingSoonOfB(60);
      readers = await slowReaders();
      const sessionOfA = (await call(target, storeA.key, 'POST', '/v1/checkout/sessions', { json: { offer: catalogA.oneOff._id } })).body
        .id as string;
      const declining = new URLSearchParams({
        ...buyerForm({ method: 'card' }),
        card_number: CARD_DECLINED,
        card_expiry: '12/30',
        card_cvc: '123',
      }).toString();
      floods.push(
        flood(stop.signal, () => asA('/v1/customers')),
        flood(stop.signal, () => asA(`/o/${catalogA.oneOff._id}?pack=1`)),
        flood(stop.signal, () =>
          asA(`/c/${sessionOfA}/pay`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: declining }),
        ),
        flood(stop.signal, () => clockAttack(clock, customer)),
      );
      for (let block = 0; block < SAMPLES / BLOCK; block++) {
        attacking = false;
        quiet.push(...(await createLatencies(BLOCK)));
        attacking = true;
        noisy.push(...(await createLatencies(BLOCK)));
      }
      for (let n = 11; n <= 13; n++) {
        const id = await payAsB(n);
        const doc = await findCheckoutSession(stack.mongo.db, storeB.store._id, id);
        expect({ status: doc?.status, payment_status: doc?.payment_status }).toEqual({ status: 'complete', payment_status: 'paid' });
      }
      // B's real renewal is not held up behind A's clock (its own task queue): paid.
      const renewal = { store_id: storeB.store._id, subscription: renewingOfB, order_type: 'renewal' as const, status: 'paid' as const };
      await waitFor(async () => (await ordersCollection(stack.mongo.db).findOne(renewal)) ?? null, {
        timeoutMs: 90_000,
        description: "B's renewal paid",
      });
    } finally {
      stop.abort();
      await Promise.all(floods);
      attacking = false;
      clearInterval(sampler);
      for (const reader of readers) reader.destroy();
      target = stack.api;
      await api.group.stop({ timeoutMs: 10_000 });
    }
    const advanced = clockAnswersOfA.filter((a) => a.what === 'POST advance' && a.status === 200).length;
    const attackedMiB = Math.max(...rss) / MIB;
    console.info(
      `API process: B create p99 quiet ${p99(quiet).toFixed(1)} ms, attacked ${p99(noisy).toFixed(1)} ms; A's clock advanced ${advanced} time(s); ` +
        `RSS ${warm.mib.toFixed(0)} MiB after warm-up, at most ${attackedMiB.toFixed(0)} MiB under attack (${rss.length} samples)`,
    );
    expect(p99(noisy), `quiet p99 ${p99(quiet).toFixed(1)} ms, attacked p99 ${p99(noisy).toFixed(1)} ms`).toBeLessThanOrEqual(2 * p99(quiet));
    expect(statusesOfA.filter((s) => s >= 500)).toEqual([]);
    // A's clock advanced (its renewals ran) and every other clock call was a typed 400: advancing, or past a cap.
    expect(
      clockAnswersOfA
        .filter((a) => a.status !== 200)
        .every((a) => a.status === 400 && ['test_clock_advancing', 'test_clock_limit'].includes(a.code!)),
    ).toBe(true);
    expect(clockAnswersOfA.filter((a) => a.code === 'test_clock_limit').length).toBeGreaterThan(0);
    expect(advanced).toBeGreaterThan(0);
    expect(await ordersCollection(stack.mongo.db).countDocuments({ store_id: storeA.store._id, order_type: 'renewal' })).toBeGreaterThan(0);
    expect(attackedMiB).toBeLessThanOrEqual(API_RSS_BOUND_MIB);
  }, 600_000); // a child API's start and 300 creates: 135 s at load 22, 291 s at load 27
});
