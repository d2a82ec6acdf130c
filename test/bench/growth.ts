// `npm run bench:growth`: how the cost of a request grows with the size of a store on the local engine.
// At each size (GROWTH_SIZES, default 1,000, 10,000 and 100,000 customers) store A and store B each hold
// that many customers (B proves the lists stay scoped to one store), and the API, one request at a time,
// serves: the first page of GET /v1/customers?limit=100, a middle page (starting_after a customer half way
// down) and GET /v1/customers/{id} (POST /v1/billing/meter_events/batch of 100 events with GROWTH_METER=1:
// it hangs in this harness today). Prints p50/p99 per size and the growth factor against the smallest size;
// writes results/growth.json. Measures only. Not measured: the checkout create (needs the Temporal worker).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import { MongoClient, type Db } from 'mongodb';
import { buildApp } from '../../api/app';
import { loadApiConfig } from '../../api/config';
import { collections } from '../../store/collections';
import { ensureIndexes } from '../../store/indexes';
import { newCustomerDoc } from '../../store/customers';
import { createMeter } from '../../store/meters';
import { createApiKey, createStore } from '../../store/stores';
import { createTestConnection } from '../../adapters/provider/test-connection';
import { startFerretDb } from '../../temporal-dev/servers';
import { machineInfo, printTable, round, saveResults, summarizeLatencies, type LatencySummary } from './lib';

const sizes = (process.env.GROWTH_SIZES ?? '1000,10000,100000').split(',').map(Number);
/** Samples per path; a full-scan list at 100,000 costs seconds, so the lists take fewer there (bounded run time). */
const samples = (size: number) => ({ lists: size >= 100_000 ? 5 : 20, retrieves: 100, batches: 20 });
const seedBatch = 1_000;

interface Store {
  id: string;
  key: string;
  ids: string[];
}

/** Adds customers to the store until it holds `size`, `created` one second apart, oldest first. */
async function topUp(db: Db, store: Store, size: number): Promise<void> {
  const start = Date.UTC(2026, 0, 1);
  while (store.ids.length < size) {
    const from = store.ids.length;
    const docs = Array.from({ length: Math.min(seedBatch, size - from) }, (_, i) => {
      const n = from + i;
      const contact = { email: `c${n}@${store.id}.example.com`, name: `Customer ${n}`, phone: '+5511987654321' };
      return newCustomerDoc(store.id, contact, {}, start + n * 1000);
    });
    await collections(db).customers.insertMany(docs, { ordered: false });
    store.ids.push(...docs.map((d) => d._id));
  }
}

/** Times `count` sequential calls; throws on a non-2xx answer so a broken path never passes for a fast one. */
async function timed(count: number, call: (i: number) => Promise<Response>): Promise<LatencySummary> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const res = await call(i);
    const body = await res.text();
    ms.push(performance.now() - started);
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${body.slice(0, 300)}`);
  }
  return summarizeLatencies(ms);
}

type Figures = Record<string, LatencySummary>;

async function measureAt(url: string, store: Store, meterEvent: string, size: number, round: number): Promise<Figures> {
  const n = samples(size);
  const headers = { authorization: `Bearer ${store.key}`, 'content-type': 'application/json' };
  const get = (path: string) => fetch(`${url}${path}`, { headers });
  const middle = store.ids[Math.floor(store.ids.length / 2)];
  const batch = (i: number) =>
    JSON.stringify({
      events: Array.from({ length: 100 }, (_, e) => ({
        event_name: meterEvent,
        identifier: `s${size}-r${round}-b${i}-e${e}`,
        payload: { customer_id: store.ids[e], value: 1 },
      })),
    });
  const listFirst = await timed(n.lists, () => get('/v1/customers?limit=100'));
  const listMiddle = await timed(n.lists, () => get(`/v1/customers?limit=100&starting_after=${middle}`));
  const retrieve = await timed(n.retrieves, (i) => get(`/v1/customers/${store.ids[(i * 7919) % store.ids.length]}`));
  // GROWTH_METER=1: the batch hung past 30 s in this harness (in-process API, no worker); off until that is understood.
  if (process.env.GROWTH_METER !== '1') return { listFirst, listMiddle, retrieve };
  const meterBatch = await timed(n.batches, (i) =>
    fetch(`${url}/v1/billing/meter_events/batch`, { method: 'POST', headers, body: batch(i), signal: AbortSignal.timeout(30_000) }),
  );
  return { listFirst, listMiddle, retrieve, meterBatch };
}

async function newStore(db: Db, name: string): Promise<Store> {
  const store = await createStore(db, { name, country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  const { key } = await createApiKey(db, { storeId: store._id, name: 'bench', scopes: ['read', 'write'] });
  return { id: store._id, key, ids: [] };
}

function report(results: Array<{ size: number; figures: Figures }>): void {
  const base = results[0].figures;
  const paths = Object.keys(base);
  printTable(
    'one request at a time; growth = p50 / p50 at the smallest size',
    results.flatMap(({ size, figures }) =>
      paths.map((path) => ({
        size,
        path,
        'p50 ms': figures[path].p50,
        'p99 ms': figures[path].p99,
        growth: `${round(figures[path].p50 / base[path].p50, 2)}x`,
      })),
    ),
  );
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(`load average ${machine.loadAverage1m} on ${machine.cpus} CPUs at start; figures are relative`);
  const workDir = mkdtempSync(join(tmpdir(), 'billing-bench-growth-'));
  const ferret = await startFerretDb({ dataDir: join(workDir, 'ferretdb') });
  const mongo = await MongoClient.connect(ferret.uri, { maxPoolSize: 20 });
  try {
    const db = mongo.db('bench_growth');
    await ensureIndexes(db);
    const [a, b] = [await newStore(db, 'Store A'), await newStore(db, 'Store B')];
    const meter = await createMeter(db, { storeId: a.id, displayName: 'Images processed', eventName: 'image.processed' });
    const config = { ...loadApiConfig({ LOG_LEVEL: 'silent', NODE_ENV: 'development' }), keyRateLimit: 1e9, ipRateLimit: 1e9 };
    // As in bench:usage: the batch's signal to the usage workflow is answered at once (no worker runs here).
    const temporal = { workflow: { signalWithStart: async () => undefined, start: async () => undefined } } as unknown as Client;
    const app = await buildApp({ db, config, temporal, provider: createTestConnection({ db }) }, { logger: false });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const results: Array<{ size: number; seedSeconds: number; figures: Figures }> = [];
    try {
      for (const [i, size] of sizes.entries()) {
        const seedStarted = performance.now();
        await topUp(db, a, size);
        await topUp(db, b, size);
        const seedSeconds = round((performance.now() - seedStarted) / 1000, 1);
        console.log(`${size} customers in each of 2 stores (seeded in ${seedSeconds} s); measuring`);
        results.push({ size, seedSeconds, figures: await measureAt(url, a, meter.event_name, size, i) });
      }
    } finally {
      await app.close();
    }
    report(results);
    const file = saveResults(process.env.GROWTH_BENCH_RESULTS ?? 'growth', {
      benchmark: 'growth',
      takenAt: new Date().toISOString(),
      machine,
      loadAverage1mAfter: machineInfo().loadAverage1m,
      notMeasured: 'POST /v1/checkout/sessions (needs the Temporal worker); the meter batch unless GROWTH_METER=1',
      results,
    });
    console.log(`\nresults written to ${file}`);
  } finally {
    await mongo.close();
    await ferret.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error('growth benchmark failed:', error);
  process.exit(1);
});
