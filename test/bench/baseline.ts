// `npm run bench:baseline`: what the bare stack does on this machine before any billing code runs,
// the yardstick later benchmarks are read against. (a) a bare Fastify findOne-by-_id route on FerretDB
// under autocannon, (b) raw insertMany into a uniquely indexed collection, (c) bare Temporal workflow
// starts and completions (no-op and one-activity) on the dev server with a local worker.
// Starts its own servers on free ports with temp data; prints a table, writes results/baseline.json.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import Fastify from 'fastify';
import { MongoClient, type Db } from 'mongodb';
import { startFerretDb, startTemporalDevServer } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { machineInfo, printTable, round, runAutocannon, runWithConcurrency, saveResults, summarizeLatencies, type HttpLoadSummary } from './lib';

const settings = {
  findOne: { seededDocs: 10_000, connections: 50, durationSeconds: 10, distinctPaths: 1_000 },
  insertMany: { batches: 200, batchSize: 100 },
  workflows: { count: 500, concurrency: 20, warmup: 20 },
};

function itemId(n: number): string {
  return `item_${String(n).padStart(6, '0')}`;
}

async function benchFindOne(db: Db): Promise<HttpLoadSummary & { seedSeconds: number }> {
  const { seededDocs, connections, durationSeconds, distinctPaths } = settings.findOne;
  const items = db.collection<{ _id: string; name: string; amount: number; currency: string; created: number }>('items');
  const seedStarted = performance.now();
  for (let from = 0; from < seededDocs; from += 1_000) {
    const docs = Array.from({ length: Math.min(1_000, seededDocs - from) }, (_, i) => ({
      _id: itemId(from + i),
      name: `Item ${from + i}`,
      amount: 1_000 + ((from + i) % 500),
      currency: 'brl',
      created: Date.now(),
    }));
    await items.insertMany(docs, { ordered: false });
  }
  const seedSeconds = round((performance.now() - seedStarted) / 1000, 2);

  const app = Fastify({ logger: false });
  app.get<{ Params: { id: string } }>('/items/:id', async (request, reply) => {
    const item = await items.findOne({ _id: request.params.id });
    if (!item) return reply.code(404).send({ error: 'not found' });
    return item;
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    // A fixed spread of random ids, cycled by every connection: reads miss FerretDB's hot pages too.
    const paths = Array.from({ length: distinctPaths }, () => `/items/${itemId(Math.floor(Math.random() * seededDocs))}`);
    // One worker thread generates the load so it does not share the route's event loop.
    const load = await runAutocannon({ url, connections, durationSeconds, paths, workers: 1 });
    return { ...load, seedSeconds };
  } finally {
    await app.close();
  }
}

async function benchInsertMany(db: Db) {
  const { batches, batchSize } = settings.insertMany;
  const events = db.collection('events');
  await events.createIndex({ store_id: 1, key: 1 }, { unique: true });
  const batchMs: number[] = [];
  const started = performance.now();
  for (let b = 0; b < batches; b++) {
    const docs = Array.from({ length: batchSize }, (_, i) => ({
      store_id: 'acct_bench',
      key: `evt_${b}_${i}_${randomUUID()}`,
      type: 'order.paid',
      created: Date.now(),
      data: { order: `ord_${b}_${i}`, amount: 19_700, currency: 'brl' },
    }));
    const batchStarted = performance.now();
    await events.insertMany(docs);
    batchMs.push(performance.now() - batchStarted);
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    docs: batches * batchSize,
    batches,
    batchSize,
    docsPerSec: round((batches * batchSize) / seconds),
    batchLatencyMs: summarizeLatencies(batchMs),
  };
}

type WorkflowLoad = 'open' | 'closed';

/**
 * `closed`: each of `concurrency` lanes starts a workflow and awaits its result before the next, so
 * latency is start->result without backlog. `open`: lanes only await the start call and results are
 * collected alongside, so starts/s is the server's start rate and the gap to completions/s is backlog.
 */
async function benchWorkflows(client: Client, taskQueue: string, workflowType: 'noopWorkflow' | 'pingWorkflow', load: WorkflowLoad) {
  const { count, concurrency, warmup } = settings.workflows;
  const run = async (total: number) => {
    const startCallMs: number[] = [];
    const startToResultMs: number[] = [];
    const results: Array<Promise<void>> = [];
    let lastStarted = 0;
    const began = performance.now();
    await runWithConcurrency(total, concurrency, async (i) => {
      const callStarted = performance.now();
      const handle = await client.workflow.start(workflowType, { taskQueue, workflowId: `bench-${workflowType}-${randomUUID()}-${i}` });
      lastStarted = performance.now();
      startCallMs.push(lastStarted - callStarted);
      const result = handle.result().then(() => void startToResultMs.push(performance.now() - callStarted));
      if (load === 'closed') await result;
      else results.push(result);
    });
    await Promise.all(results);
    const finished = performance.now();
    return {
      load,
      workflows: total,
      concurrency,
      startsPerSec: round(total / ((lastStarted - began) / 1000)),
      completionsPerSec: round(total / ((finished - began) / 1000)),
      startCallMs: summarizeLatencies(startCallMs),
      startToResultMs: summarizeLatencies(startToResultMs),
    };
  };
  await run(warmup); // creates the workflow isolates and caches outside the measurement
  return run(count);
}

async function main(): Promise<void> {
  // Bench output is the table; SDK chatter goes only to stderr at WARN.
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} } },
  });
  const machineBefore = machineInfo();
  if (machineBefore.loadAverage1m > machineBefore.cpus / 2) {
    console.log(`warning: load average ${machineBefore.loadAverage1m} on ${machineBefore.cpus} CPUs before starting; figures will be low`);
  }
  const workDir = mkdtempSync(join(tmpdir(), 'billing-bench-'));
  console.log(`starting FerretDB and the Temporal dev server (SQLite, WAL) in ${workDir}`);
  const [ferret, temporal] = await Promise.all([
    startFerretDb({ dataDir: join(workDir, 'ferretdb') }),
    startTemporalDevServer({ dbFile: join(workDir, 'temporal.db'), headless: true }),
  ]);
  const mongo = await MongoClient.connect(ferret.uri);
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const connection = await Connection.connect({ address: temporal.address });
  try {
    console.log('(a) Fastify findOne by _id on FerretDB under autocannon...');
    const findOne = await benchFindOne(mongo.db('bench_find'));
    console.log('(b) insertMany into a collection with a unique index...');
    const insertMany = await benchInsertMany(mongo.db('bench_insert'));

    console.log('(c) Temporal workflow starts and completions on the dev server...');
    const client = new Client({ connection });
    const taskQueue = `bench-${randomUUID()}`;
    const worker = await createBillingWorker({ connection: nativeConnection, taskQueue, db: mongo.db('bench_worker'), temporal: client });
    const workflows = await worker.runUntil(async () =>
      [
        await benchWorkflows(client, taskQueue, 'noopWorkflow', 'closed'),
        await benchWorkflows(client, taskQueue, 'pingWorkflow', 'closed'),
        await benchWorkflows(client, taskQueue, 'noopWorkflow', 'open'),
        await benchWorkflows(client, taskQueue, 'pingWorkflow', 'open'),
      ].map((figures, i) => ({ workflow: i % 2 === 0 ? 'noopWorkflow' : 'pingWorkflow', ...figures })),
    );

    printTable('(a) GET /items/:id -> findOne by _id (FerretDB/SQLite, 10k docs)', [
      {
        connections: findOne.connections,
        seconds: findOne.durationSeconds,
        'req/s': findOne.requestsPerSec,
        'p50 ms': findOne.latencyMs.p50,
        'p99 ms': findOne.latencyMs.p99,
        requests: findOne.requests,
        'non-2xx': findOne.non2xx,
        errors: findOne.errors,
      },
    ]);
    printTable('(b) insertMany, unique index (store_id, key)', [
      {
        docs: insertMany.docs,
        'batch size': insertMany.batchSize,
        'docs/s': insertMany.docsPerSec,
        'batch p50 ms': insertMany.batchLatencyMs.p50,
        'batch p99 ms': insertMany.batchLatencyMs.p99,
      },
    ]);
    printTable(
      `(c) Temporal dev server (SQLite, WAL), ${settings.workflows.count} workflows each, ${settings.workflows.concurrency} lanes (closed: await result per lane; open: starts only)`,
      workflows.map((w) => ({
        workflow: w.workflow,
        load: w.load,
        'starts/s': w.startsPerSec,
        'completions/s': w.completionsPerSec,
        'start p50 ms': w.startCallMs.p50,
        'start p99 ms': w.startCallMs.p99,
        'start->result p50 ms': w.startToResultMs.p50,
        'start->result p99 ms': w.startToResultMs.p99,
      })),
    );

    const file = saveResults('baseline', {
      benchmark: 'baseline',
      takenAt: new Date().toISOString(),
      machine: machineBefore,
      loadAverage1mAfter: machineInfo().loadAverage1m,
      settings,
      findOne,
      insertMany,
      workflows,
    });
    console.log(`\nresults written to ${file}`);
  } finally {
    await connection.close();
    await nativeConnection.close();
    await mongo.close();
    await Promise.all([temporal.stop(), ferret.stop()]);
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error('baseline benchmark failed:', error);
  process.exit(1);
});
