// `npm run bench:usage`: metered usage on this machine's FerretDB.
// (a) yardstick in the same run: raw insertMany of meter-event-shaped documents into a collection with
//     the same unique index, sequential and from 8 concurrent writers;
// (b) POST /v1/billing/meter_events/batch (100 events a call) from 8 concurrent clients (one API key
//     each) against the API in its own process: accepted events/s and per-call p50/p99;
// (c) the same calls replayed: every event refused as a duplicate, and the rollups still equal the
//     number of distinct events;
// (d) the cost of recomputing a period of one subscription with USAGE_BENCH_EVENTS events (default
//     100,000; set 1000000 for a million): through the rollups (what the workflow does) and, for
//     comparison, a $match/$group over the raw events (what FerretDB v1 can only do by scanning;
//     USAGE_BENCH_AGGREGATE=0 skips it).
// Starts its own FerretDB; prints tables, writes results/usage.json (USAGE_BENCH_RESULTS=<name> for
// another file; USAGE_BENCH_CALLS=<n> batch calls per client). Measures only; asserts nothing.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Client as TemporalClient } from '@temporalio/client';
import { MongoClient, type Db } from 'mongodb';
import { freePort, startFerretDb } from '../../temporal-dev/servers';
import { waitFor } from '../../temporal-dev/wait';
import { collections, type StoreDoc } from '../../store/collections';
import { ensureIndexes } from '../../store/indexes';
import { createApiKey, createStore } from '../../store/stores';
import { createMeter } from '../../store/meters';
import { insertCustomer, newCustomerDoc } from '../../store/customers';
import { createOffer, createProduct } from '../../store/catalog';
import { createTestConnection } from '../../adapters/provider/test-connection';
import { recordSubscription } from '../../services/subscriptions/subscriptions';
import { contributionOf, customerKey, insertMeterEvents, meterEventId, meterEventsCollection, type MeterEventDoc } from '../../store/usage';
import { readRollups, writeBatch } from '../../store/usage-rollups';
import { createUsageActivities } from '../../activities/usage';
import { ingestMeterEvents } from '../../services/usage/ingestion';
import { putUsageItem } from '../../services/usage/items';
import { periodRollupKey } from '../../domain/usage-periods';
import { machineInfo, printTable, round, runWithConcurrency, saveResults, summarizeLatencies } from './lib';

const settings = {
  clients: 8,
  eventsPerCall: 100,
  callsPerClient: Number(process.env.USAGE_BENCH_CALLS ?? 60),
  warmupCalls: 3,
  replayCallsPerClient: 10,
  rawInsert: { batches: 100, batchSize: 100, concurrentWriters: 8 },
  recompute: {
    events: Number(process.env.USAGE_BENCH_EVENTS ?? 100_000),
    seedBatch: 1_000,
    runs: 5,
    // USAGE_BENCH_AGGREGATE=0 skips the raw-events aggregate (minutes and GBs of FerretDB memory at 1M).
    aggregate: process.env.USAGE_BENCH_AGGREGATE !== '0',
  },
};

/** No Temporal server here: the bench measures the database, so the usage workflow's signals go nowhere. */
const offlineTemporal = { workflow: { signalWithStart: async () => undefined, start: async () => undefined } } as unknown as TemporalClient;

const mb = (bytes: number) => round(bytes / 2 ** 20, 1);

/** Resident memory of the process listening on `port` (FerretDB), read from /proc; null when unknown. */
function rssOfListener(port: number): number | null {
  try {
    const out = execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' });
    const pid = /pid=(\d+)/.exec(out)?.[1];
    if (!pid) return null;
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+)/.exec(status)?.[1];
    return kb ? Number(kb) * 1024 : null;
  } catch {
    return null;
  }
}

