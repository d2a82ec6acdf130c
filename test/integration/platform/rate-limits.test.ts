// Rate limits over real HTTP: 100 requests per 2-second window per key and 10 a minute per address
// without a valid key, 429 rate_limit with Retry-After beyond; exact across two API processes (this
// test's in-process API and a second `tsx api/server.ts` process) sharing one database; the shared
// windows themselves across separate MongoClients, and the sweep of ended windows.
import { spawn, type ChildProcess } from 'node:child_process';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { testMongo, waitFor, type TestMongo } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { loadApiConfig } from '../../../api/config';
import { collections } from '../../../store/collections';
import { freePort } from '../../../temporal-dev/servers';
import { blockSizeFor, SharedRateWindows, sweepExpiredWindows, type WindowHit } from '../../../store/rate-counters';

let mongo: TestMongo;
let store: TestStore;
/** Windows of an hour, so a burst never straddles two windows by accident. */
const HOUR = 3_600_000;

beforeAll(async () => {
  mongo = await testMongo();
  store = await createTestStore(mongo.db);
});
afterAll(async () => {
  await mongo?.close();
});

type Res = Awaited<ReturnType<typeof call>>;

function tally(responses: Res[]) {
  const count = (status: number) => responses.filter((r) => r.status === status).length;
  return {
    ok: count(200),
    unauthorized: count(401),
    limited: count(429),
    other: responses.filter((r) => ![200, 401, 429].includes(r.status)).length,
  };
}

function expectRateLimited(res: Res, windowSeconds: number) {
  expect(res.status).toBe(429);
  expect(res.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit', param: null });
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(windowSeconds);
  expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
  expect(res.headers.get('request-id')).toMatch(/^req_[0-9a-f]{20}$/);
}

describe('defaults', () => {
  it('the configuration defaults are 100 per 2 s per key and 10 per minute per address', () => {
    const config = loadApiConfig({ NODE_ENV: 'development' });
    expect([config.keyRateLimit, config.keyRateWindowMs, config.ipRateLimit, config.ipRateWindowMs]).toEqual([100, 2000, 10, 60_000]);
  });
});

describe('one API process', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ db: mongo.db });
  });
  afterAll(async () => api?.close());

  it('one process lets exactly 100 through in a window, refuses the rest with 429 and Retry-After, then opens again', async () => {
    const { key } = await store.makeKey(['read']);
    // A burst in parallel: every response names its window; within one window exactly 100 pass.
    const responses = await Promise.all(Array.from({ length: 140 }, () => call(api, key, 'GET', '/v1/account')));
    const byWindow = new Map<string, Res[]>();
    for (const r of responses) byWindow.set(r.headers.get('x-ratelimit-reset')!, [...(byWindow.get(r.headers.get('x-ratelimit-reset')!) ?? []), r]);
    for (const group of byWindow.values()) {
      const t = tally(group);
      expect(t.ok).toBeLessThanOrEqual(100);
      if (t.limited > 0) expect(t.ok).toBe(100);
    }
    const limited = responses.find((r) => r.status === 429);
    if (limited) expectRateLimited(limited, 2);
    expect(responses.some((r) => r.status === 200 && r.headers.get('x-ratelimit-limit') === '100')).toBe(true);
    // Once the window ends the key is served again (polled, bounded by two windows).
    await waitFor(async () => (await call(api, key, 'GET', '/v1/account')).status === 200, { timeoutMs: 5000, intervalMs: 200 });
  });

  it('X-RateLimit-Remaining counts down within a window', async () => {
    const { key } = await store.makeKey(['read']);
    const first = await call(api, key, 'GET', '/v1/account');
    const second = await call(api, key, 'GET', '/v1/account');
    if (first.headers.get('x-ratelimit-reset') === second.headers.get('x-ratelimit-reset')) {
      expect(Number(second.headers.get('x-ratelimit-remaining'))).toBe(Number(first.headers.get('x-ratelimit-remaining')) - 1);
    }
    expect(Number(first.headers.get('x-ratelimit-remaining'))).toBeLessThanOrEqual(99);
  });
});

