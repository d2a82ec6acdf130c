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
// the API's own process would measure the CPU, not the isolation.
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

const CARD_OK = '4242424242424242';
const CARD_DECLINED = '4000000000000002';
const FLOOD_PACE_MS = 50;
/** B's creates measured quiet and attacked each, in alternating blocks of BLOCK. */
const SAMPLES = 150;
const BLOCK = 15;
const EVENT_BYTES = 20_000;

let stack: CheckoutStack;
let storeA: TestStore;
let storeB: TestStore;
let catalogA: CheckoutCatalog;
let catalogB: CheckoutCatalog;

beforeAll(async () => {
  // One trusted proxy hop: the last X-Forwarded-For entry is the client, anything before it is the client's own words.
  stack = await startCheckoutStack('noisy-neighbour', {
    trustProxy: 1,
    pagePostRateLimit: 10,
    offerLinkRateLimit: 10,
    listen: { ...listenLimitsFrom({}), stallMs: 120_000 },
    cardTesting: DEFAULT_CARD_TESTING_LIMITS,
  });
  [storeA, storeB] = await Promise.all([createTestStore(stack.mongo.db), createTestStore(stack.mongo.db)]);
  [catalogA, catalogB] = await Promise.all([
    seedCheckoutCatalog(stack.mongo.db, storeA.store._id),
    seedCheckoutCatalog(stack.mongo.db, storeB.store._id),
  ]);
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
    const res = await call(stack.api, storeB.key, 'POST', '/v1/checkout/sessions', { json: { offer: catalogB.oneOff._id } });
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
  const res = await fetch(`${stack.api.url}${path}`, { ...init, headers, redirect: 'manual', signal: AbortSignal.timeout(15_000) });
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
  const port = Number(new URL(stack.api.url).port);
  const readers = Array.from({ length: 5 }, () => {
    const socket = net.connect(port, '127.0.0.1');
    socket.pause();
    socket.write(`GET /v1/webhook_endpoints/listen?since=${docs[0]._id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${storeA.key}\r\n\r\n`);
    return socket;
  });
  // Measured once each has filled its socket: from then on a reader that does not read costs nothing but its buffer.
  await waitFor(() => listenSessionsInProcess().behind === 5, { timeoutMs: 30_000, description: "A's five listen sessions to fill their sockets" });
  return readers;
}

/** One B buyer pays by card on the hosted page, from an address of its own. */
async function payAsB(n: number): Promise<string> {
  const session = (await call(stack.api, storeB.key, 'POST', '/v1/checkout/sessions', { json: { offer: catalogB.oneOff._id } })).body as {
    id: string;
  };
  const form = { ...buyerForm({ method: 'card' }), card_number: CARD_OK, card_expiry: '12/30', card_cvc: '123' };
  const res = await fetch(`${stack.api.url}/c/${session.id}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': `198.51.100.${n}` },
    body: new URLSearchParams(form).toString(),
  });
  await res.arrayBuffer();
  expect(res.status).toBe(303);
  return session.id;
}

describe('store A attacks while store B sells', () => {
  it("B's checkout p99 stays within 2x of quiet, every B payment completes, A gets only typed 4xx, listen memory bounded", async () => {
    await createLatencies(10); // warm up: the first requests compile routes and open connections
    const readers = await slowReaders();
    const sessionOfA = (await call(stack.api, storeA.key, 'POST', '/v1/checkout/sessions', { json: { offer: catalogA.oneOff._id } })).body as {
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
      const sixth = await call(stack.api, storeA.key, 'GET', '/v1/webhook_endpoints/listen');
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
