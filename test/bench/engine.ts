// `npm run bench:engine`: raw throughput of the local engine (FerretDB on SQLite behind the relay of
// temporal-dev/ferretdb/relay.go, which serialises update/findAndModify/delete per collection), from
// 10 MongoClients (as 10 processes would) with 5 operations in flight each:
// (a) 2,000 updateOne $inc on one document, (b) 2,000 updateOne $inc spread over 100 documents,
// (c) 2,000 insertOne, (d) 2,000 findOne by _id, (e) 1,000 conditional updateOne {_id, status: 'pending'}
// $inc spread over a collection of 5,000 documents (the relay's fast path for filters that pin one _id),
// (f) 2,000 findOne {_id, store_id} over a collection of 5,000 documents (the relay's find-to-aggregate rewrite),
// (g) 1,000 updateOne {_id, status: 'done'} over the same 5,000 jobs, none of which is done (the check alone, no write),
// (h) 1,000 findOneAndUpdate {_id, store_id, status: {$in: [...]}} $inc, returning the document after, over a collection
// of 5,000 documents (the webhook delivery claim's shape).
// Each prints ops/s and p50/p99 ms, and the updates also how many increments the document(s) kept
// (fewer than ops = lost updates).
// Starts its own FerretDB (or measures the server at MONGODB_URI, e.g. another build or a real MongoDB);
// prints a table, writes results/engine.json (ENGINE_BENCH_RESULTS=<name> for another file). Measures
// only; asserts nothing.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { MongoClient, type Db } from 'mongodb';
import { startFerretDb } from '../../temporal-dev/servers';
import { machineInfo, printTable, round, runWithConcurrency, saveResults, summarizeLatencies, type LatencySummary } from './lib';

const settings = { clients: 10, inFlightPerClient: 5, ops: 2_000, docs: 100, warmupOps: 200, conditionalOps: 1_000, conditionalDocs: 5_000 };

interface Counter {
  _id: string;
  n: number;
}

interface Job extends Counter {
  status: 'pending' | 'done';
}

interface Scoped {
  _id: string;
  store_id: string;
  n: number;
}

interface Claim extends Scoped {
  status: 'pending' | 'failed' | 'delivering';
}

interface Figures {
  workload: string;
  ops: number;
  opsPerSec: number;
  latencyMs: LatencySummary;
  /** For the updates: the increments the documents kept, out of `ops`. */
  kept?: number;
}

const docId = (i: number) => `doc_${String(i % settings.docs).padStart(3, '0')}`;

/** Runs `ops` calls of `op`, lane i on client i % clients, and times each one. */
async function measure(dbs: Db[], ops: number, op: (db: Db, i: number) => Promise<unknown>) {
  const latencies: number[] = [];
  const started = performance.now();
  await runWithConcurrency(ops, settings.clients * settings.inFlightPerClient, async (i) => {
    const opStarted = performance.now();
    await op(dbs[i % settings.clients], i);
    latencies.push(performance.now() - opStarted);
  });
  const seconds = (performance.now() - started) / 1000;
  return { ops, opsPerSec: round(ops / seconds), latencyMs: summarizeLatencies(latencies) };
}

async function keptIncrements(db: Db, collection: string): Promise<number> {
  const docs = await db.collection<Counter>(collection).find({}).toArray();
  return docs.reduce((sum, doc) => sum + doc.n, 0);
}

