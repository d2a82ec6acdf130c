// What this tests: the bounds of GET /v1/webhook_endpoints/listen over real HTTP. A reader that never
// reads a large replay holds at most the socket's high-water mark and one event in the API (measured on
// the server's socket) and is cut off after the stall time; a replay starts at most N events or T hours
// back (typed 400 beyond, for `since` and Last-Event-ID); a session ends within seconds when its key is
// revoked or expires or its store is switched off, and at the end of its lifetime; a per-process cap
// refuses sessions of any store beyond it (429).
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../../../admin/listen';
import { listenLimitsFrom, type ListenLimits } from '../../../api/listen-limits';
import { listenSessionsInProcess } from '../../../api/routes/webhook-listen';
import { buildEventDoc, insertEvents } from '../../../store/events';
import { revokeApiKey, updateStoreFields } from '../../../store/stores';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, waitFor, type TestMongo } from '../../support/env';

let mongo: TestMongo;

beforeAll(async () => {
  mongo = await testMongo();
});
afterAll(async () => {
  await mongo?.close();
});

function apiWith(limits: Partial<ListenLimits>): Promise<TestApi> {
  return startTestApi({ db: mongo.db, config: { listen: { ...listenLimitsFrom({}), ...limits } } });
}

/** `count` customer events of the store, `size` bytes of payload each, written `spacingMs` apart ending now. */
async function writeEvents(storeId: string, count: number, options: { size?: number; endAt?: number } = {}): Promise<string[]> {
  const endAt = options.endAt ?? Date.now();
  const docs = Array.from({ length: count }, (_, i) =>
    buildEventDoc({ storeId, type: 'customer.updated', object: { id: `cus_${i}`, note: 'x'.repeat(options.size ?? 10) } }, endAt - (count - i) * 2),
  );
  for (let i = 0; i < docs.length; i += 100) await insertEvents(mongo.db, docs.slice(i, i + 100));
  return docs.map((doc) => doc._id);
}

interface Stream {
  messages: { event: string; id: string | null; data: string }[];
  ended: Promise<void>;
  endedAt: () => number | null;
  close(): void;
}

/** A reading client on its own connection: collects the stream's messages until the API ends it. */
async function openStream(api: TestApi, key: string, query = ''): Promise<Stream> {
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.get(`${api.url}/v1/webhook_endpoints/listen${query}`, { headers: { authorization: `Bearer ${key}` }, agent: false }, resolve);
    req.on('error', reject);
  });
  expect(res.statusCode).toBe(200);
  const messages: Stream['messages'] = [];
  let buffer = '';
  let endedAt: number | null = null;
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    buffer += chunk;
    let end;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const field = (name: string) => new RegExp(`^${name}: ?(.*)$`, 'm').exec(block)?.[1];
      if (!block.startsWith(':')) messages.push({ event: field('event') ?? 'message', id: field('id') ?? null, data: field('data') ?? '' });
    }
  });
  const ended = new Promise<void>((resolve) =>
    res.on('close', () => {
      endedAt ??= Date.now();
      resolve();
    }),
  );
  await waitFor(() => messages.some((m) => m.event === 'ready'), { description: 'the ready message' });
  return { messages, ended, endedAt: () => endedAt, close: () => res.destroy() };
}

function endReason(stream: Stream): string | undefined {
  const end = stream.messages.find((m) => m.event === 'end');
  return end ? (JSON.parse(end.data) as { reason: string }).reason : undefined;
}

describe('a reader that never reads', () => {
  let api: TestApi;
  let store: TestStore;
  beforeAll(async () => {
    api = await apiWith({ stallMs: 3_000 });
    store = await createTestStore(mongo.db);
  });
  afterAll(async () => api?.close());

  it('holds at most the high-water mark and one event in the API during a 12 MB replay, and is cut off after the stall time', async () => {
    const eventBytes = 24_000;
    // More than the kernel's socket buffers hold (4 MB send + the reader's receive buffer), so the rest waits in the API.
    const [first] = await writeEvents(store.store._id, 500, { size: eventBytes });
    const serverSockets: net.Socket[] = [];
    api.app.server.on('connection', (socket: net.Socket) => serverSockets.push(socket));
    const reader = net.connect(Number(new URL(api.url).port), '127.0.0.1');
    reader.pause();
    reader.write(`GET /v1/webhook_endpoints/listen?since=${first} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${store.key}\r\n\r\n`);
    const socket = await waitFor(() => serverSockets[0], { description: 'the server side of the connection' });

    // Sampled until the API gives up on the reader: the API's buffer fills, stays bounded, and is freed.
    let maxBuffered = 0;
    await waitFor(
      () => {
        maxBuffered = Math.max(maxBuffered, socket.writableLength, listenSessionsInProcess().bufferedBytes);
        return socket.destroyed;
      },
      { timeoutMs: 30_000, intervalMs: 20, description: 'the stalled session to be cut off' },
    );
    reader.destroy();
    expect(maxBuffered).toBeGreaterThan(0);
    expect(maxBuffered).toBeLessThanOrEqual(socket.writableHighWaterMark + eventBytes + 2_000);
    expect(listenSessionsInProcess().open).toBe(0);
  }, 60_000);
});

