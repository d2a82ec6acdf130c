// `npm run bench:charges`: POST /v1/subscriptions/{id}/charges on the approved path. (a) the
// yardstick: bare start-and-wait of a one-activity workflow (pingWorkflow) on this dev server;
// (b) charges with distinct Idempotency-Keys at 20 connections: charges/s and p50/p99 from request
// to 201 (workflow, provider charge, order and charge written); (c) 50 concurrent requests with one
// key: exactly one provider charge and one order, the other 49 answered 409 idempotency_key_in_use
// while it runs (or the same charge once done), and the time until all 50 have their answer. Goals (issue): p50 within 2x of (a) and under 100 ms,
// p99 under 300 ms. (d) the Stripe connection's own overhead per charge against stripe-mock
// (stripe-adapter.ts). (a2) the chain yardstick: the charge's structure with no business code
// (chain-workflows.ts: update-with-start of a front workflow whose activity updates a back workflow whose
// handler runs a no-op activity, local as the subscription's charge now is, and regular as it was). Starts
// its own FerretDB, Temporal dev server and stripe-mock; prints tables, writes results/charges.json.
// Measures only; asserts nothing.
import { randomUUID } from 'node:crypto';
import { merchantChargeKey } from '../../domain/charges';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { DefaultLogger, NativeConnection, Runtime, Worker, makeTelemetryFilterString } from '@temporalio/worker';
import { MongoClient } from 'mongodb';
import { freePort, startFerretDb, startTemporalDevServer } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { ActivityTimings } from '../../worker/activity-interceptors';
import { buildApp } from '../../api/app';
import { createApiMetrics } from '../../api/metrics';
import { installBusinessMetrics } from '../../services/operations/business-metrics';
import { coreBusinessMetrics } from '../../worker/metrics';
import { loadApiConfig } from '../../api/config';
import { ensureIndexes } from '../../store/indexes';
import { createApiKey, createStore } from '../../store/stores';
import { createOffer, createProduct } from '../../store/catalog';
import { insertCustomer, newCustomerDoc } from '../../store/customers';
import { createTestConnection, TEST_CHARGES_COLLECTION } from '../../adapters/provider/test-connection';
import { recordSubscription } from '../../services/subscriptions/subscriptions';
import { ordersCollection } from '../../store/orders';
import { chargesCollection } from '../../store/subscription-charges';
import { measureStripeAdapter, stripeSettings } from './stripe-adapter';
import { cpuByProcess } from './cpu';
import { chainAnswerUpdate, chainRelayUpdate, type ChainActivities } from './chain-workflows';
import { machineInfo, printActivityTimings, printTable, round, runWithConcurrency, saveResults, summarizeLatencies } from './lib';

const settings = {
  /** One request at a time: the cost of one charge without queueing behind others. */
  sequential: { count: 30 },
  yardstick: { count: 300, concurrency: 20, warmup: 20 },
  charges: { count: 400, connections: 20, warmup: 40, subscriptions: 20 },
  sameKey: { rounds: 5, concurrent: 50 },
};

const latencyColumns = (l: { p50: number; p99: number; mean: number }) => ({ 'p50 ms': l.p50, 'p99 ms': l.p99, 'mean ms': l.mean });

async function yardstick(client: Client, taskQueue: string, { count, concurrency, warmup } = settings.yardstick) {
  const run = async (total: number) => {
    const ms: number[] = [];
    await runWithConcurrency(total, concurrency, async (i) => {
      const t = performance.now();
      await client.workflow.execute('pingWorkflow', { taskQueue, workflowId: `bench-ping-${randomUUID()}-${i}` });
      ms.push(performance.now() - t);
    });
    return summarizeLatencies(ms);
  };
  await run(warmup);
  return run(count);
}

const chainWorkflowsPath = fileURLToPath(new URL('./chain-workflows.ts', import.meta.url));

/** The chain's worker: its own task queue, plain no-op activities, the hop an update like the charge's. */
function chainWorker(connection: NativeConnection, client: Client, taskQueue: string): Promise<Worker> {
  const activities: ChainActivities = {
    hop: (backWorkflowId) =>
      client.workflow.getHandle(backWorkflowId).executeUpdate(chainRelayUpdate, { updateId: Context.current().info.workflowExecution?.workflowId }),
    noop: () => Promise.resolve('ok'),
  };
  return Worker.create({ connection, taskQueue, workflowsPath: chainWorkflowsPath, activities });
}