describe('requests without a valid key', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ db: mongo.db, config: { ipRateWindowMs: HOUR } });
  });
  afterAll(async () => api?.close());

  it('an address gets 10 a window without a valid key, then 429 rate_limit with Retry-After', async () => {
    const from = { 'X-Forwarded-For': '203.0.113.7' };
    const results: Res[] = [];
    for (let i = 0; i < 12; i++) results.push(await call(api, 'vk_live_wrong', 'GET', '/v1/account', { headers: from }));
    expect(results.slice(0, 10).map((r) => r.status)).toEqual(Array(10).fill(401));
    expect(results[0].headers.get('x-ratelimit-limit')).toBe('10');
    expect(results[9].headers.get('x-ratelimit-remaining')).toBe('0');
    expectRateLimited(results[10], 3600);
    expectRateLimited(results[11], 3600);
  });

  it('missing keys, unknown paths and public documents count against the same address window', async () => {
    const from = { 'X-Forwarded-For': '203.0.113.8' };
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await call(api, null, 'GET', '/v1/customers', { headers: from })).status);
    for (let i = 0; i < 4; i++) statuses.push((await call(api, null, 'GET', '/v1/nothing', { headers: from })).status);
    for (let i = 0; i < 3; i++) statuses.push((await call(api, null, 'GET', '/v1/openapi.json', { headers: from })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 404, 404, 404, 404, 200, 200, 429]);
  });

  it('another address, and a valid key from the refused address, are not affected', async () => {
    const refused = { 'X-Forwarded-For': '203.0.113.9' };
    for (let i = 0; i < 10; i++) await call(api, null, 'GET', '/v1/account', { headers: refused });
    expect((await call(api, null, 'GET', '/v1/account', { headers: refused })).status).toBe(429);
    expect((await call(api, null, 'GET', '/v1/account', { headers: { 'X-Forwarded-For': '198.51.100.1' } })).status).toBe(401);
    const withKey = await call(api, store.key, 'GET', '/v1/account', { headers: refused });
    expect(withKey.status).toBe(200);
    expect(withKey.headers.get('x-ratelimit-limit')).toBe('100');
  });
});

describe('two API processes on one database', () => {
  let local: TestApi;
  let remote: { url: string; child: ChildProcess };

  beforeAll(async () => {
    const config = { keyRateWindowMs: HOUR, ipRateWindowMs: HOUR };
    local = await startTestApi({ db: mongo.db, config });
    const port = await freePort();
    const child = spawn('node_modules/.bin/tsx', ['api/server.ts'], {
      env: {
        ...process.env,
        MONGODB_URI: inject('mongoUri'),
        MONGODB_DB: mongo.db.databaseName,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        PORT: String(port),
        HOST: '127.0.0.1',
        TRUST_PROXY: '1',
        LOG_LEVEL: 'silent',
        RATE_LIMIT_KEY_WINDOW_MS: String(HOUR),
        RATE_LIMIT_IP_WINDOW_MS: String(HOUR),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    remote = { url: `http://127.0.0.1:${port}`, child };
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`second API process exited: ${stderr}`);
        const res = await fetch(`${remote.url}/v1/nothing`, { headers: { 'X-Forwarded-For': '192.0.2.250' } }).catch(() => null);
        return res?.status === 404;
      },
      // tsx compiles the whole API on start: slow on a busy 2-core machine.
      { timeoutMs: 150_000, intervalMs: 200, description: 'the second API process to listen' },
    );
  }, 180_000);
  afterAll(async () => {
    if (remote?.child.exitCode === null) {
      const exited = new Promise((resolve) => remote.child.once('exit', resolve));
      remote.child.kill('SIGTERM');
      await exited;
    }
    await local?.close();
  });

  it('a key never gets more than 100 requests in a window in total when both processes serve it at once', async () => {
    const { key } = await store.makeKey(['read']);
    const responses = await Promise.all(Array.from({ length: 160 }, (_, i) => call(i % 2 === 0 ? local : remote, key, 'GET', '/v1/account')));
    const t = tally(responses);
    // Each process claims batches of 5 slots; what one holds unused when its requests stop is lost.
    const slack = 2 * (blockSizeFor(100) - 1);
    expect(t.ok).toBeLessThanOrEqual(100);
    expect(t.ok).toBeGreaterThanOrEqual(100 - slack);
    expect({ unauthorized: t.unauthorized, limited: t.limited, other: t.other }).toEqual({ unauthorized: 0, limited: 160 - t.ok, other: 0 });
    // Both processes served part of the 100 and refused part of the rest.
    const servedBy = (api: { url: string }) => responses.filter((r, i) => r.status === 200 && (i % 2 === 0 ? local : remote) === api).length;
    expect(servedBy(local)).toBeGreaterThan(0);
    expect(servedBy(remote)).toBeGreaterThan(0);
  });

  it('an address gets exactly 10 requests without a valid key in total across both processes', async () => {
    const from = { 'X-Forwarded-For': '203.0.113.77' };
    const responses = await Promise.all(
      Array.from({ length: 16 }, (_, i) => call(i % 2 === 0 ? local : remote, null, 'GET', '/v1/account', { headers: from })),
    );
    expect(tally(responses)).toEqual({ ok: 0, unauthorized: 10, limited: 6, other: 0 });
  });

  it('a revoked key answers api_key_revoked on the next request on both processes', async () => {
    const { key, id } = await store.makeKey(['read']);
    expect((await call(local, key, 'GET', '/v1/account')).status).toBe(200);
    expect((await call(remote, key, 'GET', '/v1/account')).status).toBe(200);
    await collections(mongo.db).apiKeys.updateOne({ _id: id }, { $set: { revoked_at: Math.floor(Date.now() / 1000) } });
    for (const api of [local, remote]) {
      const res = await call(api, key, 'GET', '/v1/account');
      expect([res.status, res.body.error.code]).toEqual([401, 'api_key_revoked']);
    }
  });
});

