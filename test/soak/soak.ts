// `npm run soak` (not part of `npm test`): issue 26's soak. Starts FerretDB and a Temporal dev server, then
// the API (api/server.ts) and the worker (worker/main.ts) as separate child processes so each RSS is its own;
// test/soak/probe.mjs, preloaded into both, reports their RSS and event-loop delay. A short capacity probe
// (SOAK_PROBE_SECONDS, default 30, 16 lanes of the mix back to back) measures operations/s; the soak then
// runs the same mix open-loop at half that rate (or SOAK_RATE) for SOAK_MINUTES (default 30): checkout session creates,
// hosted-page payments (test connection), one-off subscription charges, meter event batches of 100, list
// reads; a local HTTPS receiver takes the webhook deliveries and one `listen` reader stays connected.
// Prints one line a minute (each process's RSS, heap and event-loop p99, the worker's cached workflows from
// its metrics port, requests, errors) and, at the end, RSS growth per hour (least-squares fit, whole run and
// second half); writes test/artifacts/soak.json, and with MONGODB_SLOW_MS set both processes' slow-command
// lines to test/artifacts/soak-slow-commands.jsonl. Measures only; asserts nothing.
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { MongoClient, type Db } from 'mongodb';
import { freePort, startFerretDb, startTemporalDevServer } from '../../temporal-dev/servers';
import { spawnGroup, type ChildGroup } from '../../temporal-dev/processes';
import { waitFor } from '../../temporal-dev/wait';
import { ensureIndexes } from '../../store/indexes';
import { createApiKey, createStore } from '../../store/stores';
import { createOffer, createProduct } from '../../store/catalog';
import { insertCustomer, newCustomerDoc } from '../../store/customers';
import { createMeter } from '../../store/meters';
import { createTestConnection } from '../../adapters/provider/test-connection';
import { recordSubscription } from '../../services/subscriptions/subscriptions';
import { startWebhookReceiver, testCa } from '../support/webhook-receiver';
import { machineInfo, percentile, printTable, round } from '../bench/lib';

const root = fileURLToPath(new URL('../..', import.meta.url));
const artifactsDir = join(root, 'test', 'artifacts');
const soakMinutes = Number(process.env.SOAK_MINUTES ?? 30);
const probeSeconds = Number(process.env.SOAK_PROBE_SECONDS ?? 30);
const probeLanes = 16;
/** Open-loop bound: at most this many requests in flight; a tick that would exceed it counts the rest as skipped. */
const maxInFlight = 200;
/** Latencies kept per minute for the p99 (a ring of this size; older samples of the minute are dropped). */
const latencySamplesPerMinute = 5_000;
/** With MONGODB_SLOW_MS set, both processes' slow-command lines go here, each with its process and time. */
const slowCommandsFile = join(artifactsDir, 'soak-slow-commands.jsonl');
const subscriptionsCount = 20;
const customersCount = 50;

type OpName = 'checkout_create' | 'hosted_pay' | 'subscription_charge' | 'meter_batch' | 'list_read';
/** The traffic mix: relative weights of each operation. */
const mix: Record<OpName, number> = { checkout_create: 3, hosted_pay: 2, subscription_charge: 1, meter_batch: 2, list_read: 4 };
const opNames = Object.keys(mix) as OpName[];
const totalWeight = opNames.reduce((sum, name) => sum + mix[name], 0);

interface Sample {
  rss: number;
  heapUsed: number;
  elP99Ms: number;
  elMaxMs: number;
}

/** A child process with the latest probe samples it printed (bounded: the last 1,000). */
interface Probed {
  group: ChildGroup;
  samples: Array<Sample & { at: number }>;
  output: string;
}

