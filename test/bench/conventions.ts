// `npm run bench:conventions`: what the convention stack (auth, rate limit, request id, request log,
// validation, serialization) costs on FerretDB. Authenticated GET /v1/customers/{id} beside a bare
// Fastify app on the same database whose route makes only the reads the request needs (the key by `_id`,
// then the customer by `_id`, its store compared): goal ≥ 80% of its requests/s and p99 ≤ 2× its p99.
// Also the list of 100 and form-encoded creates. Prints a table (and CPU per lookup by process), writes
// results/conventions.json. BENCH_PROFILE=<dir> records the main thread during the lookups' last slices.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { Client, Connection } from '@temporalio/client';
import { MongoClient, type Db } from 'mongodb';
import { buildApp } from '../../api/app';
import { loadApiConfig } from '../../api/config';
import { collections } from '../../store/collections';
import { ensureIndexes } from '../../store/indexes';
import { newCustomerDoc } from '../../store/customers';
import { customerObject } from '../../resources/customer';
import { apiKeyIdOf, createApiKey, createStore, StoreCache } from '../../store/stores';
import { parseApiKey, secretMatches } from '../../domain/api-keys';
import { newRequestId } from '../../domain/ids';
import { RequestLogBuffer } from '../../api/request-log-buffer';
import { writeRequestLogs } from '../../store/request-logs';
import { SharedRateWindows } from '../../store/rate-counters';
import type { ApiKeyDoc } from '../../store/collections';
import { createTestConnection } from '../../adapters/provider/test-connection';
import { startFerretDb } from '../../temporal-dev/servers';
import { machineInfo, percentile, printTable, round, saveResults, type HttpLoadSummary } from './lib';
import { cpuPerOperation, cpuSnapshot, type CpuSnapshot } from './cpu';
import { profiled } from './profile';

const settings = {
  customers: 10_000,
  connections: 50,
  durationSeconds: Number(process.env.BENCH_SECONDS ?? 10),
  /** The lookups by id run in alternating slices, so load from other work on the machine falls on each alike. */
  byIdRounds: Number(process.env.BENCH_ROUNDS ?? 5),
  distinctIds: 1_000,
  warmupSeconds: 2,
  /** Lists are slower than lookups (a relay index read of 101 documents): a longer run so enough of them complete. */
  listSeconds: Number(process.env.BENCH_LIST_SECONDS ?? 20),
};