async function rawInsertMany(db: Db) {
  const { batches, batchSize, concurrentWriters } = settings.rawInsert;
  const make = (tag: string, b: number) =>
    Array.from({ length: batchSize }, (_, i) => ({
      _id: `mev_raw_${tag}_${b}_${i}`,
      store_id: 'acct_bench',
      meter: 'mtr_bench',
      identifier: `${tag}-${b}-${i}`,
      customer: 'cust_bench',
      subscription: 'sub_bench',
      period_start: 0,
      value: 1,
      timestamp: Math.floor(Date.now() / 1000),
      payload: [
        { k: 'customer_id', v: 'cust_bench' },
        { k: 'value', v: 1 },
      ],
      batch: null,
      livemode: true,
      created: Math.floor(Date.now() / 1000),
    }));
  const raw = db.collection<{ _id: string }>('raw_meter_events');
  await raw.createIndex({ store_id: 1, meter: 1, identifier: 1 }, { unique: true });
  const run = async (tag: string, writers: number) => {
    const ms: number[] = [];
    const started = performance.now();
    await runWithConcurrency(batches, writers, async (b) => {
      const t = performance.now();
      await raw.insertMany(make(tag, b), { ordered: false });
      ms.push(performance.now() - t);
    });
    const seconds = (performance.now() - started) / 1000;
    return { writers, docs: batches * batchSize, docsPerSec: round((batches * batchSize) / seconds), batchMs: summarizeLatencies(ms) };
  };
  return { sequential: await run('seq', 1), concurrent: await run('con', concurrentWriters) };
}

interface Client {
  key: string;
  customer: string;
  subscription: string;
}

async function setup(db: Db) {
  const store: StoreDoc = await createStore(db, { name: 'Bench Store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  const meter = await createMeter(db, { storeId: store._id, displayName: 'Images processed', eventName: 'image.processed' });
  const product = await createProduct(db, { storeId: store._id, name: 'Image API', family: 'platform' });
  const offer = await createOffer(db, {
    storeId: store._id,
    productId: product._id,
    name: 'Image API monthly',
    type: 'recurring',
    billingCycle: 'monthly',
    prices: [{ currency: 'brl', amount: 4990, default: true }],
  });
  const provider = createTestConnection({ db });
  const usageDeps = { db, temporal: offlineTemporal, taskQueue: 'bench' };
  const subscribe = async (i: number) => {
    const { customer } = await insertCustomer(
      db,
      newCustomerDoc(store._id, { email: `bench${i}@example.com`, name: 'Bench Buyer', phone: '+5511999990000' }, {}),
    );
    const saved = await provider.saveCard({ storeId: store._id, customerId: customer._id, card: { number: '4242424242424242' } });
    if (!saved.ok) throw new Error(saved.message);
    const sub = await recordSubscription({ db }, { store, customer, offer, product, paymentMethod: saved.card, firstPeriodPaid: true });
    await putUsageItem(usageDeps, store._id, sub._id, { meter: meter._id, unit_amount: 0.25, included_units: 1000 });
    return { customer: customer._id, subscription: sub._id };
  };
  const clients: Client[] = [];
  for (let i = 0; i < settings.clients; i++) {
    const { key } = await createApiKey(db, { storeId: store._id, name: `bench ${i}`, scopes: ['read', 'write'] });
    clients.push({ key, ...(await subscribe(i)) });
  }
  return { store, meter, clients, subscribe };
}

async function startApiProcess(mongoUri: string, dbName: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  // BENCH_PROFILE=<dir>: the API process writes a CPU profile there when it stops (test/bench/profile.ts for the in-process benches).
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_PROFILE, 'usage-api')}`] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', 'api/server.ts'], {
    cwd: join(import.meta.dirname, '../..'),
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      MONGODB_URI: mongoUri,
      MONGODB_DB: dbName,
      // Never reached: no threshold is set, so ingestion signals no workflow.
      TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`,
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      // The bench measures ingestion only; the test connection runs in production on purpose here.
      ALLOW_TEST_PAYMENTS: '1',
      SECRETS_KEY: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      const res = await fetch(`${url}/v1/account`).catch(() => null);
      return res !== null;
    },
    { timeoutMs: 60_000, intervalMs: 250, description: 'API process listening' },
  );
  return { url, child };
}

function batchBody(eventName: string, customer: string, client: number, call: number) {
  return JSON.stringify({
    events: Array.from({ length: settings.eventsPerCall }, (_, i) => ({
      event_name: eventName,
      identifier: `c${client}-k${call}-e${i}`,
      payload: { customer_id: customer, value: 1 },
    })),
  });
}