function spawnProbed(name: string, entry: string, env: Record<string, string>): Probed {
  const group = spawnGroup(name, process.execPath, ['--import', 'tsx', '--import', join(root, 'test/soak/probe.mjs'), entry], {
    cwd: root,
    env: { ...process.env, SOAK_PROBE_MS: '5000', ...env },
  });
  const probed: Probed = { group, samples: [], output: '' };
  let partial = '';
  const onData = (chunk: Buffer) => {
    const text = partial + chunk.toString();
    const lines = text.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line.startsWith('SOAK_PROBE ')) {
        probed.samples.push({ ...(JSON.parse(line.slice(11)) as Sample), at: Date.now() });
        if (probed.samples.length > 1_000) probed.samples.shift();
      } else if (line.startsWith('{"msg":"slow database command"')) {
        appendFileSync(slowCommandsFile, `{"process":"${name}","at":${Date.now()},${line.slice(1)}\n`);
      } else probed.output = (probed.output + line + '\n').slice(-8_000);
    }
  };
  group.child.stdout!.on('data', onData);
  group.child.stderr!.on('data', onData);
  return probed;
}

interface Fixture {
  key: string;
  offerId: string;
  subscriptionIds: string[];
  customerIds: string[];
  meterEvent: string;
}

async function seed(db: Db): Promise<Fixture> {
  await ensureIndexes(db);
  const provider = createTestConnection({ db });
  const store = await createStore(db, { name: 'Soak Store', slug: 'soak', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  const { key } = await createApiKey(db, { storeId: store._id, name: 'soak', scopes: ['read', 'write'] });
  const product = await createProduct(db, { storeId: store._id, name: 'Soak Course', family: 'soak' });
  const oneOff = await createOffer(db, {
    storeId: store._id,
    productId: product._id,
    name: 'Soak course',
    type: 'one_off',
    slug: 'soak',
    prices: [{ currency: 'brl', amount: 19700, default: true }],
  });
  // A trial keeps the subscriptions' own renewals idle: they carry the one-off charges.
  const monthly = await createOffer(db, {
    storeId: store._id,
    productId: product._id,
    name: 'Soak monthly',
    type: 'recurring',
    billingCycle: 'monthly',
    trialDays: 30,
    prices: [{ currency: 'brl', amount: 4990, default: true }],
  });
  const customerIds: string[] = [];
  const subscriptionIds: string[] = [];
  for (let i = 0; i < customersCount; i++) {
    const { customer } = await insertCustomer(db, newCustomerDoc(store._id, { email: `soak${i}@example.com`, name: 'Soak Buyer' }, {}));
    customerIds.push(customer._id);
    if (i >= subscriptionsCount) continue;
    const saved = await provider.saveCard({ storeId: store._id, customerId: customer._id, card: { number: '4242424242424242' } });
    if (!saved.ok) throw new Error(saved.message);
    const sub = await recordSubscription({ db }, { store, customer, offer: monthly, product, paymentMethod: saved.card });
    subscriptionIds.push(sub._id);
  }
  const meterEvent = 'soak_calls';
  await createMeter(db, { storeId: store._id, displayName: 'Soak calls', eventName: meterEvent });
  return { key, offerId: oneOff._id, subscriptionIds, customerIds, meterEvent };
}

/** One operation of the mix against the API; resolves to whether it succeeded (2xx, or 3xx for the page). */
function operations(url: string, fx: Fixture) {
  const headers = { authorization: `Bearer ${fx.key}`, 'content-type': 'application/json' };
  let seq = 0;
  const createSession = async () => {
    const res = await fetch(`${url}/v1/checkout/sessions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ offer: fx.offerId, client_reference_id: 'soak' }),
    });
    const body = (await res.json()) as { id?: string };
    return { ok: res.status === 201, id: body.id };
  };
  const lists = ['/v1/customers?limit=10', '/v1/checkout/sessions?limit=10', '/v1/events?limit=10', '/v1/subscriptions?limit=10'];
  const ops: Record<OpName, () => Promise<boolean>> = {
    checkout_create: async () => (await createSession()).ok,
    hosted_pay: async () => {
      const session = await createSession();
      if (!session.ok || !session.id) return false;
      const n = ++seq;
      const form = {
        email: `soak-buyer${n}@example.com`,
        name: 'Maria da Silva',
        phone: '+55 11 98765-4321',
        document_type: 'cpf',
        document_number: '529.982.247-25',
        method: 'card',
        card_number: '4242 4242 4242 4242',
      };
      const res = await fetch(`${url}/c/${session.id}/pay`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      });
      await res.arrayBuffer();
      return res.status < 400;
    },
    subscription_charge: async () => {
      const n = ++seq;
      const res = await fetch(`${url}/v1/subscriptions/${fx.subscriptionIds[n % fx.subscriptionIds.length]}/charges`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': `soak-${randomUUID()}` },
        body: JSON.stringify({ amount: 1000, description: 'Soak charge' }),
      });
      await res.arrayBuffer();
      return res.status === 201;
    },
    meter_batch: async () => {
      const n = ++seq;
      const events = Array.from({ length: 100 }, (_, e) => ({
        event_name: fx.meterEvent,
        identifier: `soak-${n}-${e}-${randomUUID()}`,
        payload: { customer_id: fx.customerIds[e % fx.customerIds.length], value: 1 },
      }));
      const res = await fetch(`${url}/v1/billing/meter_events/batch`, { method: 'POST', headers, body: JSON.stringify({ events }) });
      await res.arrayBuffer();
      return res.ok;
    },
    list_read: async () => {
      const res = await fetch(`${url}${lists[++seq % lists.length]}`, { headers });
      await res.arrayBuffer();
      return res.ok;
    },
  };
  return ops;
}

/** Picks an operation by the mix's weights. */
function pickOp(): OpName {
  let r = Math.random() * totalWeight;
  for (const name of opNames) {
    r -= mix[name];
    if (r < 0) return name;
  }
  return opNames[opNames.length - 1];
}

interface Counters {
  done: number;
  errors: number;
  skipped: number;
  byOp: Record<OpName, { done: number; errors: number }>;
  latencies: number[];
  firstErrors: string[];
}

const newCounters = (): Counters => ({
  done: 0,
  errors: 0,
  skipped: 0,
  byOp: Object.fromEntries(opNames.map((n) => [n, { done: 0, errors: 0 }])) as Counters['byOp'],
  latencies: [],
  firstErrors: [],
});

async function runOp(ops: ReturnType<typeof operations>, counters: Counters): Promise<void> {
  const name = pickOp();
  const started = performance.now();
  let ok = false;
  try {
    ok = await ops[name]();
  } catch (error) {
    if (counters.firstErrors.length < 5) counters.firstErrors.push(`${name}: ${(error as Error).message}`);
  }
  const ms = performance.now() - started;
  counters.done++;
  counters.byOp[name].done++;
  if (!ok) {
    counters.errors++;
    counters.byOp[name].errors++;
  }
  if (counters.latencies.length < latencySamplesPerMinute) counters.latencies.push(ms);
  else counters.latencies[counters.done % latencySamplesPerMinute] = ms;
}

/** Closed loop, `probeLanes` lanes back to back for `probeSeconds`: the operations/s this stack sustains. */
async function capacityProbe(ops: ReturnType<typeof operations>): Promise<{ opsPerSec: number; counters: Counters }> {
  const counters = newCounters();
  const until = performance.now() + probeSeconds * 1000;
  const began = performance.now();
  await Promise.all(
    Array.from({ length: probeLanes }, async () => {
      while (performance.now() < until) await runOp(ops, counters);
    }),
  );
  return { opsPerSec: counters.done / ((performance.now() - began) / 1000), counters };
}

/** One `listen` session kept open (reconnecting when it ends); counts the events it reads. */
function listenReader(url: string, key: string) {
  const state = { events: 0, sessions: 0, stopped: false, controller: new AbortController() };
  const loop = async () => {
    while (!state.stopped) {
      state.sessions++;
      try {
        const res = await fetch(`${url}/v1/webhook_endpoints/listen`, {
          headers: { authorization: `Bearer ${key}` },
          signal: state.controller.signal,
        });
        const reader = res.body!.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          state.events += (
            Buffer.from(value)
              .toString()
              .match(/^event: /gm) ?? []
          ).length;
        }
      } catch {
        // Aborted at the end, or the session closed: reconnect unless stopped.
      }
      if (!state.stopped) await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  };
  const running = loop();
  return {
    state,
    stop: async () => {
      state.stopped = true;
      state.controller.abort();
      await running;
    },
  };
}

/** Least-squares slope of (minutes, bytes) as MiB per hour. */
function growthPerHour(points: Array<{ minute: number; rss: number }>): number {
  if (points.length < 2) return Number.NaN;
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.minute, 0) / n;
  const my = points.reduce((s, p) => s + p.rss, 0) / n;
  const num = points.reduce((s, p) => s + (p.minute - mx) * (p.rss - my), 0);
  const den = points.reduce((s, p) => s + (p.minute - mx) ** 2, 0);
  return round(((num / den) * 60) / 2 ** 20);
}

/** The worker's sticky workflow cache (Temporal Core's gauge on its metrics port): what its RSS grows with until the cache is full. */
async function stickyCacheSize(port: number): Promise<number> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`)
    .then((res) => res.text())
    .catch(() => '');
  const values = [...text.matchAll(/^temporal_sticky_cache_size\{[^}]*\} (\d+)/gm)].map((m) => Number(m[1]));
  return values.length ? values.reduce((a, b) => a + b, 0) : Number.NaN;
}

/** The samples a process printed since `since`: latest RSS, worst event-loop p99 and max. */
function window(p: Probed, since: number) {
  const recent = p.samples.filter((s) => s.at >= since);
  const last = p.samples[p.samples.length - 1];
  return {
    rssMiB: last ? round(last.rss / 2 ** 20) : Number.NaN,
    heapMiB: last ? round(last.heapUsed / 2 ** 20) : Number.NaN,
    elP99Ms: recent.length ? round(Math.max(...recent.map((s) => s.elP99Ms))) : Number.NaN,
    elMaxMs: recent.length ? round(Math.max(...recent.map((s) => s.elMaxMs))) : Number.NaN,
  };
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(
    `soak: ${soakMinutes} min after a ${probeSeconds} s capacity probe; load average at start ${machine.loadAverage1m} on ${machine.cpus} CPUs`,
  );
  const workDir = mkdtempSync(join(tmpdir(), 'billing-soak-'));
  mkdirSync(artifactsDir, { recursive: true });
  rmSync(slowCommandsFile, { force: true });
  const [ferret, temporal] = await Promise.all([
    startFerretDb({ dataDir: join(workDir, 'ferretdb') }),
    startTemporalDevServer({ dbFile: join(workDir, 'temporal.db'), headless: true }),
  ]);
  const mongo = await MongoClient.connect(ferret.uri);
  const dbName = `soak_${Date.now()}`;
  const children: Probed[] = [];
  const receiver = await startWebhookReceiver();
  try {
    const fx = await seed(mongo.db(dbName));
    const ca = await testCa();
    const caFile = join(workDir, 'webhook-ca.pem');
    writeFileSync(caFile, ca.caCert);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const shared = {
      NODE_ENV: 'development',
      SMTP_URL: 'disabled',
      MONGODB_URI: ferret.uri,
      MONGODB_DB: dbName,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: `soak-${randomUUID()}`,
      WEBHOOK_ALLOWED_HOSTS: 'localhost',
    };
    // The per-key, per-address and page limits would cap the load generator (one key, one address): the soak measures the stack.
    const api = spawnProbed('soak-api', 'api/server.ts', {
      ...shared,
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: url,
      LOG_LEVEL: 'error',
      API_METRICS_PORT: String(await freePort()),
      RATE_LIMIT_PER_KEY: '1000000000',
      RATE_LIMIT_PER_IP: '1000000000',
      PAGE_POST_RATE_LIMIT: '1000000000',
    });
    const workerMetricsPort = await freePort();
    const worker = spawnProbed('soak-worker', 'worker/main.ts', {
      ...shared,
      LOG_LEVEL: 'ERROR',
      WORKER_METRICS_PORT: String(workerMetricsPort),
      WEBHOOK_CA_FILE: caFile,
      // Unversioned: nothing here makes a version of its queue current (docs/testing.md).
      WORKER_VERSIONING: 'off',
    });
    children.push(api, worker);
    const alive = () => children.find((c) => c.group.hasExited());
    await waitFor(async () => (await fetch(`${url}/v1/nothing`).catch(() => null)) !== null, {
      timeoutMs: 180_000,
      intervalMs: 250,
      description: 'the API process to answer',
      abortIf: () => (alive() ? new Error(`a child exited: ${alive()!.output}`) : undefined),
    });
    await waitFor(() => worker.output.includes('worker ready') || worker.samples.length > 0, {
      timeoutMs: 180_000,
      intervalMs: 250,
      description: 'the worker',
      abortIf: () => (alive() ? new Error(`a child exited: ${alive()!.output}`) : undefined),
    });
    const endpoint = await fetch(`${url}/v1/webhook_endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fx.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url('/soak'), enabled_events: ['*'] }),
    });
    if (endpoint.status !== 201) throw new Error(`webhook endpoint: ${endpoint.status} ${await endpoint.text()}`);
    const ops = operations(url, fx);

    console.log(`capacity probe: ${probeLanes} lanes, ${probeSeconds} s...`);
    const probe = await capacityProbe(ops);
    // SOAK_RATE pins the rate (operations/s) so runs on a machine of changing speed compare; half the probe by default.
    const rate = process.env.SOAK_RATE ? Number(process.env.SOAK_RATE) : probe.opsPerSec / 2;
    console.log(`capacity ${round(probe.opsPerSec)} ops/s (errors ${probe.counters.errors}); soak rate ${round(rate)} ops/s`);
    if (probe.counters.firstErrors.length) console.log(`probe errors: ${probe.counters.firstErrors.join('; ')}`);

    const listen = listenReader(url, fx.key);
    let delivered = 0;
    const totals = newCounters();
    let minute = newCounters();
    let inFlight = 0;
    const began = Date.now();
    let minuteStart = began;
    const rows: Array<Record<string, number>> = [];
    const rssPoints = { api: [] as Array<{ minute: number; rss: number }>, worker: [] as Array<{ minute: number; rss: number }> };
    const start = { api: window(api, 0), worker: window(worker, 0) };
    rssPoints.api.push({ minute: 0, rss: start.api.rssMiB * 2 ** 20 });
    rssPoints.worker.push({ minute: 0, rss: start.worker.rssMiB * 2 ** 20 });
    const pending = new Set<Promise<void>>();
    let credit = 0;
    const tickMs = 100;
    const ticker = setInterval(() => {
      credit += (rate * tickMs) / 1000;
      while (credit >= 1) {
        credit -= 1;
        if (inFlight >= maxInFlight) {
          minute.skipped++;
          continue;
        }
        inFlight++;
        const p = runOp(ops, minute).finally(() => {
          inFlight--;
          pending.delete(p);
        });
        pending.add(p);
      }
    }, tickMs);
    const report = async () => {
      const now = Date.now();
      const cache = await stickyCacheSize(workerMetricsPort);
      const m = round((now - began) / 60_000, 2);
      const a = window(api, minuteStart);
      const w = window(worker, minuteStart);
      delivered += receiver.hits.length;
      receiver.hits.splice(0); // the receiver's record stays bounded: only the count is kept
      rssPoints.api.push({ minute: m, rss: a.rssMiB * 2 ** 20 });
      rssPoints.worker.push({ minute: m, rss: w.rssMiB * 2 ** 20 });
      const row = {
        minute: m,
        'api rss MiB': a.rssMiB,
        'api heap MiB': a.heapMiB,
        'api el p99 ms': a.elP99Ms,
        'worker rss MiB': w.rssMiB,
        'worker heap MiB': w.heapMiB,
        'worker el p99 ms': w.elP99Ms,
        'worker cached workflows': cache,
        requests: minute.done,
        errors: minute.errors,
        skipped: minute.skipped,
        'p99 ms': round(percentile(minute.latencies, 99)),
        webhooks: delivered,
        'listen events': listen.state.events,
      };
      rows.push(row);
      console.log(
        Object.entries(row)
          .map(([k, v]) => `${k}=${v}`)
          .join(' '),
      );
      if (minute.firstErrors.length) console.log(`  errors: ${minute.firstErrors.join('; ')}`);
      totals.done += minute.done;
      totals.errors += minute.errors;
      totals.skipped += minute.skipped;
      for (const n of opNames) {
        totals.byOp[n].done += minute.byOp[n].done;
        totals.byOp[n].errors += minute.byOp[n].errors;
      }
      if (totals.firstErrors.length < 10) totals.firstErrors.push(...minute.firstErrors.slice(0, 10 - totals.firstErrors.length));
      minute = newCounters();
      minuteStart = now;
    };
    await waitFor(
      async () => {
        if (Date.now() - minuteStart >= 60_000) await report();
        return Date.now() - began >= soakMinutes * 60_000;
      },
      {
        timeoutMs: soakMinutes * 60_000 + 120_000,
        intervalMs: 500,
        description: 'the soak',
        abortIf: () => (alive() ? new Error(`a child exited: ${alive()!.output}`) : undefined),
      },
    );
    clearInterval(ticker);
    await Promise.allSettled([...pending]);
    if (minute.done > 0) await report();
    await listen.stop();

    const end = { api: window(api, 0), worker: window(worker, 0) };
    const summary = {
      api: {
        rssStartMiB: start.api.rssMiB,
        rssEndMiB: end.api.rssMiB,
        growthMiBPerHour: growthPerHour(rssPoints.api),
        growthSecondHalfMiBPerHour: growthPerHour(rssPoints.api.filter((p) => p.minute >= soakMinutes / 2)),
        elP99MsWorstMinute: Math.max(...rows.map((r) => r['api el p99 ms'])),
      },
      worker: {
        rssStartMiB: start.worker.rssMiB,
        rssEndMiB: end.worker.rssMiB,
        growthMiBPerHour: growthPerHour(rssPoints.worker),
        growthSecondHalfMiBPerHour: growthPerHour(rssPoints.worker.filter((p) => p.minute >= soakMinutes / 2)),
        elP99MsWorstMinute: Math.max(...rows.map((r) => r['worker el p99 ms'])),
      },
    };
    printTable('Soak: RSS (least-squares fit over the minute samples: whole run, and its second half) and event-loop delay', [
      {
        process: 'api',
        'rss start MiB': summary.api.rssStartMiB,
        'rss end MiB': summary.api.rssEndMiB,
        'growth MiB/h': summary.api.growthMiBPerHour,
        '2nd half MiB/h': summary.api.growthSecondHalfMiBPerHour,
        'worst minute el p99 ms': summary.api.elP99MsWorstMinute,
      },
      {
        process: 'worker',
        'rss start MiB': summary.worker.rssStartMiB,
        'rss end MiB': summary.worker.rssEndMiB,
        'growth MiB/h': summary.worker.growthMiBPerHour,
        '2nd half MiB/h': summary.worker.growthSecondHalfMiBPerHour,
        'worst minute el p99 ms': summary.worker.elP99MsWorstMinute,
      },
    ]);
    printTable(
      'Soak: operations',
      opNames.map((n) => ({ operation: n, weight: mix[n], done: totals.byOp[n].done, errors: totals.byOp[n].errors })),
    );
    console.log(
      `requests ${totals.done}, errors ${totals.errors}, skipped (in-flight bound ${maxInFlight}) ${totals.skipped}; webhooks delivered ${delivered}; listen events ${listen.state.events} over ${listen.state.sessions} session(s)`,
    );
    mkdirSync(artifactsDir, { recursive: true });
    const file = join(artifactsDir, 'soak.json');
    writeFileSync(
      file,
      `${JSON.stringify({ at: new Date().toISOString(), machine, machineAtEnd: machineInfo(), soakMinutes, probe: { seconds: probeSeconds, lanes: probeLanes, opsPerSec: round(probe.opsPerSec), errors: probe.counters.errors }, rate: round(rate), mix, summary, totals: { done: totals.done, errors: totals.errors, skipped: totals.skipped, byOp: totals.byOp, firstErrors: totals.firstErrors }, webhooksDelivered: delivered, listen: { events: listen.state.events, sessions: listen.state.sessions }, minutes: rows }, null, 2)}\n`,
    );
    console.log(`wrote ${file.slice(root.length)}`);
  } finally {
    for (const child of children.reverse()) await child.group.stop();
    await receiver.close();
    await mongo.close();
    await temporal.stop();
    await ferret.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
