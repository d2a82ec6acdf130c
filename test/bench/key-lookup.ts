// `npm run bench:keys`: a lookup by a unique key (store/subscription-charges.ts findChargeByKey, a findOne on {store_id, key})
// on the local engine as the collection grows, with the relay's key index (temporal-dev/ferretdb/internal/paths/key.go) and without
// it (FERRETDB_RELAY_KEYS=off: FerretDB's full scan), and what that index costs the writes: the same charges inserted
// into both engines, 1,000 at a time and one at a time (and, after the last size, rounds of 1,000 alternating between the
// engines), and meter events 100 at a time (a 3-field unique key nobody looks up: no index of ours on either engine).
// At each size (KEYS_SIZES, default 1,000, 10,000 and 100,000 charges in the store; another store holds a tenth as many)
// it times sequential lookups of present and absent keys on each engine in turn. Prints and writes results/key-lookup.json.
// Measures only: another process on the machine moves every figure (the load average is printed at the start and end).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { MongoClient, type Db } from 'mongodb';
import { ensureIndexes } from '../../store/indexes';
import { chargesCollection, findChargeByKey, type SubscriptionChargeDoc } from '../../store/subscription-charges';
import { insertMeterEvents, type MeterEventDoc } from '../../store/usage';
import { startFerretDb, type RunningFerretDb } from '../../temporal-dev/servers';
import { waitFor } from '../../temporal-dev/wait';
import { machineInfo, printTable, round, saveResults, summarizeLatencies, type LatencySummary } from './lib';

const sizes = (process.env.KEYS_SIZES ?? '1000,10000,100000').split(',').map(Number);
/** Lookups per engine and size; a full scan at 100,000 charges costs about a second, so fewer there (bounded run time). */
const lookups = (size: number, fast: boolean) => (fast ? 400 : size >= 100_000 ? 10 : size >= 10_000 ? 40 : 200);
const seedBatch = 1_000;
const singleInserts = 300;
const meterBatches = 30;
/** Alternating insertMany rounds per engine for the write cost, after the largest size. */
const costRounds = 6;

interface Engine {
  name: 'key index' | 'off';
  ferret: RunningFerretDb;
  mongo: MongoClient;
  db: Db;
}

async function startEngine(name: Engine['name'], dir: string): Promise<Engine> {
  // The relay reads FERRETDB_RELAY_KEYS from the environment it inherits.
  const saved = process.env.FERRETDB_RELAY_KEYS;
  process.env.FERRETDB_RELAY_KEYS = name === 'off' ? 'off' : 'on';
  try {
    const ferret = await startFerretDb({ dataDir: join(dir, name === 'off' ? 'off' : 'keys') });
    const mongo = await MongoClient.connect(ferret.uri, { maxPoolSize: 4 });
    const db = mongo.db('bench_keys');
    await ensureIndexes(db);
    return { name, ferret, mongo, db };
  } finally {
    if (saved === undefined) delete process.env.FERRETDB_RELAY_KEYS;
    else process.env.FERRETDB_RELAY_KEYS = saved;
  }
}

function charge(store: string, n: number): SubscriptionChargeDoc {
  return {
    _id: `sch_${store}_${n}`,
    store_id: store,
    key: `idem-${n.toString(36)}-${(n * 7919).toString(16)}`,
    fingerprint: 'f'.repeat(64),
    status: 'succeeded',
    outcome: 'approved',
    subscription: `sub_${n % 50}`,
    customer: `cus_${n % 50}`,
    amount: 1990,
    currency: 'brl',
    description: 'Extra seats',
    lines: [{ description: 'Extra seats', quantity: 1, unit_amount: 1990, amount: 1990 }],
    order: `ord_${n}`,
    transaction: `tr_${n}`,
    failure_code: null,
    failure_message: null,
    source: 'api',
    billing_reason: 'one_off',
    metadata: {},
    livemode: false,
    created: 1_800_000_000 + n,
    settled_at: 1_800_000_000 + n,
    request_id: `req_${n}`,
    idempotency_key: `idem-${n}`,
  } as unknown as SubscriptionChargeDoc;
}

/** Inserts charges n = from..to-1 of the store, 1,000 at a time; returns documents per second. */
async function seed(db: Db, store: string, from: number, to: number): Promise<number> {
  const started = performance.now();
  for (let n = from; n < to; n += seedBatch) {
    const docs = Array.from({ length: Math.min(seedBatch, to - n) }, (_, i) => charge(store, n + i));
    await chargesCollection(db).insertMany(docs, { ordered: false });
  }
  return (to - from) / ((performance.now() - started) / 1000);
}

async function timed(count: number, call: (i: number) => Promise<unknown>): Promise<LatencySummary> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await call(i);
    ms.push(performance.now() - started);
  }
  return summarizeLatencies(ms);
}

/** Lookups of present keys spread over the store, every fifth one absent; each present one must be found. */
async function lookupAt(engine: Engine, size: number): Promise<LatencySummary> {
  return timed(lookups(size, engine.name !== 'off'), async (i) => {
    const n = (i * 7919) % size;
    const absent = i % 5 === 4;
    const found = await findChargeByKey(engine.db, 'st_a', absent ? `absent-${i}` : charge('st_a', n).key);
    if ((found === null) !== absent) throw new Error(`${engine.name}: lookup ${i} found ${found?._id ?? 'nothing'}`);
  });
}