describe('replay bounds', () => {
  let api: TestApi;
  let store: TestStore;
  beforeAll(async () => {
    api = await apiWith({ replayMaxEvents: 5, replayMaxAgeMs: 3_600_000 });
    store = await createTestStore(mongo.db);
  });
  afterAll(async () => api?.close());

  it('a since older than the age bound is a typed 400 (query and Last-Event-ID alike)', async () => {
    const [old] = await writeEvents(store.store._id, 1, { endAt: Date.now() - 2 * 3_600_000 });
    const byQuery = await call(api, store.key, 'GET', `/v1/webhook_endpoints/listen?since=${old}`);
    expect(byQuery.status).toBe(400);
    expect(byQuery.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_invalid', param: 'since' });
    expect(byQuery.body.error.message).toMatch(/1 hours back/);
    const byHeader = await call(api, store.key, 'GET', '/v1/webhook_endpoints/listen', { headers: { 'Last-Event-ID': old } });
    expect(byHeader.status).toBe(400);
    expect(byHeader.body.error).toMatchObject({ code: 'parameter_invalid', param: 'Last-Event-ID' });
  });

  it('more events after since than the count bound is a typed 400; exactly the bound replays', async () => {
    const ids = await writeEvents(store.store._id, 7);
    const tooMany = await call(api, store.key, 'GET', `/v1/webhook_endpoints/listen?since=${ids[0]}`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toMatchObject({ code: 'parameter_invalid', param: 'since' });
    const stream = await openStream(api, store.key, `?since=${ids[1]}`);
    await waitFor(() => stream.messages.filter((m) => m.event === 'webhook').length === 5, { description: 'the five replayed events' });
    expect(stream.messages.filter((m) => m.event === 'webhook').map((m) => m.id)).toEqual(ids.slice(2));
    stream.close();
    await stream.ended;
  });
});

describe('a session ends with its key, its store and its lifetime', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await apiWith({ sessionMaxMs: 60_000 });
  });
  afterAll(async () => api?.close());

  async function expectEndsWithin(stream: Stream, from: number, reason: string) {
    await stream.ended;
    expect(stream.endedAt()! - from).toBeLessThan(10_000);
    expect(endReason(stream)).toBe(reason);
  }

  it('revoking the key ends its session within seconds, saying why', async () => {
    const store = await createTestStore(mongo.db);
    const { key, id } = await store.makeKey(['read']);
    const stream = await openStream(api, key);
    const revokedAt = Date.now();
    await revokeApiKey(mongo.db, id);
    await expectEndsWithin(stream, revokedAt, 'api_key_revoked');
  });

  it('a key that expires ends its session within seconds of its expiry', async () => {
    const store = await createTestStore(mongo.db);
    const expiresAt = Math.ceil(Date.now() / 1000) + 2;
    const { key } = await store.makeKey(['read'], { expiresAt });
    const stream = await openStream(api, key);
    await expectEndsWithin(stream, expiresAt * 1000, 'api_key_expired');
  });

  it('switching the store off ends its sessions within seconds', async () => {
    const store = await createTestStore(mongo.db);
    const stream = await openStream(api, store.key);
    const offAt = Date.now();
    await updateStoreFields(mongo.db, store.store._id, { active: false });
    await expectEndsWithin(stream, offAt, 'project_inactive');
  });

  it('a session ends at the end of its lifetime, saying where to resume', async () => {
    const short = await apiWith({ sessionMaxMs: 1_500 });
    try {
      const store = await createTestStore(mongo.db);
      const stream = await openStream(short, store.key);
      const openedAt = Date.now();
      await stream.ended;
      expect(stream.endedAt()! - openedAt).toBeLessThan(10_000);
      expect(JSON.parse(stream.messages.find((m) => m.event === 'end')!.data)).toEqual({ reason: 'session_lifetime', last_event_id: null });
    } finally {
      await short.close();
    }
  });
});

describe('the listen CLI', () => {
  it('reports why the API ended its session', async () => {
    const short = await apiWith({ sessionMaxMs: 1_500 });
    try {
      const store = await createTestStore(mongo.db);
      const outcome = await listen({ apiUrl: short.url, key: store.key, forwardTo: 'http://127.0.0.1:9/unused', print: () => undefined });
      expect(outcome).toMatchObject({ forwarded: 0, endReason: 'session_lifetime' });
    } finally {
      await short.close();
    }
  });
});

describe('sessions per process', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await apiWith({ sessionsPerProcess: 2 });
  });
  afterAll(async () => api?.close());

  it('beyond the per-process cap a session of any store is refused with 429 rate_limit; one closing makes room', async () => {
    await waitFor(() => listenSessionsInProcess().open === 0, { description: 'earlier sessions to be gone' });
    const [a, b, c] = await Promise.all([createTestStore(mongo.db), createTestStore(mongo.db), createTestStore(mongo.db)]);
    const first = await openStream(api, a.key);
    const second = await openStream(api, b.key);
    const refused = await call(api, c.key, 'GET', '/v1/webhook_endpoints/listen');
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit' });
    expect(refused.headers.get('retry-after')).toBe('60');
    first.close();
    await waitFor(() => listenSessionsInProcess().open === 1, { description: 'the closed session to be gone' });
    const third = await openStream(api, c.key);
    second.close();
    third.close();
    await Promise.all([second.ended, third.ended]);
  });
});
