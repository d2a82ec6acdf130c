// `npm run admin -- listen` end to end: the CLI as a child process opens the API's event stream
// (GET /v1/webhook_endpoints/listen, Server-Sent Events), prints its session secret, and forwards a
// customer.created made through the API to a local receiver, signed so that docs/runbook-webhooks.md's verifier and
// stripe.webhooks.constructEvent both accept it; it prints one line per event. No endpoint is created.
// The stream itself: event filters, catalog 2026-09-01, replay with `since` after a disconnect, and the
// typed errors for a bad filter, an unknown `since` and a missing key.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../../adapters/webhooks/verify';
import { listen } from '../../../admin/listen';
import { endpointsCollection } from '../../../store/webhook-endpoints';
import { freePort } from '../../../temporal-dev/servers';
import { projectRoot } from '../../../temporal-dev/tools';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, waitFor, type TestMongo } from '../../support/env';

const stripe = new Stripe('sk_test_unused');

interface Hit {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;
let receiver: http.Server;
let receiverUrl: string;
const hits: Hit[] = [];

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  store = await createTestStore(mongo.db);
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      hits.push({ path: req.url ?? '/', headers: req.headers, body });
      res.writeHead(200).end();
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await new Promise((resolve) => receiver?.close(resolve));
  await api?.close();
  await mongo?.close();
});

