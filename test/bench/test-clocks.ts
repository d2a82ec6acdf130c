// `npm run bench:test-clocks`: how long a test clock takes to live through three months. For clocks
// carrying 1, 10 and 40 monthly subscriptions (cards that pay), two advances (two months, then one)
// through the API, each timed from POST advance to `status: ready`; the renewals the subscriptions made
// are counted (three each), and each advance's CPU seconds (this process: API and worker, all threads;
// the servers it started). Starts its own FerretDB and Temporal dev server; prints a table, writes
// results/test-clocks.json. Measures only; asserts nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import { MongoClient, type Db } from 'mongodb';
import { freePort, startFerretDb, startTemporalDevServer } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { buildApp } from '../../api/app';
import { loadApiConfig } from '../../api/config';
import { periodEnd } from '../../domain/billing-periods';
import { ensureIndexes } from '../../store/indexes';
import { createApiKey, createStore } from '../../store/stores';
import { createOffer, createProduct } from '../../store/catalog';
import { insertCustomer, newCustomerDoc } from '../../store/customers';
import { ordersCollection } from '../../store/orders';
import { createTestConnection } from '../../adapters/provider/test-connection';
import { createSubscription } from '../../services/subscriptions/subscriptions';
import type { OfferDoc, ProductDoc, StoreDoc } from '../../store/collections';
import { cpuByProcess } from './cpu';
import { machineInfo, printTable, round, saveResults } from './lib';

const settings = { subscriptionsPerClock: [1, 10, 40], readyPollMs: 50 };