describe('shared windows on separate clients', () => {
  let other: MongoClient;
  beforeAll(async () => {
    other = await MongoClient.connect(inject('mongoUri'));
  });
  afterAll(async () => other?.close());

  it('300 hits of one subject spread over two instances on separate clients let exactly 100 through in one window', async () => {
    const instances = [new SharedRateWindows(mongo.db), new SharedRateWindows(other.db(mongo.db.databaseName))];
    const now = Date.now();
    // 20 lanes of 15 hits one after another, alternating instances: many claims race on the counter.
    const lanes = await Promise.all(
      Array.from({ length: 20 }, async (_, lane) => {
        const hits: WindowHit[] = [];
        for (let i = 0; i < 15; i++) hits.push(await instances[lane % 2].hit('key:spread', 100, HOUR, now));
        return hits;
      }),
    );
    const allowedBy = (parity: number) =>
      lanes
        .filter((_, lane) => lane % 2 === parity)
        .flat()
        .filter((h) => h.allowed).length;
    expect(allowedBy(0) + allowedBy(1)).toBe(100);
    expect(
      lanes
        .flat()
        .filter((h) => !h.allowed)
        .every((h) => h.remaining === 0),
    ).toBe(true);
    // Both instances got part of the 100, and a later hit on either is refused.
    expect(allowedBy(0)).toBeGreaterThan(0);
    expect(allowedBy(1)).toBeGreaterThan(0);
    for (const windows of instances) expect((await windows.hit('key:spread', 100, HOUR, now)).allowed).toBe(false);
  });

  it('a window that began full elsewhere refuses every hit of a fresh instance', async () => {
    const now = Date.now();
    const first = new SharedRateWindows(mongo.db);
    for (let i = 0; i < 10; i++) expect((await first.hit('ip:full', 10, HOUR, now)).allowed).toBe(true);
    const fresh = new SharedRateWindows(other.db(mongo.db.databaseName));
    const hits = await Promise.all(Array.from({ length: 5 }, () => fresh.hit('ip:full', 10, HOUR, now)));
    expect(hits.map((h) => [h.allowed, h.remaining])).toEqual(Array(5).fill([false, 0]));
  });

  it('a counter carries its window end as a Date, and the sweep deletes ended windows only', async () => {
    const windows = new SharedRateWindows(mongo.db);
    const now = Date.now();
    await windows.hit('ip:sweep-old', 10, HOUR, now - 2 * HOUR);
    const current = await windows.hit('ip:sweep-now', 10, HOUR, now);
    const counters = collections(mongo.db).rateCounters;
    const doc = await counters.findOne({ _id: `ip:sweep-now|${Math.floor(now / HOUR)}` });
    expect(doc?.expires_at).toBeInstanceOf(Date);
    expect(doc!.expires_at.getTime()).toBe(current.resetAt * 1000);
    await sweepExpiredWindows(mongo.db, now);
    expect(await counters.findOne({ _id: `ip:sweep-old|${Math.floor((now - 2 * HOUR) / HOUR)}` })).toBeNull();
    expect(await counters.findOne({ _id: doc!._id })).not.toBeNull();
  });
});