async function main() {
  const workDir = mkdtempSync(join(tmpdir(), 'billing-bench-conventions-'));
  const ferret = await startFerretDb({ dataDir: join(workDir, 'ferretdb') });
  const mongo = await MongoClient.connect(ferret.uri, { maxPoolSize: 100 });
  const machine = machineInfo();
  try {
    const db = mongo.db('bench_conventions');
    await ensureIndexes(db);
    const store = await createStore(db, { name: 'Bench Store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
    const { key } = await createApiKey(db, { storeId: store._id, name: 'bench', scopes: ['read', 'write'] });

    const seedStarted = performance.now();
    const start = Date.now() - settings.customers * 1000;
    const ids: string[] = [];
    for (let from = 0; from < settings.customers; from += 1_000) {
      const docs = Array.from({ length: 1_000 }, (_, i) => {
        const n = from + i;
        return newCustomerDoc(
          store._id,
          {
            email: `customer${n}@example.com`,
            name: `Customer ${n}`,
            phone: '+5511987654321',
            document: { type: 'cpf', number: '52998224725', number_masked: '*******4725' },
          },
          { segment: n % 2 ? 'a' : 'b' },
          start + n * 1000,
        );
      });
      ids.push(...docs.map((d) => d._id));
      await collections(db).customers.insertMany(docs, { ordered: false });
    }
    const seedSeconds = round((performance.now() - seedStarted) / 1000, 2);
    const sampleIds = Array.from({ length: settings.distinctIds }, (_, i) => ids[Math.floor((i * ids.length) / settings.distinctIds)]);

    const bare = await startYardstick(db);
    const bareUrl = bare.url;

    // The full API with every convention; limits lifted so the windows are still counted but never refuse.
    const config = { ...loadApiConfig({ LOG_LEVEL: 'silent', NODE_ENV: 'development' }), keyRateLimit: 1_000_000_000, ipRateLimit: 1_000_000_000 };
    // A client of no server: these routes never reach Temporal.
    const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
    const app = await buildApp({ db, config, temporal, provider: createTestConnection({ db }) }, { logger: false });
    const appUrl = await app.listen({ port: 0, host: '127.0.0.1' });
    const auth = { authorization: `Bearer ${key}` };

    const load = (url: string, paths: string[], headers: Record<string, string> = {}, seconds = settings.durationSeconds) =>
      runLoad(
        url,
        paths.map((path) => ({ method: 'GET', path, headers })),
        seconds,
      );

    const idPaths = (prefix: string) => sampleIds.map((id) => `${prefix}/customers/${id}`);
    // Warm both (JIT, connection pools, FerretDB caches) before measuring.
    await load(bareUrl, idPaths(''), auth, settings.warmupSeconds);
    await load(appUrl, idPaths('/v1'), auth, settings.warmupSeconds);

    const results: Record<string, HttpLoadSummary> = {};
    let listSequential: { bareMs: number[]; apiMs: number[] } | null = null;
    // Requests autocannon abandons at the end of a run still occupy FerretDB: wait until it answers
    // a lookup again before the next scenario starts.
    const drain = () =>
      new Promise<void>((resolve, reject) => {
        // node:http has no response deadline, unlike fetch: a list backlog can take minutes to clear.
        http.get(`${bareUrl}/customers/${sampleIds[0]}`, { headers: auth }, (res) => res.resume().on('end', resolve)).on('error', reject);
      });
    const only = process.env.BENCH_ONLY?.split(',');
    const want = (name: string) => !only || only.includes(name);
    let byIdRounds: Array<Record<string, HttpLoadSummary>> = [];
    const cpu = new CpuByScenario();
    let cpuPerRequest: Record<string, CpuSnapshot> = {};
    if (want('byId')) {
      const slice = settings.durationSeconds / settings.byIdRounds;
      byIdRounds = await interleave(settings.byIdRounds, drain, {
        bareById: () => cpu.measure('bareById', () => profiled('conventions-bare-by-id', () => load(bareUrl, idPaths(''), auth, slice))),
        apiById: () => cpu.measure('apiById', () => profiled('conventions-api-by-id', () => load(appUrl, idPaths('/v1'), auth, slice))),
        bareStoreInFilter: () => load(bareUrl, idPaths('/store-in-filter'), auth, slice),
        owedById: () => cpu.measure('owedById', () => load(bareUrl, idPaths('/owed'), auth, slice)),
      });
      Object.assign(results, mergeRounds(byIdRounds));
      cpuPerRequest = cpu.perRequest();
      printTable(
        'CPU per request by process, over all slices (ms): main thread = API or bare route + driver; children = FerretDB and its relay',
        Object.entries(cpuPerRequest).map(([scenario, c]) => ({ scenario, 'main thread ms': c.mainThreadMs, 'children ms': c.childrenMs })),
      );
    }
    if (want('create')) {
      results.apiCreateForm = await benchCreate(appUrl, key);
      await drain();
    }
    // Lists last: each one reads the whole collection on FerretDB, and the backlog they leave is long.
    if (want('list')) {
      // One at a time first: what a single list costs when FerretDB is not queueing them.
      const once = async (url: string, headers: Record<string, string> = {}) => {
        const started = performance.now();
        const res = await fetch(url, { headers });
        await res.text();
        return round(performance.now() - started);
      };
      const sequential = { bareMs: [] as number[], apiMs: [] as number[] };
      for (let i = 0; i < 3; i++) {
        sequential.bareMs.push(await once(`${bareUrl}/customers`, auth));
        sequential.apiMs.push(await once(`${appUrl}/v1/customers?limit=100`, auth));
      }
      console.log('single list requests, one at a time (ms):', JSON.stringify(sequential));
      listSequential = sequential;
      results.bareList100 = await load(bareUrl, ['/customers'], auth, settings.listSeconds);
      await drain();
      results.apiList100 = await load(appUrl, ['/v1/customers?limit=100'], auth, settings.listSeconds);
      await drain();
    }

    await app.close();
    await bare.close();

    const ratio = (api?: HttpLoadSummary, base?: HttpLoadSummary) => (api && base ? round((api.requestsPerSec / base.requestsPerSec) * 100, 1) : NaN);
    const p99Times = (api?: HttpLoadSummary, base?: HttpLoadSummary) => (api && base ? round(api.latencyMs.p99 / base.latencyMs.p99, 2) : NaN);
    const none: HttpLoadSummary = {
      requestsPerSec: NaN,
      latencyMs: { p50: NaN, p99: NaN, mean: NaN, max: NaN },
      requests: 0,
      non2xx: 0,
      errors: 0,
      timeouts: 0,
      durationSeconds: 0,
      connections: 0,
    };
    const row = (name: string, r: HttpLoadSummary = none, base?: HttpLoadSummary) => ({
      scenario: name,
      'req/s': r.requestsPerSec,
      'p50 ms': r.latencyMs.p50,
      'p99 ms': r.latencyMs.p99,
      requests: r.requests,
      non2xx: r.non2xx,
      errors: r.errors + r.timeouts,
      'req/s % of bare': base ? `${ratio(r, base)}%` : '',
      'p99 × bare': base ? p99Times(r, base) : '',
    });
    console.log('\nyardstick ("bare") does:', YARDSTICK.does.map((line) => `\n  - ${line}`).join(''));
    console.log('yardstick does not:', YARDSTICK.doesNot.map((line) => `\n  - ${line}`).join(''));
    console.log('floor (reference):', YARDSTICK.floor.map((line) => `\n  - ${line}`).join(''));
    printTable(
      `conventions on FerretDB (${settings.connections} connections, ${settings.durationSeconds} s each, lookups by id in ${settings.byIdRounds} alternating slices; load ${machine.loadAverage1m})`,
      [
        row('bare GET /customers/{id}', results.bareById),
        row('API  GET /v1/customers/{id}', results.apiById, results.bareById),
        row('bare, customer by {_id, store_id} (reference)', results.bareStoreInFilter, results.bareById),
        row("floor: bare + the spec's per-call work (reference)", results.owedById, results.bareById),
        row('bare GET /customers?limit=100', results.bareList100),
        row('API  GET /v1/customers?limit=100', results.apiList100, results.bareList100),
        row('API  POST /v1/customers (form, Idempotency-Key)', results.apiCreateForm),
      ],
    );
    const goals = {
      byIdThroughputPercentOfBare: ratio(results.apiById, results.bareById),
      byIdP99TimesBare: p99Times(results.apiById, results.bareById),
      /** The throughput ratio in each round: its spread says how far other load on the machine moved the figure. */
      byIdPercentOfBareByRound: byIdRounds.map((r) => ratio(r.apiById, r.bareById)),
      listThroughputPercentOfBare: ratio(results.apiList100, results.bareList100),
      /** The same lookup with `{_id, store_id}` as its filter: what that filter costs on this engine. */
      storeInFilterVsBare: {
        throughputPercent: ratio(results.bareStoreInFilter, results.bareById),
        p99Times: p99Times(results.bareStoreInFilter, results.bareById),
      },
      /** The yardstick plus what the spec requires of every call, hand-written: the floor the API's conventions stand on. */
      floorVsBare: { throughputPercent: ratio(results.owedById, results.bareById), p99Times: p99Times(results.owedById, results.bareById) },
      /** The API against that floor: what its plugins, hooks and schemas cost beyond the spec's work. */
      byIdThroughputPercentOfFloor: ratio(results.apiById, results.owedById),
      met: {
        byIdThroughputAtLeast80Percent: ratio(results.apiById, results.bareById) >= 80,
        byIdP99AtMost2xBare: p99Times(results.apiById, results.bareById) <= 2,
      },
    };
    console.log('\ngoals:', JSON.stringify(goals));
    const file = saveResults('conventions', {
      benchmark: 'conventions',
      takenAt: new Date().toISOString(),
      machine,
      loadAverage1mAfter: machineInfo().loadAverage1m,
      settings: { ...settings, seedSeconds },
      results,
      listSequential,
      byIdRounds,
      cpuPerRequest,
      yardstick: YARDSTICK,
      goals,
    });
    console.log(`saved ${file}`);
  } finally {
    await mongo.close();
    await ferret.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** CPU spent by this process's main thread and by the servers under it during each scenario's loads, summed over its slices. */
class CpuByScenario {
  private readonly totals = new Map<string, { used: CpuSnapshot; requests: number }>();

  async measure(name: string, run: () => Promise<HttpLoadSummary>): Promise<HttpLoadSummary> {
    const before = cpuSnapshot();
    const summary = await run();
    const after = cpuSnapshot();
    const t = this.totals.get(name) ?? { used: NO_CPU, requests: 0 };
    // Summed as deltas: the slices are not contiguous (other scenarios run between them).
    this.totals.set(name, {
      used: {
        mainThreadMs: t.used.mainThreadMs + after.mainThreadMs - before.mainThreadMs,
        childrenMs: t.used.childrenMs + after.childrenMs - before.childrenMs,
      },
      requests: t.requests + summary.requests,
    });
    return summary;
  }

  perRequest(): Record<string, CpuSnapshot> {
    return Object.fromEntries([...this.totals].map(([name, t]) => [name, cpuPerOperation(NO_CPU, t.used, t.requests)]));
  }
}

const NO_CPU: CpuSnapshot = { mainThreadMs: 0, childrenMs: 0 };

/** Runs each load once per round, in turn, draining after each; the summaries of every round. */
async function interleave(rounds: number, drain: () => Promise<void>, loads: Record<string, () => Promise<HttpLoadSummary>>) {
  const out: Array<Record<string, HttpLoadSummary>> = [];
  for (let i = 0; i < rounds; i++) {
    const summaries: Record<string, HttpLoadSummary> = {};
    for (const [name, run] of Object.entries(loads)) {
      summaries[name] = await run();
      await drain();
    }
    out.push(summaries);
  }
  return out;
}

/** One summary per load over all rounds: throughput over the total time, latency percentiles as the median of the rounds'. */
function mergeRounds(rounds: Array<Record<string, HttpLoadSummary>>): Record<string, HttpLoadSummary> {
  const median = (values: number[]) => percentile(values, 50);
  const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
  const merged: Record<string, HttpLoadSummary> = {};
  for (const name of Object.keys(rounds[0] ?? {})) {
    const all = rounds.map((r) => r[name]);
    const requests = sum(all.map((r) => r.requests));
    merged[name] = {
      requestsPerSec: round(requests / sum(all.map((r) => r.durationSeconds))),
      latencyMs: {
        p50: median(all.map((r) => r.latencyMs.p50)),
        p99: median(all.map((r) => r.latencyMs.p99)),
        mean: round(sum(all.map((r) => r.latencyMs.mean * r.requests)) / requests, 2),
        max: Math.max(...all.map((r) => r.latencyMs.max)),
      },
      requests,
      non2xx: sum(all.map((r) => r.non2xx)),
      errors: sum(all.map((r) => r.errors)),
      timeouts: sum(all.map((r) => r.timeouts)),
      durationSeconds: sum(all.map((r) => r.durationSeconds)),
      connections: all[0].connections,
    };
  }
  return merged;
}

/** What the yardstick does and leaves out, printed and saved beside its figures. */
const YARDSTICK = {
  does: [
    'bare Fastify, no plugins, no schemas, same MongoClient and database as the API',
    'reads the Bearer key text and finds the API key by _id (one findOne)',
    "finds the customer by _id (one findOne) and compares its store_id with the key's, 404 otherwise",
    'answers customerObject(doc) as JSON',
  ],
  doesNot: [
    'verify the secret hash, or check revocation, expiry, scopes or Service-Version',
    'read the store (the API caches it per process for 1 s)',
    'write the rate-limit counter (the API claims slots with an upserting $inc; with the lifted limits here, one claim per window)',
    'buffer or write the request log (the API inserts it in batches every 500 ms)',
    'set Request-Id, Cache-Control or X-RateLimit headers, validate params/query or serialize by schema',
  ],
  floor: [
    "the floor route (/owed) adds, in its handler: the secret's hash compared, revocation, expiry, the store (cached 1 s), its flags and the key's scope",
    "the key's shared rate window (SharedRateWindows) and the Request-Id, Cache-Control, Service-Version and X-RateLimit headers",
    'the request log: an entry per call, buffered and inserted in batches every 500 ms (writeRequestLogs)',
    'it skips what only the API does: plugins and hooks, params/query validation, schema serialization, the error handler',
  ],
};

/** The yardstick: the reads an authenticated lookup needs at minimum, and nothing else. */
async function startYardstick(db: Db) {
  const bare = Fastify({ logger: false });
  const { apiKeys, customers } = collections(db);
  const keyOf = async (authorization: string | undefined) => {
    const parsed = parseApiKey(authorization?.replace(/^Bearer /, '') ?? '');
    return parsed ? apiKeys.findOne({ _id: apiKeyIdOf(parsed.keyId) }) : null;
  };
  bare.get<{ Params: { id: string } }>('/customers/:id', async (request, reply) => {
    const key = await keyOf(request.headers.authorization);
    if (!key) return reply.code(401).send({ error: 'invalid key' });
    const doc = await customers.findOne({ _id: request.params.id });
    if (!doc || doc.store_id !== key.store_id) return reply.code(404).send({ error: 'not found' });
    return customerObject(doc);
  });
  // Reference only: the same lookup with the store in the filter, which the local engine serves by a scan.
  bare.get<{ Params: { id: string } }>('/store-in-filter/customers/:id', async (request, reply) => {
    const key = await keyOf(request.headers.authorization);
    if (!key) return reply.code(401).send({ error: 'invalid key' });
    const doc = await customers.findOne({ _id: request.params.id, store_id: key.store_id });
    if (!doc) return reply.code(404).send({ error: 'not found' });
    return customerObject(doc);
  });
  // The floor: the yardstick plus what the spec requires of every authenticated call, written straight
  // into one handler (no plugins, hooks or schemas). The API's distance from it is its framework's cost.
  const owed = owedWork(db);
  // Its log hook is the route's own, so the yardstick's routes run no hook.
  bare.get<{ Params: { id: string } }>('/owed/customers/:id', { onResponse: owed.log }, async (request, reply) => {
    const key = await owed.admit(request.headers.authorization, reply);
    if (!key) return reply.code(401).send({ error: 'invalid key' });
    const doc = await customers.findOne({ _id: request.params.id, store_id: key.store_id });
    if (!doc) return reply.code(404).send({ error: 'not found' });
    return customerObject(doc);
  });
  bare.get('/customers', async (request, reply) => {
    const key = await keyOf(request.headers.authorization);
    if (!key) return reply.code(401).send({ error: 'invalid key' });
    // The API's own query (store/pagination.ts): the page MongoDB serves from {store_id, created, _id}, the relay from its index.
    const docs = await customers.find({ store_id: key.store_id }).sort({ created: -1, _id: -1 }).limit(101).toArray();
    return { object: 'list', url: '/v1/customers', has_more: docs.length > 100, data: docs.slice(0, 100).map(customerObject) };
  });
  const url = await bare.listen({ port: 0, host: '127.0.0.1' });
  return { url, close: async () => (await bare.close(), await owed.close()) };
}

/**
 * The floor route's obligations, each as the spec states it: the secret compared by hash, revocation and
 * expiry, the store read (cached 1 s) and active, the key's shared rate window with its headers, a
 * Request-Id, and the request log (buffered, inserted in batches every 500 ms), through the store modules.
 */
function owedWork(db: Db) {
  const { apiKeys } = collections(db);
  const stores = new StoreCache(db);
  const windows = new SharedRateWindows(db);
  const logs = new RequestLogBuffer();
  const flusher = setInterval(() => void logs.flush((batch) => writeRequestLogs(db, batch)), 500);
  const calls = new WeakMap<object, { key: ApiKeyDoc; id: string }>();
  return {
    async admit(authorization: string | undefined, reply: FastifyReply): Promise<ApiKeyDoc | null> {
      const parsed = parseApiKey(authorization?.replace(/^Bearer /, '') ?? '');
      const key = parsed ? await apiKeys.findOne({ _id: apiKeyIdOf(parsed.keyId) }) : null;
      if (!key || !secretMatches(parsed!.secret, key.secret_hash) || key.revoked_at !== null) return null;
      if (key.expires_at !== null && key.expires_at * 1000 <= Date.now()) return null;
      const store = await stores.get(key.store_id);
      if (!store?.active || !store.api_enabled || !key.scopes.includes('read')) return null;
      const hit = await windows.hit(`key:${key._id}`, 1_000_000_000, 2_000);
      reply.header('X-RateLimit-Limit', '1000000000');
      reply.header('X-RateLimit-Remaining', String(hit.remaining));
      reply.header('X-RateLimit-Reset', String(hit.resetAt));
      const id = newRequestId();
      reply.header('Request-Id', id);
      reply.header('Cache-Control', 'no-store');
      reply.header('Service-Version', key.version);
      calls.set(reply.request, { key, id });
      return key;
    },
    log(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
      const call = calls.get(request);
      done();
      if (!call) return;
      const entry = { _id: call.id, store_id: call.key.store_id, api_key: call.key._id, method: request.method, path: request.url };
      logs.push({
        ...entry,
        status: reply.statusCode,
        duration_ms: Math.round(reply.elapsedTime),
        ip: request.ip,
        created: Math.floor(Date.now() / 1000),
      });
    },
    async close(): Promise<void> {
      clearInterval(flusher);
      await logs.flush((batch) => writeRequestLogs(db, batch));
    },
  };
}

/**
 * autocannon at the configured connections. A list query the relay does not serve from its index is a
 * full collection read on FerretDB v1, so single requests can take seconds under load: the timeout is
 * long enough that they count as slow rather than as errors.
 */
async function runLoad(url: string, requests: autocannon.Request[], seconds: number): Promise<HttpLoadSummary> {
  // One worker thread generates the load so it does not share the event loop of the servers measured.
  const result = await autocannon({ url, connections: settings.connections, duration: seconds, timeout: 60, requests, workers: 1 });
  return summarize(result);
}

function summarize(result: autocannon.Result): HttpLoadSummary {
  return {
    requestsPerSec: round(result.requests.average),
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, mean: round(result.latency.mean, 2), max: result.latency.max },
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationSeconds: result.duration,
    connections: settings.connections,
  };
}

/** Form-encoded creates, each with its own email and Idempotency-Key (so every request runs). */
async function benchCreate(url: string, key: string): Promise<HttpLoadSummary> {
  let n = 0;
  const result = await autocannon({
    url,
    connections: settings.connections,
    duration: settings.durationSeconds,
    timeout: 60,
    requests: [
      {
        method: 'POST',
        path: '/v1/customers',
        setupRequest: (request) => {
          n += 1;
          const unique = `${process.pid}-${Date.now()}-${n}`;
          return {
            ...request,
            headers: {
              authorization: `Bearer ${key}`,
              'content-type': 'application/x-www-form-urlencoded',
              'idempotency-key': `bench-${unique}`,
            },
            body: new URLSearchParams({
              email: `new-${unique}@example.com`,
              name: 'Bench Customer',
              phone: '+5511987654321',
              'document[type]': 'cpf',
              'document[number]': '529.982.247-25',
              'metadata[source]': 'bench',
            }).toString(),
          };
        },
      },
    ],
  });
  return summarize(result);
}

await main();