interface Api {
  post(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  get(path: string): Promise<{ status: number; body: Record<string, unknown> }>;
}

function apiAt(url: string, key: string): Api {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const send = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  return { post: (path, body) => send('POST', path, body), get: (path) => send('GET', path) };
}

/** An advance's wall time and CPU seconds: the advance is CPU-bound, so CPU tells a slowdown from other load. */
interface Timed {
  ms: number;
  cpuS: { ours: number; servers: number };
}

/** POST advance, then poll until ready. */
async function timedAdvance(api: Api, clock: string, to: number): Promise<Timed> {
  const t = performance.now();
  const cpu = cpuByProcess();
  const answer = await api.post(`/v1/test_helpers/test_clocks/${clock}/advance`, { frozen_time: to });
  if (answer.status !== 200) throw new Error(`advance answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  const deadline = Date.now() + 10 * 60_000;
  while ((await api.get(`/v1/test_helpers/test_clocks/${clock}`)).body.status !== 'ready') {
    if (Date.now() > deadline) throw new Error(`clock ${clock} not ready after 10 minutes`);
    await new Promise((resolve) => setTimeout(resolve, settings.readyPollMs));
  }
  // This process (every thread: the worker's workflow thread too) and the servers it started.
  const used = cpu.per(1);
  const ours = used['this process'];
  return { ms: performance.now() - t, cpuS: { ours: round(ours / 1000), servers: round((used.total - ours) / 1000) } };
}

interface Catalog {
  db: Db;
  store: StoreDoc;
  offer: OfferDoc;
  product: ProductDoc;
  temporal: Client;
  taskQueue: string;
}

/** A clock at now with `count` paying monthly subscriptions whose first period is paid. */
async function clockWithSubscriptions(api: Api, c: Catalog, count: number): Promise<{ clock: string; t0: number; subscriptions: string[] }> {
  const t0 = Math.floor(Date.now() / 1000);
  const clock = (await api.post('/v1/test_helpers/test_clocks', { frozen_time: t0, name: `${count} subscriptions` })).body.id as string;
  const provider = createTestConnection({ db: c.db });
  const subscriptions: string[] = [];
  for (let i = 0; i < count; i++) {
    const doc = newCustomerDoc(c.store._id, { email: `clock-${randomUUID()}@example.com`, name: 'Bench Clock' }, {});
    doc.test_clock = clock;
    const { customer } = await insertCustomer(c.db, doc);
    const saved = await provider.saveCard({ storeId: c.store._id, customerId: customer._id, card: { number: '4242424242424242' } });
    if (!saved.ok) throw new Error(saved.message);
    const deps = { db: c.db, provider, temporal: c.temporal, taskQueue: c.taskQueue };
    const sub = await createSubscription(deps, {
      store: c.store,
      customer,
      offer: c.offer,
      product: c.product,
      paymentMethod: saved.card,
      firstPeriodPaid: true,
      now: t0 * 1000,
    });
    subscriptions.push(sub._id);
  }
  return { clock, t0, subscriptions };
}

async function main(): Promise<void> {
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} } },
  });
  const machineBefore = machineInfo();
  const workDir = mkdtempSync(join(tmpdir(), 'billing-bench-clocks-'));
  console.log(`starting FerretDB and the Temporal dev server in ${workDir}`);
  const [ferret, temporalServer] = await Promise.all([
    startFerretDb({ dataDir: join(workDir, 'ferretdb') }),
    startTemporalDevServer({ dbFile: join(workDir, 'temporal.db'), headless: true }),
  ]);
  const mongo = await MongoClient.connect(ferret.uri);
  const db = mongo.db('bench_clocks');
  const nativeConnection = await NativeConnection.connect({ address: temporalServer.address });
  const connection = await Connection.connect({ address: temporalServer.address });
  const temporal = new Client({ connection });
  const taskQueue = `bench-clocks-${randomUUID()}`;
  try {
    await ensureIndexes(db);
    const provider = createTestConnection({ db });
    const store = await createStore(db, { name: 'Bench Store', slug: 'bench', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
    const { key } = await createApiKey(db, { storeId: store._id, name: 'bench', scopes: ['read', 'write'] });
    const product = await createProduct(db, { storeId: store._id, name: 'Bench API', family: 'bench' });
    const offer = await createOffer(db, {
      storeId: store._id,
      productId: product._id,
      name: 'Bench monthly',
      type: 'recurring',
      billingCycle: 'monthly',
      prices: [{ currency: 'brl', amount: 4990, default: true }],
    });
    const worker = await createBillingWorker({ connection: nativeConnection, taskQueue, db, temporal });
    const port = await freePort();
    const base = loadApiConfig({ ...process.env, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'silent' });
    const app = await buildApp(
      { db, config: { ...base, taskQueue, keyRateLimit: 1_000_000_000, ipRateLimit: 1_000_000_000 }, temporal, provider },
      { logger: false },
    );
    const api = apiAt(await app.listen({ port, host: '127.0.0.1' }), key);

    const rows = await worker.runUntil(async () => {
      const measured = [];
      for (const count of settings.subscriptionsPerClock) {
        const { clock, t0, subscriptions } = await clockWithSubscriptions(api, { db, store, offer, product, temporal, taskQueue }, count);
        const twoMonths = periodEnd(periodEnd(t0, 'monthly'), 'monthly');
        const first = await timedAdvance(api, clock, twoMonths - 3600);
        const second = await timedAdvance(api, clock, periodEnd(twoMonths, 'monthly') + 3600);
        const renewals = await ordersCollection(db).countDocuments({
          subscription: { $in: subscriptions },
          billing_reason: 'renewal',
          status: 'paid',
        });
        measured.push({
          subscriptions: count,
          advance1Ms: round(first.ms),
          advance2Ms: round(second.ms),
          advance1CpuS: first.cpuS,
          advance2CpuS: second.cpuS,
          renewals,
          msPerRenewal: round((first.ms + second.ms) / Math.max(renewals, 1)),
        });
      }
      return measured;
    });
    await app.close();

    printTable(
      'Test clock: three months (two advances), paying monthly subscriptions',
      rows.map((r) => ({
        subscriptions: r.subscriptions,
        'advance 1 (2 months) ms': r.advance1Ms,
        'advance 1 CPU s (ours + servers)': `${r.advance1CpuS.ours} + ${r.advance1CpuS.servers}`,
        'advance 2 (1 month) ms': r.advance2Ms,
        'advance 2 CPU s (ours + servers)': `${r.advance2CpuS.ours} + ${r.advance2CpuS.servers}`,
        'renewals (3 each)': r.renewals,
        'ms per renewal': r.msPerRenewal,
      })),
    );
    const file = saveResults('test-clocks', {
      benchmark: 'test-clocks',
      takenAt: new Date().toISOString(),
      machine: machineBefore,
      loadAverage1mAfter: machineInfo().loadAverage1m,
      settings,
      rows,
    });
    console.log(`\nsaved ${file}`);
  } finally {
    await connection.close().catch(() => undefined);
    await nativeConnection.close().catch(() => undefined);
    await mongo.close();
    await Promise.all([ferret.stop(), temporalServer.stop()]);
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
