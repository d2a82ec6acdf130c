// test/bench/worker-cache.ts (issue 30): what one cached workflow costs the worker's RSS, and that
// the cache stays at its bound. Starts subscription workflows (trialing, so each stays open and cached
// like a live subscription) in steps; after each step waits until Temporal Core's sticky cache gauge
// shows them, collects garbage and samples RSS. Prints RSS per cached workflow (least squares over
// the steps below the bound) and the gauge and RSS past it. Measures only; asserts nothing.
// Run with `node --expose-gc --import tsx test/bench/worker-cache.ts`; CACHE_BENCH_TOTAL and
// WORKER_MAX_CACHED_WORKFLOWS choose the workflows started and the bound.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import { MongoClient } from 'mongodb';
import { freePort, startFerretDb, startTemporalDevServer } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { workerTuningFromEnv } from '../../worker/tuning';
import { ensureIndexes } from '../../store/indexes';
import { createStore } from '../../store/stores';
import { createOffer, createProduct } from '../../store/catalog';
import { insertCustomer, newCustomerDoc } from '../../store/customers';
import { createTestConnection } from '../../adapters/provider/test-connection';
import { recordSubscription } from '../../services/subscriptions/subscriptions';
import { subscriptionClient } from '../../services/subscriptions/client';
import { machineInfo, printTable, round, runWithConcurrency, saveResults } from './lib';

const total = Number(process.env.CACHE_BENCH_TOTAL ?? 1500);
const step = 250;
/** How long one step may take to show in the cache gauge before the bench gives up. */
const STEP_DEADLINE_MS = 180_000;

async function stickyCacheSize(port: number): Promise<number> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((res) => res.text());
  const values = [...text.matchAll(/^temporal_sticky_cache_size\{[^}]*\} (\d+)/gm)].map((m) => Number(m[1]));
  return values.reduce((a, b) => a + b, 0);
}

async function untilCached(port: number, want: number): Promise<number> {
  const deadline = Date.now() + STEP_DEADLINE_MS;
  for (;;) {
    const cached = await stickyCacheSize(port);
    if (cached >= want || Date.now() > deadline) return cached;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

function rssMiB(): { rss: number; heap: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { rss: round(m.rss / 2 ** 20), heap: round(m.heapUsed / 2 ** 20) };
}

/** Least-squares slope of RSS over cached workflows, in MiB per workflow. */
function slope(points: { cached: number; rss: number }[]): number {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.cached, 0) / n;
  const my = points.reduce((s, p) => s + p.rss, 0) / n;
  const num = points.reduce((s, p) => s + (p.cached - mx) * (p.rss - my), 0);
  const den = points.reduce((s, p) => s + (p.cached - mx) ** 2, 0);
  return round(num / den, 3);
}

async function main(): Promise<void> {
  const metricsPort = await freePort();
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} },
      metrics: { prometheus: { bindAddress: `127.0.0.1:${metricsPort}` } },
    },
  });
  const bound = workerTuningFromEnv().maxCachedWorkflows;
  console.log(`worker cache bound ${bound} (WORKER_MAX_CACHED_WORKFLOWS), ${total} subscription workflows in steps of ${step}`);
  const machine = machineInfo();
  const workDir = mkdtempSync(join(tmpdir(), 'billing-bench-cache-'));
  const [ferret, temporal] = await Promise.all([
    startFerretDb({ dataDir: join(workDir, 'ferretdb') }),
    startTemporalDevServer({ dbFile: join(workDir, 'temporal.db'), headless: true }),
  ]);
  const mongo = await MongoClient.connect(ferret.uri);
  const db = mongo.db('bench_cache');
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection });
  const taskQueue = `bench-cache-${Date.now()}`;
  try {
    await ensureIndexes(db);
    const provider = createTestConnection({ db });
    const store = await createStore(db, { name: 'Cache Store', slug: 'cache', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
    const product = await createProduct(db, { storeId: store._id, name: 'Cache', family: 'cache' });
    const offer = await createOffer(db, {
      storeId: store._id,
      productId: product._id,
      name: 'Cache monthly',
      type: 'recurring',
      billingCycle: 'monthly',
      trialDays: 30,
      prices: [{ currency: 'brl', amount: 4990, default: true }],
    });
    const subs: Awaited<ReturnType<typeof recordSubscription>>[] = [];
    await runWithConcurrency(total, 10, async (i) => {
      const { customer } = await insertCustomer(db, newCustomerDoc(store._id, { email: `cache${i}@example.com`, name: 'Cache Buyer' }, {}));
      const saved = await provider.saveCard({ storeId: store._id, customerId: customer._id, card: { number: '4242424242424242' } });
      if (!saved.ok) throw new Error(saved.message);
      subs.push(await recordSubscription({ db }, { store, customer, offer, product, paymentMethod: saved.card }));
    });
    const worker = await createBillingWorker({ connection: nativeConnection, taskQueue, db, temporal: client });
    const subscriptions = subscriptionClient(client, taskQueue);
    const rows = await worker.runUntil(async () => {
      const samples = [{ started: 0, cached: await stickyCacheSize(metricsPort), ...rssMiB() }];
      for (let started = step; started <= total; started += step) {
        await runWithConcurrency(step, 20, (i) => subscriptions.start(subs[started - step + i]));
        const cached = await untilCached(metricsPort, Math.min(started, bound));
        samples.push({ started, cached, ...rssMiB() });
        console.log(`started ${started}: cached ${cached}, rss ${samples.at(-1)!.rss} MiB`);
      }
      return samples;
    });
    const below = rows.filter((r) => r.cached < bound);
    const perWorkflow = below.length > 1 ? slope(below.map((r) => ({ cached: r.cached, rss: r.rss }))) : null;
    printTable(
      'Worker RSS against its cached workflows (after a GC)',
      rows.map((r) => ({ started: r.started, cached: r.cached, 'rss MiB': r.rss, 'heap MiB': r.heap })),
    );
    console.log(`RSS per cached workflow (least squares below the bound): ${perWorkflow} MiB; load average ${machine.loadAverage1m} at start`);
    saveResults('worker-cache', { takenAt: new Date().toISOString(), machine, bound, total, step, rows, rssMiBPerCachedWorkflow: perWorkflow });
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