async function run(dbs: Db[]): Promise<Figures[]> {
  const { ops, docs, warmupOps, conditionalOps, conditionalDocs } = settings;
  const seed = (collection: string, count: number) =>
    dbs[0].collection<Counter>(collection).insertMany(Array.from({ length: count }, (_, i) => ({ _id: docId(i), n: 0 })));
  await Promise.all([seed('one', 1), seed('spread', docs), seed('reads', docs)]);
  const jobId = (i: number) => `job_${String(i % conditionalDocs).padStart(4, '0')}`;
  await dbs[0]
    .collection<Job>('jobs')
    .insertMany(Array.from({ length: conditionalDocs }, (_, i) => ({ _id: jobId(i), status: 'pending' as const, n: 0 })));
  await dbs[0]
    .collection<Scoped>('scoped')
    .insertMany(Array.from({ length: conditionalDocs }, (_, i) => ({ _id: jobId(i), store_id: 'store_1', n: i })));
  await dbs[0]
    .collection<Claim>('claims')
    .insertMany(Array.from({ length: conditionalDocs }, (_, i) => ({ _id: jobId(i), store_id: 'store_1', status: 'pending' as const, n: 0 })));

  // Fills every client's pool and warms FerretDB's metadata caches outside the measurement.
  await measure(dbs, warmupOps, (db, i) => db.collection<Counter>('reads').findOne({ _id: docId(i) }));

  const one = await measure(dbs, ops, (db) => db.collection<Counter>('one').updateOne({ _id: docId(0) }, { $inc: { n: 1 } }));
  const spread = await measure(dbs, ops, (db, i) => db.collection<Counter>('spread').updateOne({ _id: docId(i) }, { $inc: { n: 1 } }));
  const inserts = await measure(dbs, ops, (db, i) => db.collection<Counter>('inserts').insertOne({ _id: `ins_${i}`, n: 0 }));
  const reads = await measure(dbs, ops, (db, i) => db.collection<Counter>('reads').findOne({ _id: docId(i) }));
  // Every document is 'pending', so each update matches; the ids are spread over the whole collection.
  const conditional = await measure(dbs, conditionalOps, (db, i) =>
    db.collection<Job>('jobs').updateOne({ _id: jobId(i * 7), status: 'pending' }, { $inc: { n: 1 } }),
  );
  const conditionalKept = await keptIncrements(dbs[0], 'jobs');
  const scoped = await measure(dbs, ops, async (db, i) => {
    const doc = await db.collection<Scoped>('scoped').findOne({ _id: jobId(i * 7), store_id: 'store_1' });
    if (!doc) throw new Error(`findOne {_id, store_id} found nothing for ${jobId(i * 7)}`);
  });
  // No job is 'done': each update is decided by the relay's check and answered without a write.
  const unmatched = await measure(dbs, conditionalOps, (db, i) =>
    db.collection<Job>('jobs').updateOne({ _id: jobId(i * 7), status: 'done' }, { $inc: { n: 1 } }),
  );
  const claims = await measure(dbs, conditionalOps, async (db, i) => {
    const filter = { _id: jobId(i * 7), store_id: 'store_1', status: { $in: ['pending' as const, 'failed' as const] } };
    const doc = await db.collection<Claim>('claims').findOneAndUpdate(filter, { $inc: { n: 1 } }, { returnDocument: 'after' });
    if (!doc) throw new Error(`findOneAndUpdate {_id, store_id, status} matched nothing for ${jobId(i * 7)}`);
  });

  return [
    { workload: 'updateOne $inc, one doc', ...one, kept: await keptIncrements(dbs[0], 'one') },
    { workload: `updateOne $inc, ${docs} docs`, ...spread, kept: await keptIncrements(dbs[0], 'spread') },
    { workload: 'insertOne', ...inserts },
    { workload: 'findOne by _id', ...reads },
    {
      workload: `updateOne {_id, status} $inc, ${conditionalDocs} docs`,
      ...conditional,
      kept: conditionalKept,
    },
    { workload: `findOne {_id, store_id} on ${conditionalDocs} docs`, ...scoped },
    {
      workload: `updateOne {_id, status} matching none, ${conditionalDocs} docs`,
      ...unmatched,
      kept: (await keptIncrements(dbs[0], 'jobs')) - conditionalKept,
    },
    { workload: `findOneAndUpdate {_id, store_id, status $in}, ${conditionalDocs} docs`, ...claims, kept: await keptIncrements(dbs[0], 'claims') },
  ];
}

async function main(): Promise<void> {
  const machineBefore = machineInfo();
  if (machineBefore.loadAverage1m > machineBefore.cpus / 2) {
    console.log(`warning: load average ${machineBefore.loadAverage1m} on ${machineBefore.cpus} CPUs before starting; figures will be low`);
  }
  const external = process.env.MONGODB_URI;
  const workDir = external ? undefined : mkdtempSync(join(tmpdir(), 'billing-bench-engine-'));
  console.log(workDir ? `starting FerretDB (SQLite, WAL) in ${workDir}` : `measuring the server at ${external}`);
  const ferret = workDir ? await startFerretDb({ dataDir: join(workDir, 'ferretdb') }) : undefined;
  const uri = external ?? ferret!.uri;
  const clients = await Promise.all(Array.from({ length: settings.clients }, () => MongoClient.connect(uri)));
  const dbName = `bench_engine_${randomUUID().slice(0, 8)}`;
  const dbs = clients.map((client) => client.db(dbName));
  try {
    const figures = await run(dbs);

    printTable(
      `from ${settings.clients} clients, ${settings.inFlightPerClient} in flight per client`,
      figures.map((f) => ({
        workload: f.workload,
        ops: f.ops,
        'ops/s': f.opsPerSec,
        'p50 ms': f.latencyMs.p50,
        'p99 ms': f.latencyMs.p99,
        'increments kept': f.kept === undefined ? '' : `${f.kept}/${f.ops}`,
      })),
    );

    const file = saveResults(process.env.ENGINE_BENCH_RESULTS ?? 'engine', {
      benchmark: 'engine',
      takenAt: new Date().toISOString(),
      server: external ? 'MONGODB_URI' : 'FerretDB from .tools/bin',
      machine: machineBefore,
      loadAverage1mAfter: machineInfo().loadAverage1m,
      settings,
      figures,
    });
    console.log(`\nresults written to ${file}`);
  } finally {
    await dbs[0].dropDatabase().catch(() => undefined);
    await Promise.all(clients.map((client) => client.close()));
    await ferret?.stop();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error('engine benchmark failed:', error);
  process.exit(1);
});
