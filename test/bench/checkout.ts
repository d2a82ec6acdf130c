// `npm run bench:checkout`: POST /v1/checkout/sessions at 20 connections (each call validates
// against the catalog, writes the session and starts its workflow): sessions/s and p99; then the
// hosted page GET /c/{id} render p99 across the created sessions. The bare workflow-start rate on
// the same dev server is measured first as the yardstick (goal: sessions/s >= 80% of it; page p99
// at most 30 ms; issue 30). Starts its own FerretDB and Temporal dev server; prints a table (and CPU
// per start and per create by process), writes results/checkout.json. Measures only; asserts nothing.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { Client, Connection, type WorkflowClientInterceptor } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import { MongoClient, type Db } from 'mongodb';
import Fastify from 'fastify';
import { startFerretDb, startTemporalDevServer, freePort } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { ActivityTimings } from '../../worker/activity-interceptors';
import { buildApp } from '../../api/app';
import { loadApiConfig } from '../../api/config';
import { ensureIndexes } from '../../store/indexes';
import { createApiKey, createStore } from '../../store/stores';
import { createOffer, createProduct } from '../../store/catalog';
import { createTestConnection } from '../../adapters/provider/test-connection';
import { checkoutSessionsCollection } from '../../store/checkout-sessions';
import { profiled } from './profile';
import { cpuPerOperation, cpuSnapshot, type CpuSnapshot } from './cpu';
import { machineInfo, printActivityTimings, printTable, round, runAutocannon, runWithConcurrency, saveResults, summarizeLatencies } from './lib';

const settings = {
  starts: { count: 400, concurrency: 20, warmup: 20 },
  create: { connections: 20, durationSeconds: 10, warmup: 40 },
  page: { connections: 10, durationSeconds: 10, distinctSessions: 200 },
};

/**
 * BENCH_EAGER=1: every start (yardstick and sessions) asks for eager execution, over the worker's own
 * NativeConnection (the SDK allows it only there): the first workflow task comes back in the start's
 * answer to the worker in this process. The API process has no worker, so this only measures what it would give.
 */
const eager = process.env.BENCH_EAGER === '1';

const YARDSTICK_SKIPS =
  "the HTTP request (parse, API key read, rate window, body validation, response), the offer and product reads and the session's insert at FerretDB, the start's search attributes and summary, and the session workflow's first task (its timer) instead of noopWorkflow's";

function eagerClient(nativeConnection: NativeConnection): Client {
  const requestEager: WorkflowClientInterceptor = {
    start: (input, next) => next({ ...input, options: { ...input.options, requestEagerStart: true } }),
  };
  return new Client({ connection: nativeConnection, interceptors: { workflow: [requestEager] } });
}

const PAGE_YARDSTICK_SKIPS =
  "the API's hooks (request id, headers, rate-limit and auth checks that pass pages through, the CSP headers), the host check, the session's language and status, and rendering the page (it sends the first session's page as stored)";

/** (c0): GET /c/:id on a bare Fastify app in this process that reads the session by _id and sends a stored copy of a page. */
async function barePageRun(db: Db, apiUrl: string, ids: string[]) {
  const stored = await (await fetch(`${apiUrl}/c/${ids[0]}`)).text();
  const bare = Fastify({ logger: false });
  bare.get<{ Params: { id: string } }>('/c/:id', async (request, reply) => {
    const doc = await checkoutSessionsCollection(db).findOne({ _id: request.params.id });
    return reply
      .status(doc ? 200 : 404)
      .type('text/html; charset=utf-8')
      .send(doc ? stored : 'missing');
  });
  const url = await bare.listen({ port: 0, host: '127.0.0.1' });
  try {
    return await runAutocannon({
      url,
      connections: settings.page.connections,
      durationSeconds: settings.page.durationSeconds,
      paths: ids.map((id) => `/c/${id}`),
      workers: 1,
    });
  } finally {
    await bare.close();
  }
}

/** CPU from now on, per operation when asked: this whole process (every thread), its main thread, and the servers under it. */
function cpuOf() {
  const process0 = process.cpuUsage();
  const before: CpuSnapshot = cpuSnapshot();
  return {
    per(operations: number) {
      const used = process.cpuUsage(process0);
      const processMs = round((used.user + used.system) / 1000 / Math.max(1, operations), 3);
      return { processMs, ...cpuPerOperation(before, cpuSnapshot(), operations) };
    },
  };
}