/** Front-to-answer latencies over `backs` back workflows (front i hops to back i mod n, as charge i to subscription i mod 20). */
async function chainRun(client: Client, taskQueue: string, backs: string[], total: number, concurrency: number) {
  const ms: number[] = [];
  await runWithConcurrency(total, concurrency, async (i) => {
    const t = performance.now();
    await client.workflow.executeUpdateWithStart(chainAnswerUpdate, {
      startWorkflowOperation: new WithStartWorkflowOperation('chainFrontWorkflow', {
        workflowId: `bench-chain-${randomUUID()}`,
        taskQueue,
        args: [backs[i % backs.length]],
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    });
    ms.push(performance.now() - t);
  });
  return summarizeLatencies(ms);
}

/** The chain yardstick with the back workflows' activity local, then regular: 1 lane, then 20 lanes. */
async function chainYardstick(connection: NativeConnection, client: Client) {
  const taskQueue = `bench-chain-${randomUUID()}`;
  const worker = await chainWorker(connection, client, taskQueue);
  return worker.runUntil(async () => {
    const figures = [];
    for (const local of [true, false]) {
      const backs = await Promise.all(
        Array.from({ length: settings.charges.subscriptions }, async (_, n) => {
          const workflowId = `bench-chain-back-${local ? 'local' : 'regular'}-${n}-${randomUUID()}`;
          await client.workflow.start('chainBackWorkflow', { workflowId, taskQueue, args: [local] });
          return workflowId;
        }),
      );
      const { count, concurrency, warmup } = settings.yardstick;
      await chainRun(client, taskQueue, backs, warmup, concurrency);
      const oneLane = await chainRun(client, taskQueue, backs, settings.sequential.count, 1);
      const cpu = cpuByProcess();
      const lanes = await chainRun(client, taskQueue, backs, count, concurrency);
      figures.push({ local, oneLane, lanes, cpuPerOp: cpu.per(count) });
      await Promise.all(backs.map((id) => client.workflow.getHandle(id).terminate('bench done')));
    }
    return figures;
  });
}

/** BENCH_METRICS=1: metrics on as in production (Core's Prometheus exporter, the business counters, the API's histogram). */
const metricsOn = process.env.BENCH_METRICS === '1';

/** The worker's Temporal task latencies (Core's histograms, ms): sum and count per metric over all its series. */
const TASK_LATENCIES = [
  'temporal_workflow_task_schedule_to_start_latency',
  'temporal_workflow_task_execution_latency',
  'temporal_activity_schedule_to_start_latency',
  'temporal_activity_execution_latency',
  'temporal_local_activity_execution_latency',
] as const;
type LatencyTotals = Record<string, { sum: number; count: number }>;

async function taskLatencies(metricsPort: number | null): Promise<LatencyTotals> {
  if (metricsPort === null) return {};
  const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((res) => res.text());
  const totals: LatencyTotals = {};
  for (const name of TASK_LATENCIES) {
    const total = (suffix: string) =>
      [...text.matchAll(new RegExp(`^${name}(?:_milliseconds)?_${suffix}(?:\\{[^}]*\\})? ([0-9.e+]+)`, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);
    totals[name] = { sum: total('sum'), count: total('count') };
  }
  return totals;
}

/** Mean latency and count per metric between two scrapes: where a phase's tasks waited. */
function latencyRows(before: LatencyTotals, after: LatencyTotals) {
  return Object.keys(after).map((name) => {
    const count = after[name].count - (before[name]?.count ?? 0);
    const sum = after[name].sum - (before[name]?.sum ?? 0);
    return { metric: name.replace('temporal_', ''), tasks: count, 'mean ms': count ? round(sum / count) : 0 };
  });
}

async function main(): Promise<void> {
  // BENCH_METRICS=1: on a known port, so the charge phase's task latencies can be read from it.
  const metricsPort = metricsOn ? await freePort() : null;
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} },
      ...(metricsOn ? { metrics: { prometheus: { bindAddress: `127.0.0.1:${metricsPort}` } } } : {}),
    },
  });
  // One process holds API and worker here: the worker's counters go to Core's meter, the API's histogram to prom-client.
  if (metricsOn) installBusinessMetrics(coreBusinessMetrics(Runtime.instance().metricMeter));
  const httpDuration = metricsOn ? createApiMetrics().httpDuration : undefined;
  console.log(`metrics ${metricsOn ? 'on' : 'off'} (BENCH_METRICS), traces off`);
  const machineBefore = machineInfo();
  if (machineBefore.loadAverage1m > machineBefore.cpus / 2) {
    console.log(`warning: load average ${machineBefore.loadAverage1m} on ${machineBefore.cpus} CPUs before starting; figures will be low`);
  }
  const workDir = mkdtempSync(join(tmpdir(), 'billing-bench-charges-'));
  console.log(`starting FerretDB and the Temporal dev server in ${workDir}`);
  const [ferret, temporal] = await Promise.all([
    startFerretDb({ dataDir: join(workDir, 'ferretdb') }),
    startTemporalDevServer({ dbFile: join(workDir, 'temporal.db'), headless: true }),
  ]);
  const mongo = await MongoClient.connect(ferret.uri);
  const db = mongo.db('bench_charges');
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection });
  const taskQueue = `bench-charges-${randomUUID()}`;
  try {
    await ensureIndexes(db);
    const provider = createTestConnection({ db });
    const store = await createStore(db, { name: 'Bench Store', slug: 'bench', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
    const { key: apiKey } = await createApiKey(db, { storeId: store._id, name: 'bench', scopes: ['read', 'write'] });
    const product = await createProduct(db, { storeId: store._id, name: 'Bench API', family: 'bench' });
    // A trial keeps the subscriptions' own workflows idle: the bench measures the charges.
    const offer = await createOffer(db, {
      storeId: store._id,
      productId: product._id,
      name: 'Bench monthly',
      type: 'recurring',
      billingCycle: 'monthly',
      trialDays: 30,
      prices: [{ currency: 'brl', amount: 4990, default: true }],
    });
    const subscriptionIds: string[] = [];
    for (let i = 0; i < settings.charges.subscriptions; i++) {
      const { customer } = await insertCustomer(db, newCustomerDoc(store._id, { email: `bench${i}@example.com`, name: 'Bench Buyer' }, {}));
      const saved = await provider.saveCard({ storeId: store._id, customerId: customer._id, card: { number: '4242424242424242' } });
      if (!saved.ok) throw new Error(saved.message);
      // Recorded without their workflows: the bench drives charges only.
      const sub = await recordSubscription({ db }, { store, customer, offer, product, paymentMethod: saved.card });
      subscriptionIds.push(sub._id);
    }

    const timings = new ActivityTimings();
    const worker = await createBillingWorker({ connection: nativeConnection, taskQueue, db, temporal: client, activityTimings: timings });
    const port = await freePort();
    const base = loadApiConfig({ ...process.env, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'silent' });
    // The per-key limit (100 per 2 s) would cap the load generator: the bench measures the route.
    const config = { ...base, taskQueue, keyRateLimit: 1_000_000_000, ipRateLimit: 1_000_000_000 };
    const app = await buildApp({ db, config, temporal: client, provider, httpDuration }, { logger: false });
    const url = await app.listen({ port, host: '127.0.0.1' });
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };

    const postCharge = async (subscriptionId: string, key: string, amount: number) => {
      const res = await fetch(`${url}/v1/subscriptions/${subscriptionId}/charges`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': key },
        body: JSON.stringify({ amount, description: 'Bench charge' }),
      });
      const body = (await res.json()) as { id?: string };
      return { status: res.status, id: body.id ?? null };
    };

    const figures = await worker.runUntil(async () => {
      console.log('(a) bare start-and-wait of pingWorkflow (one activity), 20 lanes...');
      const pingCpu = cpuByProcess();
      const bare = await yardstick(client, taskQueue);
      const pingCpuPerOp = pingCpu.per(settings.yardstick.warmup + settings.yardstick.count);
      const bareSequential = await yardstick(client, taskQueue, { count: settings.sequential.count, concurrency: 1, warmup: 0 });
      console.log("(a2) the chain yardstick: the charge's structure with no-op activities, 1 lane then 20...");
      const chain = await chainYardstick(nativeConnection, client);

      const { count, connections, warmup } = settings.charges;
      await runWithConcurrency(warmup, connections, async (i) => {
        const res = await postCharge(subscriptionIds[i % subscriptionIds.length], `warmup-${randomUUID()}`, 1000);
        if (res.status !== 201) throw new Error(`warmup charge answered ${res.status}`);
      });
      console.log(`(b) ${settings.sequential.count} charges one at a time, then ${count} with ${connections} connections, distinct keys...`);
      const sequentialMs: number[] = [];
      await runWithConcurrency(settings.sequential.count, 1, async (i) => {
        const t = performance.now();
        const res = await postCharge(subscriptionIds[i % subscriptionIds.length], `seq-${randomUUID()}`, 1000);
        sequentialMs.push(performance.now() - t);
        if (res.status !== 201) throw new Error(`sequential charge answered ${res.status}`);
      });
      const sequential = summarizeLatencies(sequentialMs);
      const latencies: number[] = [];
      let non201 = 0;
      const latenciesBefore = await taskLatencies(metricsPort);
      const chargeCpu = cpuByProcess();
      const began = performance.now();
      await runWithConcurrency(count, connections, async (i) => {
        const t = performance.now();
        const res = await postCharge(subscriptionIds[i % subscriptionIds.length], `bench-${randomUUID()}`, 1000 + (i % 50));
        latencies.push(performance.now() - t);
        if (res.status !== 201) non201++;
      });
      const seconds = (performance.now() - began) / 1000;
      const cpuPerOp = { ping: pingCpuPerOp, charge: chargeCpu.per(count) };
      const taskLatencyRows = latencyRows(latenciesBefore, await taskLatencies(metricsPort));
      const distinct = {
        charges: count,
        chargesPerSec: round(count / seconds),
        latencyMs: summarizeLatencies(latencies),
        non201,
        taskLatencyRows,
        cpuPerOp,
      };

      console.log(`(c) ${settings.sameKey.rounds} rounds of ${settings.sameKey.concurrent} concurrent requests with one key...`);
      const rounds = [];
      for (let r = 0; r < settings.sameKey.rounds; r++) {
        const key = `same-${randomUUID()}`;
        const subscriptionId = subscriptionIds[r % subscriptionIds.length];
        const t = performance.now();
        const answers = await Promise.all(Array.from({ length: settings.sameKey.concurrent }, () => postCharge(subscriptionId, key, 2500)));
        const settleMs = round(performance.now() - t);
        const chargeIds = new Set(answers.map((a) => a.id));
        const providerCharges = await db.collection(TEST_CHARGES_COLLECTION).countDocuments({ store_id: store._id, key: merchantChargeKey(key) });
        const chargeDocs = await chargesCollection(db)
          .find({ store_id: store._id, key: merchantChargeKey(key) })
          .toArray();
        const orders = await ordersCollection(db).countDocuments({ store_id: store._id, external_order_id: chargeDocs[0]?._id ?? '-' });
        rounds.push({
          round: r + 1,
          settleAllMs: settleMs,
          providerCharges,
          chargeDocuments: chargeDocs.length,
          orders,
          distinctChargeIds: chargeIds.size,
          created201: answers.filter((a) => a.status === 201).length,
          replayed200: answers.filter((a) => a.status === 200).length,
          // The spec: while the first request runs, a second under its key is told 409 at once.
          inUse409: answers.filter((a) => a.status === 409).length,
          other: answers.filter((a) => a.status !== 200 && a.status !== 201 && a.status !== 409).length,
        });
      }
      return { bare, bareSequential, chain, sequential, distinct, rounds };
    });
    await app.close();
    console.log(`(d) the Stripe adapter against stripe-mock, ${stripeSettings.count} charges one at a time...`);
    const stripeAdapter = await measureStripeAdapter();

    const p50Ratio = round(figures.distinct.latencyMs.p50 / figures.bare.p50, 2);
    printTable('(a) yardstick: bare start-and-wait of a one-activity workflow (pingWorkflow)', [
      {
        lanes: settings.yardstick.concurrency,
        workflows: settings.yardstick.count,
        'p50 ms': figures.bare.p50,
        'p99 ms': figures.bare.p99,
        'mean ms': figures.bare.mean,
      },
      {
        lanes: 1,
        workflows: settings.sequential.count,
        'p50 ms': figures.bareSequential.p50,
        'p99 ms': figures.bareSequential.p99,
        'mean ms': figures.bareSequential.mean,
      },
    ]);
    const chainLocal = figures.chain.find((c) => c.local)!;
    printTable("(a2) chain yardstick: the charge's structure, no business code (test/bench/chain-workflows.ts)", [
      ...figures.chain.flatMap((c) => [
        { "back workflow's activity": c.local ? 'local' : 'regular', lanes: 1, ...latencyColumns(c.oneLane) },
        { "back workflow's activity": c.local ? 'local' : 'regular', lanes: settings.yardstick.concurrency, ...latencyColumns(c.lanes) },
      ]),
    ]);
    console.log('(a) skips: the update-with-start, the second workflow and the update to it (one workflow, one activity).');
    console.log('(a2) skips: HTTP, the key and subscription reads, idempotency, the mutex, the provider, the order and charge writes.');
    printTable('(b0) POST charges one at a time (request -> 201, no queueing)', [
      {
        charges: settings.sequential.count,
        'p50 ms': figures.sequential.p50,
        'p99 ms': figures.sequential.p99,
        'mean ms': figures.sequential.mean,
        'p50 / 1-lane yardstick p50': round(figures.sequential.p50 / figures.bareSequential.p50, 2),
        'p50 / 1-lane chain (local) p50': round(figures.sequential.p50 / chainLocal.oneLane.p50, 2),
      },
    ]);
    printTable('(b) POST /v1/subscriptions/{id}/charges, approved, distinct keys (request -> 201)', [
      {
        connections: settings.charges.connections,
        charges: figures.distinct.charges,
        'charges/s': figures.distinct.chargesPerSec,
        'p50 ms': figures.distinct.latencyMs.p50,
        'p99 ms': figures.distinct.latencyMs.p99,
        'max ms': figures.distinct.latencyMs.max,
        'non-201': figures.distinct.non201,
        'p50 / yardstick p50': p50Ratio,
        'p50 / 20-lane chain (local) p50': round(figures.distinct.latencyMs.p50 / chainLocal.lanes.p50, 2),
      },
    ]);
    const { ping: pingCpuRow, charge: chargeCpuRow } = figures.distinct.cpuPerOp;
    printTable(
      'CPU per operation by process (ms): this process holds the API, the worker and the load generator; ferretdb with its relay; temporal is the dev server',
      [
        { operation: 'ping workflow, 20 lanes (a)', ...pingCpuRow },
        ...figures.chain.map((c) => ({ operation: `chain, ${c.local ? 'local' : 'regular'}, 20 lanes (a2)`, ...c.cpuPerOp })),
        { operation: 'charge, 20 connections (b)', ...chargeCpuRow },
      ],
    );
    if (metricsOn) printTable("(b) where the 20-connection charges waited: the worker's Temporal task latencies", figures.distinct.taskLatencyRows);
    printTable(
      `(c) ${settings.sameKey.concurrent} concurrent requests with one key`,
      figures.rounds.map((r) => ({
        round: r.round,
        'settle all ms': r.settleAllMs,
        'provider charges': r.providerCharges,
        'charge docs': r.chargeDocuments,
        orders: r.orders,
        'distinct ids': r.distinctChargeIds,
        '201': r.created201,
        '200 replayed': r.replayed200,
        '409 in use': r.inUse409,
        other: r.other,
      })),
    );
    printTable('(d) the Stripe adapter against stripe-mock: its own overhead per charge (one at a time)', [
      { path: 'bare fetch POST /v1/payment_intents', ...latencyColumns(stripeAdapter.bareRequest), 'overhead p50 ms': '' },
      {
        path: 'chargeCard (stripe package + adapter)',
        ...latencyColumns(stripeAdapter.chargeCard),
        'overhead p50 ms': stripeAdapter.overheadPerChargeMs,
      },
    ]);
    printActivityTimings(timings.summary());
    const file = saveResults('charges', {
      activityDurations: timings.summary(),
      benchmark: 'charges',
      metricsOn,
      takenAt: new Date().toISOString(),
      machine: machineBefore,
      loadAverage1mAfter: machineInfo().loadAverage1m,
      settings,
      ...figures,
      stripeAdapter: { settings: stripeSettings, ...stripeAdapter },
      p50OverYardstickP50: p50Ratio,
      goals: { p50WithinTimesYardstick: 2, p50UnderMs: 100, p99UnderMs: 300 },
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