let customers = 0;
async function createCustomer(): Promise<string> {
  const res = await call(api, store.key, 'POST', '/v1/customers', {
    json: {
      email: `listen${++customers}-${Date.now()}@example.com`,
      name: 'Ana Souza',
      phone: '+5511987654321',
      document: { type: 'cpf', number: '52998224725' },
    },
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

/** Each session forwards to its own path: what one session sent is told apart from another's. */
const hitsOn = (path: string, objectId: string) =>
  hits.filter((h) => h.path === path && (JSON.parse(h.body) as { data: { object: { id: string } } }).data.object.id === objectId);

/** The hit on `path` whose event's data.object.id is `objectId`. */
function hitFor(
  path: string,
  objectId: string,
): Promise<Hit & { event: { id: string; type: string; api_version: string; data: { object: { id: string } } } }> {
  return waitFor(
    () => {
      const [hit] = hitsOn(path, objectId);
      return hit ? { ...hit, event: JSON.parse(hit.body) } : null;
    },
    { timeoutMs: 15_000, description: `${path} to get the event of ${objectId}` },
  );
}

describe('npm run admin -- listen', () => {
  let child: ChildProcess | null = null;
  afterAll(() => {
    child?.kill('SIGINT');
  });

  it('prints a whsec_ secret, forwards customer.created signed for both verifiers, prints its line, creates no endpoint; Ctrl-C exits 0', async () => {
    child = spawn(
      process.execPath,
      ['--import', 'tsx', 'admin/cli.ts', 'listen', '--key', store.key, '--forward-to', `${receiverUrl}/cli`, '--api-url', api.url],
      {
        cwd: projectRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const secret = await waitFor(() => /signing secret is (whsec_\w+)/.exec(output)?.[1] ?? null, {
      timeoutMs: 30_000,
      description: 'the CLI to print its secret',
    });

    const customerId = await createCustomer();
    const hit = await hitFor('/cli', customerId);
    const header = hit.headers['service-signature'] as string;
    expect(hit.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(verifySignature(hit.body, header, [secret])).toBe(true);
    expect(stripe.webhooks.constructEvent(hit.body, header, secret)).toMatchObject({ id: hit.event.id, type: 'customer.created' });
    expect(hit.event).toMatchObject({ type: 'customer.created', api_version: '2026-11-01' });
    await waitFor(() => output.includes(hit.event.id) || null, { timeoutMs: 5_000, description: 'the line of the event' });
    expect(output).toMatch(new RegExp(`customer\\.created\\s+${hit.event.id}\\s+\\[200\\]\\s+\\d+ ms`));
    expect(await endpointsCollection(mongo.db).countDocuments({ store_id: store.store._id })).toBe(0);

    const exited = new Promise<number | null>((resolve) => child!.once('exit', resolve));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    child = null;
  }, 60_000);
});

describe('the event stream', () => {
  it('--events filters; after a disconnect, since replays exactly what was missed, once', async () => {
    const stop = new AbortController();
    const lines: string[] = [];
    const session = listen({
      apiUrl: api.url,
      key: store.key,
      forwardTo: `${receiverUrl}/replay`,
      events: 'customer.created',
      signal: stop.signal,
      print: (line) => lines.push(line),
    });
    await waitFor(() => lines.some((line) => line.startsWith('Ready.')) || null, { description: 'the session to be ready' });
    const first = await createCustomer();
    await hitFor('/replay', first);
    stop.abort();
    const ended = await session;
    expect(ended.forwarded).toBe(1);
    const firstEvent = ended.lastEventId!;

    // Missed while disconnected: two customers. The replay sends both, in order, and nothing before them.
    const missed = [await createCustomer(), await createCustomer()];
    const again = new AbortController();
    const replayed: string[] = [];
    const resumed = listen({
      apiUrl: api.url,
      key: store.key,
      forwardTo: `${receiverUrl}/replay`,
      since: firstEvent,
      signal: again.signal,
      print: (line) => replayed.push(line),
    });
    await waitFor(() => (replayed.filter((line) => line.includes('customer.created')).length >= 2 ? true : null), {
      description: 'the two missed events',
    });
    again.abort();
    expect((await resumed).forwarded).toBe(2);
    for (const id of missed) await hitFor('/replay', id);
    expect(hitsOn('/replay', first)).toHaveLength(1);
  }, 60_000);

  it('a filter that matches nothing forwards nothing; catalog 2026-09-01 renders the original catalog', async () => {
    const stop = new AbortController();
    const legacyLines: string[] = [];
    const silentLines: string[] = [];
    const legacy = listen({
      apiUrl: api.url,
      key: store.key,
      forwardTo: `${receiverUrl}/legacy`,
      apiVersion: '2026-09-01',
      signal: stop.signal,
      print: (line) => legacyLines.push(line),
    });
    const silent = listen({
      apiUrl: api.url,
      key: store.key,
      forwardTo: `${receiverUrl}/silent`,
      events: 'invoice.*',
      signal: stop.signal,
      print: (line) => silentLines.push(line),
    });
    await waitFor(() => (legacyLines.some((l) => l.startsWith('Ready.')) && silentLines.some((l) => l.startsWith('Ready.'))) || null, {
      description: 'both sessions ready',
    });
    const id = await createCustomer();
    const hit = await hitFor('/legacy', id);
    expect(hit.event.api_version).toBe('2026-09-01');
    expect(Object.keys(hit.event)).not.toContain('pending_webhooks');
    stop.abort();
    expect([(await legacy).forwarded, (await silent).forwarded]).toEqual([1, 0]);
    expect(hits.filter((h) => h.path === '/silent')).toEqual([]);
  }, 60_000);

  it('an API that stops ends its open sessions at once (the drain is not held) and the CLI says where to resume', async () => {
    const stopping = await startTestApi({ db: mongo.db });
    const lines: string[] = [];
    const session = listen({ apiUrl: stopping.url, key: store.key, forwardTo: `${receiverUrl}/stopping`, print: (line) => lines.push(line) });
    await waitFor(() => lines.some((line) => line.startsWith('Ready.')) || null, { description: 'the session to be ready' });
    const started = Date.now();
    await stopping.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    await expect(session).resolves.toMatchObject({ forwarded: 0 });
  });

  it('refuses a typo beside *, an unknown since and a missing key with typed errors', async () => {
    const typo = await call(api, store.key, 'GET', '/v1/webhook_endpoints/listen?events=*,custmer.created');
    expect(typo.status).toBe(400);
    expect(typo.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_event_type', param: 'events' });
    const unknown = await call(api, store.key, 'GET', '/v1/webhook_endpoints/listen?since=evt_nope');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'resource_missing', param: 'since' });
    const anonymous = await fetch(`${api.url}/v1/webhook_endpoints/listen`);
    expect(anonymous.status).toBe(401);
  });
});