async function bareStarts(client: Client, taskQueue: string) {
  const { count, concurrency, warmup } = settings.starts;
  const run = async (total: number) => {
    const startMs: number[] = [];
    const began = performance.now();
    let last = began;
    await runWithConcurrency(total, concurrency, async (i) => {
      const t = performance.now();
      await client.workflow.start('noopWorkflow', { taskQueue, workflowId: `bench-noop-${randomUUID()}-${i}` });
      last = performance.now();
      startMs.push(last - t);
    });
    return { startsPerSec: round(total / ((last - began) / 1000)), startMs: summarizeLatencies(startMs) };
  };
  await run(warmup);
  return run(count);
}

async function main(): Promise<void> {
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} } },
  });
  const machineBefore = machineInfo();
  if (machineBefore.loadAverage1m > machineBefore.cpus / 2) {
    console.log(`warning: load average ${machineBefore.loadAverage1m} on ${machineBefore.cpus} CPUs before starting; figures will be low`);
  }
  const workDir = mkdtempSync(join(tmpdir(), 'billing-bench-checkout-'));
  console.log(`starting FerretDB and the Temporal dev server in ${workDir}`);
  const [ferret, temporal] = await Promise.all([
    startFerretDb({ dataDir: join(workDir, 'ferretdb') }),
    startTemporalDevServer({ dbFile: join(workDir, 'temporal.db'), headless: true }),
  ]);
  const mongo = await MongoClient.connect(ferret.uri);
  const db = mongo.db('bench_checkout');
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const connection = await Connection.connect({ address: temporal.address });
  const client = eager ? eagerClient(nativeConnection) : new Client({ connection });
  const taskQueue = `bench-checkout-${randomUUID()}`;
  try {
    await ensureIndexes(db);
    const store = await createStore(db, { name: 'Bench Store', slug: 'bench', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
    const { key } = await createApiKey(db, { storeId: store._id, name: 'bench', scopes: ['read', 'write'] });
    const product = await createProduct(db, { storeId: store._id, name: 'Bench Course' });
    const offer = await createOffer(db, {
      storeId: store._id,
      productId: product._id,
      name: 'Bench Course (lifetime)',
      type: 'one_off',
      slug: 'bench-course',
      prices: [
        { currency: 'brl', amount: 19700, default: true },
        { currency: 'usd', amount: 3900, default: false },
      ],
      packs: [1, 5],
      maxInstallments: 12,
    });

    const timings = new ActivityTimings();
    const worker = await createBillingWorker({ connection: nativeConnection, taskQueue, db, temporal: client, activityTimings: timings });
    const port = await freePort();
    const base = loadApiConfig({ ...process.env, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'silent' });
    // The per-key limit (100 per 2 s) would cap the load generator: the bench measures the route.
    const config = { ...base, taskQueue, keyRateLimit: 1_000_000_000, ipRateLimit: 1_000_000_000 };
    const app = await buildApp({ db, config, temporal: client, provider: createTestConnection({ db }) }, { logger: false });
    const url = await app.listen({ port, host: '127.0.0.1' });

    const figures = await worker.runUntil(async () => {
      console.log('(a) bare workflow starts (noopWorkflow) on this dev server...');
      const startsCpu = cpuOf();
      const starts = await bareStarts(client, taskQueue);
      const startsCpuPerOp = startsCpu.per(settings.starts.count + settings.starts.warmup);

      const body = JSON.stringify({ offer: offer._id, client_reference_id: 'bench', metadata: { source: 'bench' } });
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      await runWithConcurrency(settings.create.warmup, 10, async () => {
        const res = await fetch(`${url}/v1/checkout/sessions`, { method: 'POST', headers, body });
        if (res.status !== 201) throw new Error(`warmup create answered ${res.status}: ${await res.text()}`);
      });

      console.log(`(b) POST /v1/checkout/sessions, ${settings.create.connections} connections, ${settings.create.durationSeconds} s...`);
      const createCpu = cpuOf();
      const created = await profiled('checkout-create', () =>
        autocannon({
          url: `${url}/v1/checkout/sessions`,
          method: 'POST',
          headers,
          body,
          connections: settings.create.connections,
          duration: settings.create.durationSeconds,
          workers: 1,
        }),
      );
      const createCpuPerOp = createCpu.per(created.requests.total);
      const sessions = await checkoutSessionsCollection(db).countDocuments({ store_id: store._id });

      console.log(`(c) GET /c/{id} over ${settings.page.distinctSessions} sessions, ${settings.page.connections} connections...`);
      const ids = (
        await checkoutSessionsCollection(db).find({ store_id: store._id }).sort({ _id: -1 }).limit(settings.page.distinctSessions).toArray()
      ).map((d) => d._id);
      console.log('(c0) the same over a bare Fastify route in this process: the session read by _id, a stored copy of the page sent...');
      const barePage = await barePageRun(db, url, ids);
      const page = await profiled('checkout-page', () =>
        runAutocannon({
          url,
          connections: settings.page.connections,
          durationSeconds: settings.page.durationSeconds,
          paths: ids.map((id) => `/c/${id}`),
          workers: 1,
        }),
      );
      return {
        starts,
        create: {
          sessionsPerSec: round(created.requests.average),
          latencyMs: { p50: created.latency.p50, p99: created.latency.p99, mean: round(created.latency.mean, 2), max: created.latency.max },
          requests: created.requests.total,
          non2xx: created.non2xx,
          errors: created.errors,
          sessionsStored: sessions,
        },
        page,
        barePage,
        cpuPerOperation: { bareStart: startsCpuPerOp, create: createCpuPerOp },
      };
    });
    await app.close();

    const ratio = round((figures.create.sessionsPerSec / figures.starts.startsPerSec) * 100);
    printTable(`(a) bare workflow starts on this dev server (the yardstick)${eager ? ', eager' : ''}`, [
      {
        workflow: 'noopWorkflow',
        lanes: settings.starts.concurrency,
        'starts/s': figures.starts.startsPerSec,
        'start p50 ms': figures.starts.startMs.p50,
        'start p99 ms': figures.starts.startMs.p99,
      },
    ]);
    printTable('(b) POST /v1/checkout/sessions (validate, write, start workflow)', [
      {
        connections: settings.create.connections,
        'sessions/s': figures.create.sessionsPerSec,
        'p50 ms': figures.create.latencyMs.p50,
        'p99 ms': figures.create.latencyMs.p99,
        'non-2xx': figures.create.non2xx,
        errors: figures.create.errors,
        '% of bare starts': ratio,
      },
    ]);
    console.log(`the yardstick skips: ${YARDSTICK_SKIPS}`);
    printTable(
      'CPU per operation by process (ms): this process (API, worker, load generator) in all and its main thread; children = FerretDB and the dev server',
      Object.entries(figures.cpuPerOperation).map(([operation, c]) => ({
        operation,
        'process ms': c.processMs,
        'main thread ms': c.mainThreadMs,
        'children ms': c.childrenMs,
      })),
    );
    printTable(
      '(c) GET /c/{id} hosted checkout page, beside its yardstick (c0)',
      [
        ['(c0) bare route: read by _id, stored page', figures.barePage],
        ['(c) GET /c/{id}', figures.page],
      ].map(([run, f]) => ({
        run: run as string,
        connections: (f as typeof figures.page).connections,
        'req/s': (f as typeof figures.page).requestsPerSec,
        'p50 ms': (f as typeof figures.page).latencyMs.p50,
        'p99 ms': (f as typeof figures.page).latencyMs.p99,
        'non-2xx': (f as typeof figures.page).non2xx,
      })),
    );
    console.log(`the page's yardstick skips: ${PAGE_YARDSTICK_SKIPS}`);
    printActivityTimings(timings.summary());
    const file = saveResults('checkout', {
      activityDurations: timings.summary(),
      benchmark: 'checkout',
      takenAt: new Date().toISOString(),
      machine: machineBefore,
      loadAverage1mAfter: machineInfo().loadAverage1m,
      settings,
      ...figures,
      createToBareStartsPercent: ratio,
      eagerStart: eager,
      yardstickSkips: YARDSTICK_SKIPS,
      goals: { createAtLeastPercentOfBareStarts: 80, pageP99AtMostMs: 30 },
    });
    console.log(`\nsaved ${file}`);
  } finally {
    await connection.close().catch(() => undefined);
    await nativeConnection.close().catch(() => undefined);
    await mongo.close();
    await Promise.all([ferret.stop(), temporal.stop()]);
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