async function postBatch(url: string, key: string, body: string) {
  const started = performance.now();
  const res = await fetch(`${url}/v1/billing/meter_events/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
  });
  const json = (await res.json()) as { accepted?: number; duplicates?: number; errors?: number; error?: { code: string } };
  return {
    ms: performance.now() - started,
    status: res.status,
    accepted: json.accepted ?? 0,
    duplicates: json.duplicates ?? 0,
    errors: json.errors ?? 0,
  };
}

async function ingestion(url: string, eventName: string, clients: Client[], firstCall: number, calls: number) {
  const ms: number[] = [];
  let accepted = 0;
  let duplicates = 0;
  let errors = 0;
  const statuses = new Map<number, number>();
  const started = performance.now();
  await Promise.all(
    clients.map(async (client, c) => {
      for (let k = firstCall; k < firstCall + calls; k++) {
        const r = await postBatch(url, client.key, batchBody(eventName, client.customer, c, k));
        ms.push(r.ms);
        accepted += r.accepted;
        duplicates += r.duplicates;
        errors += r.errors;
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    calls: ms.length,
    events: ms.length * settings.eventsPerCall,
    seconds: round(seconds, 2),
    acceptedPerSec: round(accepted / seconds),
    eventsPerSec: round((ms.length * settings.eventsPerCall) / seconds),
    accepted,
    duplicates,
    errors,
    statuses: Object.fromEntries(statuses),
    callMs: summarizeLatencies(ms),
  };
}

/** The same write path without HTTP (ingestMeterEvents called in this process): what the API adds. */
async function ingestionInProcess(db: Db, storeId: string, eventName: string, clients: Client[], calls: number) {
  const ms: number[] = [];
  let accepted = 0;
  const started = performance.now();
  await Promise.all(
    clients.map(async (client, c) => {
      for (let k = 0; k < calls; k++) {
        const events = Array.from({ length: settings.eventsPerCall }, (_, i) => ({
          event_name: eventName,
          identifier: `inproc-c${c}-k${k}-e${i}`,
          payload: { customer_id: client.customer, value: 1 },
        }));
        const t = performance.now();
        const results = await ingestMeterEvents({ db, temporal: offlineTemporal, taskQueue: 'bench' }, storeId, events, { storedDuplicates: false });
        ms.push(performance.now() - t);
        accepted += results.filter((r) => r.status === 'accepted').length;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { calls: ms.length, accepted, acceptedPerSec: round(accepted / seconds), callMs: summarizeLatencies(ms) };
}

async function recomputeCost(db: Db, env: Awaited<ReturnType<typeof setup>>, ferretPort: number) {
  const { events, seedBatch, runs } = settings.recompute;
  const { customer, subscription } = await env.subscribe(1000);
  const activities = createUsageActivities({ db, temporal: offlineTemporal, taskQueue: 'bench' });
  const now = Math.floor(Date.now() / 1000);
  const prepared = await activities.prepareUsagePeriod({ storeId: env.store._id, subscriptionId: subscription, now });
  if (prepared.kind !== 'open') throw new Error(`no period opened (${prepared.kind})`);
  const period = prepared.period;

  // Seeded through the ingestion write path (journal, insertMany, rollups), without HTTP.
  const seedStarted = performance.now();
  for (let from = 0; from < events; from += seedBatch) {
    const docs: MeterEventDoc[] = Array.from({ length: Math.min(seedBatch, events - from) }, (_, i) => {
      const identifier = `seed-${from + i}`;
      return {
        _id: meterEventId(env.store._id, env.meter._id, identifier),
        store_id: env.store._id,
        meter: env.meter._id,
        event_name: env.meter.event_name,
        identifier,
        customer,
        subscription,
        period_start: period.start,
        value: 1,
        timestamp: period.start + ((from + i) % 3600),
        payload: [
          { k: 'customer_id', v: customer },
          { k: 'value', v: 1 },
        ],
        batch: null,
        livemode: true,
        created: now,
      };
    });
    await writeBatch(db, env.store._id, {
      customers: [customerKey(env.store._id, customer)],
      contributions: docs.map(contributionOf),
      insert: (journalId) => {
        for (const d of docs) d.batch = journalId;
        return insertMeterEvents(db, docs);
      },
    });
    if ((from / seedBatch) % 50 === 49) console.log(`  seeded ${from + seedBatch} events`);
  }
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  const key = periodRollupKey(subscription, period.start, env.meter._id);
  const rollup = (await readRollups(db, [key])).get(key);

  const rollupRuns: number[] = [];
  let heapDelta = 0;
  let amount = 0;
  for (let r = 0; r < runs; r++) {
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const t = performance.now();
    const result = await activities.recomputeUsagePeriod({ storeId: env.store._id, subscriptionId: subscription, periodId: period.id, now });
    rollupRuns.push(performance.now() - t);
    heapDelta = Math.max(heapDelta, process.memoryUsage().heapUsed - heapBefore);
    amount = result.amount_total;
  }

  // The alternative: aggregate the raw events in the database (FerretDB v1 scans the whole collection).
  // FerretDB answers a count by reading the collection: only taken when the aggregate runs anyway.
  const totalEvents = settings.recompute.aggregate ? await meterEventsCollection(db).estimatedDocumentCount() : null;
  const ferretBefore = rssOfListener(ferretPort);
  const heapBefore = process.memoryUsage().heapUsed;
  const t = performance.now();
  const grouped = settings.recompute.aggregate
    ? await meterEventsCollection(db)
        .aggregate([
          { $match: { store_id: env.store._id, subscription, period_start: period.start, meter: env.meter._id } },
          { $group: { _id: null, quantity: { $sum: '$value' } } },
        ])
        .toArray()
    : [];
  const aggregateMs = settings.recompute.aggregate ? performance.now() - t : Number.NaN;
  const ferretAfter = rssOfListener(ferretPort);
  return {
    events,
    seedSeconds: round(seedSeconds, 1),
    seedEventsPerSec: round(events / seedSeconds),
    rollup: { count: rollup?.count ?? 0, sum: rollup?.sum ?? 0 },
    amountTotal: amount,
    viaRollups: { ms: summarizeLatencies(rollupRuns), nodeHeapDeltaMiB: mb(heapDelta), documentsRead: 'one rollup per meter + items + meters' },
    viaAggregate: {
      ms: round(aggregateMs),
      quantity: grouped[0]?.quantity ?? null,
      eventsInCollection: totalEvents,
      nodeHeapDeltaMiB: mb(Math.max(0, process.memoryUsage().heapUsed - heapBefore)),
      ferretRssBeforeMiB: ferretBefore === null ? null : mb(ferretBefore),
      ferretRssAfterMiB: ferretAfter === null ? null : mb(ferretAfter),
    },
  };
}

function baselineInsertRate(): number | null {
  try {
    const baseline = JSON.parse(readFileSync(join(import.meta.dirname, 'results', 'baseline.json'), 'utf8')) as {
      insertMany?: { docsPerSec?: number };
    };
    return baseline.insertMany?.docsPerSec ?? null;
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  const machineBefore = machineInfo();
  if (machineBefore.loadAverage1m > machineBefore.cpus / 2) {
    console.log(`warning: load average ${machineBefore.loadAverage1m} on ${machineBefore.cpus} CPUs before starting; figures will be low`);
  }
  const workDir = mkdtempSync(join(tmpdir(), 'bench-usage-'));
  const ferret = await startFerretDb({ dataDir: join(workDir, 'ferretdb') });
  const mongo = await MongoClient.connect(ferret.uri, { maxPoolSize: 50 });
  const dbName = 'bench_usage';
  const db = mongo.db(dbName);
  let api: { url: string; child: ChildProcess } | null = null;
  try {
    await ensureIndexes(db);
    console.log('raw insertMany (yardstick)...');
    const raw = await rawInsertMany(db);
    const env = await setup(db);
    api = await startApiProcess(ferret.uri, dbName);

    console.log('ingestion...');
    await ingestion(api.url, env.meter.event_name, env.clients, 10_000, settings.warmupCalls);
    const ingest = await ingestion(api.url, env.meter.event_name, env.clients, 0, settings.callsPerClient);
    console.log('replay...');
    const replayCalls = Math.min(settings.replayCallsPerClient, settings.callsPerClient);
    const replay = await ingestion(api.url, env.meter.event_name, env.clients, 0, replayCalls);

    // Every distinct event counted once: the period rollups of the 8 subscriptions.
    const states = await Promise.all(
      env.clients.map((c) =>
        collections(db)
          .db.collection('subscription_usage')
          .findOne({ _id: c.subscription as never }),
      ),
    );
    const keys = env.clients.map((c, i) =>
      periodRollupKey(c.subscription, (states[i] as unknown as { next_start: number }).next_start, env.meter._id),
    );
    const rollups = await readRollups(db, keys);
    const counted = [...rollups.values()].reduce((sum, r) => sum + r.count, 0);
    const distinct = settings.clients * (settings.callsPerClient + settings.warmupCalls) * settings.eventsPerCall;
    api.child.kill('SIGTERM');
    api = null;
    console.log('ingestion write path in-process...');
    const inProcess = await ingestionInProcess(db, env.store._id, env.meter.event_name, env.clients, Math.min(30, settings.callsPerClient));

    console.log(`recompute with ${settings.recompute.events} events...`);
    const recompute = await recomputeCost(db, env, ferret.port);

    const baseline = baselineInsertRate();
    const results = {
      benchmark: 'usage',
      takenAt: new Date().toISOString(),
      machine: machineBefore,
      loadAverage1mAfter: machineInfo().loadAverage1m,
      settings,
      rawInsertMany: raw,
      baselineJsonInsertManyDocsPerSec: baseline,
      ingestion: {
        ...ingest,
        ofRawSequentialInsert: round(ingest.acceptedPerSec / raw.sequential.docsPerSec, 2),
        ofRawConcurrentInsert: round(ingest.acceptedPerSec / raw.concurrent.docsPerSec, 2),
      },
      ingestionInProcess: { ...inProcess, ofRawConcurrentInsert: round(inProcess.acceptedPerSec / raw.concurrent.docsPerSec, 2) },
      replay: { ...replay, expectedDuplicates: settings.clients * replayCalls * settings.eventsPerCall },
      exactness: { distinctEventsSent: distinct, countedInRollups: counted },
      recompute,
    };
    const file = saveResults(process.env.USAGE_BENCH_RESULTS ?? 'usage', results);

    printTable('Meter event ingestion (FerretDB v1, 8 clients, 100 events per /batch call)', [
      {
        run: 'raw insertMany, 1 writer',
        'events/s': raw.sequential.docsPerSec,
        'p50 ms': raw.sequential.batchMs.p50,
        'p99 ms': raw.sequential.batchMs.p99,
        calls: settings.rawInsert.batches,
        note: '',
      },
      {
        run: `raw insertMany, ${settings.rawInsert.concurrentWriters} writers`,
        'events/s': raw.concurrent.docsPerSec,
        'p50 ms': raw.concurrent.batchMs.p50,
        'p99 ms': raw.concurrent.batchMs.p99,
        calls: settings.rawInsert.batches,
        note: '',
      },
      { run: 'baseline.json insertMany', 'events/s': baseline ?? 'n/a', 'p50 ms': '', 'p99 ms': '', calls: '', note: 'other run' },
      {
        run: 'POST /batch (new events)',
        'events/s': ingest.acceptedPerSec,
        'p50 ms': ingest.callMs.p50,
        'p99 ms': ingest.callMs.p99,
        calls: ingest.calls,
        note: `${round(100 * results.ingestion.ofRawSequentialInsert)}% of raw 1-writer`,
      },
      {
        run: 'ingestMeterEvents in-process',
        'events/s': inProcess.acceptedPerSec,
        'p50 ms': inProcess.callMs.p50,
        'p99 ms': inProcess.callMs.p99,
        calls: inProcess.calls,
        note: `${round(100 * results.ingestionInProcess.ofRawConcurrentInsert)}% of raw 8-writer (no HTTP)`,
      },
      {
        run: 'POST /batch (replayed)',
        'events/s': replay.eventsPerSec,
        'p50 ms': replay.callMs.p50,
        'p99 ms': replay.callMs.p99,
        calls: replay.calls,
        note: `${replay.duplicates}/${results.replay.expectedDuplicates} refused as duplicates, ${replay.accepted} accepted`,
      },
    ]);
    printTable('Exactness', [{ 'distinct events sent': distinct, 'counted in rollups': counted }]);
    printTable(`Period recompute, one subscription with ${recompute.events} events`, [
      {
        how: 'rollups (the workflow)',
        'p50 ms': recompute.viaRollups.ms.p50,
        'p99 ms': recompute.viaRollups.ms.p99,
        'node heap MiB': recompute.viaRollups.nodeHeapDeltaMiB,
        'ferret RSS MiB': '',
        quantity: recompute.rollup.sum,
      },
      {
        how: '$match/$group on events',
        'p50 ms': recompute.viaAggregate.ms,
        'p99 ms': '',
        'node heap MiB': recompute.viaAggregate.nodeHeapDeltaMiB,
        'ferret RSS MiB': `${recompute.viaAggregate.ferretRssBeforeMiB} -> ${recompute.viaAggregate.ferretRssAfterMiB}`,
        quantity: recompute.viaAggregate.quantity ?? 'n/a',
      },
    ]);
    console.log(`\nseeded ${recompute.events} events in ${recompute.seedSeconds} s (${recompute.seedEventsPerSec}/s); results in ${file}`);
  } finally {
    api?.child.kill('SIGTERM');
    await mongo.close();
    await ferret.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