/** Write cost: one-at-a-time charge inserts and 100-event meter batches per second, after the seed. */
async function writesAt(engine: Engine, size: number): Promise<{ singleInsertsPerS: number; meterEventsPerS: number }> {
  let started = performance.now();
  for (let i = 0; i < singleInserts; i++) await chargesCollection(engine.db).insertOne(charge('st_w', size * 10 + i));
  const singleInsertsPerS = singleInserts / ((performance.now() - started) / 1000);
  started = performance.now();
  for (let b = 0; b < meterBatches; b++) {
    const events = Array.from({ length: 100 }, (_, e): MeterEventDoc => ({
      _id: `mev_${size}_${b}_${e}`,
      store_id: 'st_a',
      meter: 'mtr_1',
      event_name: 'image.processed',
      identifier: `id-${size}-${b}-${e}`,
      customer: `cus_${e}`,
      subscription: null,
      period_start: null,
      value: 1,
      timestamp: 1_800_000_000 + b,
      payload: [{ k: 'value', v: 1 }],
      batch: null,
      livemode: false,
      created: 1_800_000_000 + b,
    }));
    await insertMeterEvents(engine.db, events);
  }
  return { singleInsertsPerS, meterEventsPerS: (meterBatches * 100) / ((performance.now() - started) / 1000) };
}

/** Waits until the relay answers the lookup from its index (its indexer makes the index a moment after the collection). */
async function untilIndexed(engine: Engine): Promise<void> {
  await waitFor(
    async () => {
      const started = performance.now();
      await findChargeByKey(engine.db, 'st_a', charge('st_a', 1).key);
      return performance.now() - started < 5;
    },
    { timeoutMs: 30_000, intervalMs: 200, description: 'the relay key index' },
  );
}

/** Charges inserted 1,000 at a time per second, in rounds alternating between the engines (so load falls on both). */
async function writeCost(engines: Engine[]): Promise<Record<string, number[]>> {
  const rates: Record<string, number[]> = {};
  for (let r = 0; r < costRounds; r++) {
    for (const engine of r % 2 === 0 ? engines : [...engines].reverse()) {
      (rates[engine.name] ??= []).push(round(await seed(engine.db, 'st_c', r * seedBatch, (r + 1) * seedBatch)));
    }
  }
  return rates;
}

interface Row {
  size: number;
  engine: string;
  seedDocsPerS: number;
  lookup: LatencySummary;
  singleInsertsPerS: number;
  meterEventsPerS: number;
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(`load average ${machine.loadAverage1m} on ${machine.cpus} CPUs at start; figures are relative`);
  const workDir = mkdtempSync(join(tmpdir(), 'billing-bench-keys-'));
  const engines = [await startEngine('key index', workDir), await startEngine('off', workDir)];
  const rows: Row[] = [];
  let cost: Record<string, number[]> | undefined;
  try {
    let have = 0;
    for (const size of sizes) {
      // Seeded in turn on each engine (alternating which goes first), so load on the machine falls on both.
      const order = rows.length % 4 === 0 ? engines : [...engines].reverse();
      const seeded = new Map<string, number>();
      for (const engine of order) {
        seeded.set(engine.name, await seed(engine.db, 'st_a', have, size));
        await seed(engine.db, 'st_b', Math.floor(have / 10), Math.floor(size / 10));
      }
      have = size;
      await untilIndexed(engines[0]!);
      console.log(`${size} charges in the store; measuring`);
      for (const engine of order) {
        const lookup = await lookupAt(engine, size);
        rows.push({ size, engine: engine.name, seedDocsPerS: round(seeded.get(engine.name)!), lookup, ...(await writesAt(engine, size)) });
      }
    }
    cost = await writeCost(engines);
  } finally {
    for (const engine of engines) {
      await engine.mongo.close();
      await engine.ferret.stop();
    }
    rmSync(workDir, { recursive: true, force: true });
  }
  printTable(
    'findChargeByKey one at a time (p50/p99 ms); inserts per second into the same collections',
    rows.map((r) => ({
      size: r.size,
      engine: r.engine,
      'p50 ms': r.lookup.p50,
      'p99 ms': r.lookup.p99,
      'seed docs/s': Math.round(r.seedDocsPerS),
      'insertOne/s': Math.round(r.singleInsertsPerS),
      'meter events/s': Math.round(r.meterEventsPerS),
    })),
  );
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  printTable(
    `write cost: charges inserted 1,000 at a time per second, ${costRounds} rounds alternating, at the largest size`,
    Object.entries(cost ?? {}).map(([engine, rates]) => ({ engine, median: Math.round(median(rates)), rounds: rates.map(Math.round).join(' ') })),
  );
  const file = saveResults(process.env.KEYS_BENCH_RESULTS ?? 'key-lookup', {
    benchmark: 'key-lookup',
    takenAt: new Date().toISOString(),
    machine,
    loadAverage1mAfter: machineInfo().loadAverage1m,
    rows,
    writeCostDocsPerS: cost,
  });
  console.log(`\nresults written to ${file}`);
}

main().catch((error: unknown) => {
  console.error('key lookup benchmark failed:', error);
  process.exit(1);
});
