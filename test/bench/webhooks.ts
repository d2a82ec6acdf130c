// `npm run bench:webhooks`: end-to-end webhook fan-out on this machine. Events are emitted through
// emitEvent (event write, delivery write, workflow start) to one endpoint on a local HTTPS receiver
// that answers 200; each delivery is a `webhook-delivery/<uuid>` workflow on the Temporal dev server
// (SQLite, WAL) with a worker in this process, records in FerretDB. Measures deliveries/s and the
// time from emitEvent to the receiver's hit, in a burst and at a steady rate below capacity, and where
// the time goes (from a sample of workflow histories and the attempt activity's own timings). The ping
// yardstick, the floor and the deliveries each run twice, in mirrored order, so a drift over the run
// weighs on all three alike; each rate is events over the two passes' seconds.
// Compared with results/baseline.json (bare one-activity workflow) when present.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker, makeTelemetryFilterString } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import { MongoClient, type Db } from 'mongodb';
import { startFerretDb, startTemporalDevServer } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { ActivityTimings } from '../../worker/activity-interceptors';
import { emitEvent } from '../../services/events/events';
import { ensureIndexes } from '../../store/indexes';
import { createStore } from '../../store/stores';
import { insertEndpoint, type WebhookEndpointDoc } from '../../store/webhook-endpoints';
import { buildEventDoc, insertEvents, renderEventBody } from '../../store/events';
import { createWebhookHttpClient, type WebhookHttpClient } from '../../adapters/webhooks/http';
import { SIGNATURE_HEADER, signDelivery } from '../../adapters/webhooks/signing';
import type { FloorActivities, FloorDelivery } from './delivery-floor-workflows';
import { deliveryIdFor } from '../../store/webhook-deliveries';
import { webhookDeliveryWorkflowId } from '../../workflows/webhook-delivery/messages';
import { startWebhookReceiver, testCa } from '../support/webhook-receiver';
import { cpuByProcess } from './cpu';
import { profiled } from './profile';
import { machineInfo, printActivityTimings, printTable, resultsDir, round, runWithConcurrency, saveResults, summarizeLatencies } from './lib';

const settings = {
  burst: { events: 400, concurrency: 20, warmup: 30 },
  steady: { seconds: 20, fractionOfBurst: 0.7 },
  historySample: 60,
};

/** What the floor yardstick leaves out of a real delivery: the features on top of the spec's work. */
const FLOOR_SKIPS =
  "the endpoint lookup and the event's outbox entry, written and removed (the sweeper's guarantee), the attempt's claim, " +
  "the endpoint's failure count, the workflow's search attributes, memo and BillingStatus upserts, and the 72-hour resend window";

interface Emitted {
  id: string;
  deliveryId: string;
  emittedAt: number;
  emitMs: number;
}

async function emitOne(db: Db, client: Client, taskQueue: string, storeId: string, endpointId: string, n: number): Promise<Emitted> {
  const emittedAt = Date.now();
  const started = performance.now();
  const event = await emitEvent(
    { db, temporal: client, taskQueue },
    { storeId, type: 'customer.created', object: { id: `cust_bench_${n}`, object: 'customer', email: `b${n}@example.com` } },
  );
  return { id: event._id, deliveryId: deliveryIdFor(event._id, endpointId), emittedAt, emitMs: performance.now() - started };
}

const floorWorkflowsPath = fileURLToPath(new URL('./delivery-floor-workflows.ts', import.meta.url));

/** The floor yardstick's worker: its one activity signs, POSTs with the real HTTPS client and records the outcome. */
function floorWorker(connection: NativeConnection, taskQueue: string, db: Db, http: WebhookHttpClient, endpoint: WebhookEndpointDoc) {
  const activities: FloorActivities = {
    async deliverOnce({ deliveryId, url, body }: FloorDelivery) {
      const now = Date.now();
      const headers = { 'content-type': 'application/json', [SIGNATURE_HEADER]: signDelivery(body, endpoint, now) };
      const outcome = await http.post({ url, body, headers });
      const status = outcome.ok ? 'succeeded' : 'failed';
      await db
        .collection('floor_deliveries')
        .updateOne({ _id: deliveryId as never }, { $set: { status, attempts: 1, response: outcome.responseStatus } });
      return outcome.responseStatus;
    },
  };
  return Worker.create({ connection, taskQueue, workflowsPath: floorWorkflowsPath, activities });
}

/** The floor's emit: the event and its delivery written, the delivery's workflow started (no lookup of endpoints, no outbox). */
async function emitFloor(db: Db, client: Client, taskQueue: string, storeId: string, endpoint: WebhookEndpointDoc, n: number): Promise<Emitted> {
  const emittedAt = Date.now();
  const started = performance.now();
  const object = { id: `cust_bench_${n}`, object: 'customer', email: `b${n}@example.com` };
  const event = buildEventDoc({ storeId, type: 'customer.created', object, targets: [endpoint._id] }, emittedAt);
  await insertEvents(db, [event]);
  const deliveryId = deliveryIdFor(event._id, endpoint._id);
  await db.collection('floor_deliveries').insertOne({ _id: deliveryId as never, event: event._id, status: 'pending', attempts: 0 });
  const args: [FloorDelivery] = [{ deliveryId, url: endpoint.url, body: renderEventBody(event) }];
  await client.workflow.start('deliveryFloorWorkflow', { taskQueue, workflowId: `bench-floor-${deliveryId}`, args });
  return { id: event._id, deliveryId, emittedAt, emitMs: performance.now() - started };
}

function ms(timestamp: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  return Number(timestamp?.seconds ?? 0) * 1000 + (timestamp?.nanos ?? 0) / 1e6;
}

/** Splits one delivery's life using its workflow history and the activity's reported timings. */
async function breakdown(handle: WorkflowHandle, emitted: Emitted) {
  const history = await handle.fetchHistory();
  const events = history.events ?? [];
  const at = (pick: (e: (typeof events)[number]) => unknown) => {
    const found = events.find((e) => pick(e));
    return found ? ms(found.eventTime) : Number.NaN;
  };
  const started = at((e) => e.workflowExecutionStartedEventAttributes);
  const firstTaskStarted = at((e) => e.workflowTaskStartedEventAttributes);
  const activityScheduled = at((e) => e.activityTaskScheduledEventAttributes);
  const activityStarted = at((e) => e.activityTaskStartedEventAttributes);
  const completed = events.find((e) => e.activityTaskCompletedEventAttributes);
  const payload = completed?.activityTaskCompletedEventAttributes?.result?.payloads?.[0]?.data;
  const result = payload
    ? (JSON.parse(Buffer.from(payload).toString('utf8')) as { timings: { prepareMs: number; httpMs: number; recordMs: number } })
    : null;
  return {
    emitToWorkflowStartMs: started - emitted.emittedAt,
    workflowTaskWaitMs: firstTaskStarted - started,
    activityQueueMs: activityStarted - activityScheduled,
    workflowTaskToActivityMs: activityScheduled - firstTaskStarted,
    prepareMs: result?.timings.prepareMs ?? Number.NaN,
    httpMs: result?.timings.httpMs ?? Number.NaN,
    recordMs: result?.timings.recordMs ?? Number.NaN,
  };
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
  const workDir = mkdtempSync(join(tmpdir(), 'billing-bench-webhooks-'));
  console.log(`starting FerretDB and the Temporal dev server (SQLite, WAL) in ${workDir}`);
  const [ferret, temporal] = await Promise.all([
    startFerretDb({ dataDir: join(workDir, 'ferretdb') }),
    startTemporalDevServer({ dbFile: join(workDir, 'temporal.db'), headless: true }),
  ]);
  const mongo = await MongoClient.connect(ferret.uri);
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const connection = await Connection.connect({ address: temporal.address });
  const receiver = await startWebhookReceiver();
  const hitAt = new Map<string, number>();
  receiver.respond = (hit) => {
    if (!hitAt.has(hit.event.id)) hitAt.set(hit.event.id, hit.receivedAt);
    return 200;
  };
  try {
    const db = mongo.db('bench_webhooks');
    await ensureIndexes(db);
    const client = new Client({ connection });
    const taskQueue = `bench-webhooks-${randomUUID()}`;
    const timings = new ActivityTimings();
    const worker = await createBillingWorker({
      activityTimings: timings,
      connection: nativeConnection,
      taskQueue,
      db,
      temporal: client,
      activityDeps: { webhooks: { allowedHosts: ['localhost'], ca: (await testCa()).caCert } },
    });
    const store = await createStore(db, { name: 'Bench store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
    const endpoint = await insertEndpoint(db, {
      storeId: store._id,
      url: receiver.url('/bench'),
      description: null,
      enabledEvents: ['*'],
      apiVersion: '2026-11-01',
    });

    const waitForHits = async (emitted: Emitted[], timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      while (emitted.some((e) => !hitAt.has(e.id))) {
        if (Date.now() > deadline) throw new Error(`${emitted.filter((e) => !hitAt.has(e.id)).length} deliveries never arrived`);
        await delay(20);
      }
    };
    let counter = 0;

    const floorQueue = `${taskQueue}-floor`;
    const floorHttp = createWebhookHttpClient({ allowedHosts: ['localhost'], ca: (await testCa()).caCert });
    const floor = await floorWorker(nativeConnection, floorQueue, db, floorHttp, endpoint);

    const results = await floor.runUntil(() =>
      worker.runUntil(async () => {
        // Warm-up: workflow isolates, sockets, caches.
        const warm: Emitted[] = [];
        await runWithConcurrency(
          settings.burst.warmup,
          10,
          async () => void warm.push(await emitOne(db, client, taskQueue, store._id, endpoint._id, counter++)),
        );
        await waitForHits(warm, 60_000);

        // The ceiling on the same servers at the same moment: bare one-activity workflows (baseline's pingWorkflow, open load).
        const pingBurst = async () => {
          console.log(`pingWorkflow: ${settings.burst.events} workflows, ${settings.burst.concurrency} starting lanes...`);
          const pings: Array<Promise<unknown>> = [];
          const started = performance.now();
          await runWithConcurrency(settings.burst.events, settings.burst.concurrency, async (i) => {
            const handle = await client.workflow.start('pingWorkflow', { taskQueue, workflowId: `bench-ping-${randomUUID()}-${i}` });
            pings.push(handle.result());
          });
          await Promise.all(pings);
          return {
            events: settings.burst.events,
            seconds: (performance.now() - started) / 1000,
            emitted: [] as Emitted[],
            emittedAllAt: 0,
            started: 0,
          };
        };

        /** A burst of emits in open load, until every one has reached the receiver. */
        const burstOf = async (name: string, emit: () => Promise<Emitted>) => {
          console.log(`${name}: ${settings.burst.events} events, ${settings.burst.concurrency} emitting lanes...`);
          const emitted: Emitted[] = [];
          const started = Date.now();
          await runWithConcurrency(settings.burst.events, settings.burst.concurrency, async () => void emitted.push(await emit()));
          const emittedAllAt = Date.now();
          await waitForHits(emitted, 300_000);
          const seconds = (Math.max(...emitted.map((e) => hitAt.get(e.id)!)) - started) / 1000;
          return { events: emitted.length, emitted, started, emittedAllAt, seconds };
        };

        // Each kind once forward, once in mirrored order (ping, floor, deliveries, deliveries, floor, ping): a
        // drift over the run (the servers' files growing, the machine's speed) falls on every kind alike.
        const kinds = {
          ping: pingBurst,
          // The floor: the spec's work for one delivery, nothing more.
          floor: () => burstOf('floor', () => emitFloor(db, client, floorQueue, store._id, endpoint, counter++)),
          burst: () => burstOf('burst', () => emitOne(db, client, taskQueue, store._id, endpoint._id, counter++)),
        };
        const order: Array<keyof typeof kinds> = ['ping', 'floor', 'burst'];
        type Pass = Awaited<ReturnType<typeof pingBurst>> & { cpuPerOp: Record<string, number> };
        const passes: Record<keyof typeof kinds, Pass[]> = { ping: [], floor: [], burst: [] };
        for (const kind of [...order, ...[...order].reverse()]) {
          const cpu = cpuByProcess();
          const pass = await profiled(`webhooks-${kind}-${passes[kind].length + 1}`, kinds[kind]);
          passes[kind].push({ ...pass, cpuPerOp: cpu.per(pass.events) });
        }
        // CPU ms per workflow or delivery by process, the mean of the two passes.
        const cpuOf = (kind: keyof typeof kinds) =>
          Object.fromEntries(
            Object.keys(passes[kind][0].cpuPerOp).map((column) => [
              column,
              round(passes[kind].reduce((t, p) => t + p.cpuPerOp[column], 0) / passes[kind].length, 1),
            ]),
          );
        const rateOf = (kind: keyof typeof kinds) =>
          round(passes[kind].reduce((n, p) => n + p.events, 0) / passes[kind].reduce((t, p) => t + p.seconds, 0));
        const passRates = (kind: keyof typeof kinds) => passes[kind].map((p) => round(p.events / p.seconds));
        const pingPerSec = rateOf('ping');
        const floorPerSec = rateOf('floor');
        const burst = passes.burst.flatMap((p) => p.emitted);
        const burstFigures = {
          events: burst.length,
          deliveriesPerSec: rateOf('burst'),
          emitsPerSec: round(burst.length / passes.burst.reduce((t, p) => t + (p.emittedAllAt - p.started) / 1000, 0)),
          emitMs: summarizeLatencies(burst.map((e) => e.emitMs)),
          eventToHitMs: summarizeLatencies(burst.map((e) => hitAt.get(e.id)! - e.emittedAt)),
        };
        const passesPerSec = { ping: passRates('ping'), floor: passRates('floor'), deliveries: passRates('burst') };

        const rate = Math.max(1, Math.floor(burstFigures.deliveriesPerSec * settings.steady.fractionOfBurst));
        console.log(`steady: ${rate} events/s for ${settings.steady.seconds} s...`);
        const steady: Emitted[] = [];
        const pending: Array<Promise<void>> = [];
        const steadyStarted = performance.now();
        const total = rate * settings.steady.seconds;
        for (let i = 0; i < total; i++) {
          const due = steadyStarted + (i * 1000) / rate;
          const wait = due - performance.now();
          if (wait > 0) await delay(wait);
          pending.push(emitOne(db, client, taskQueue, store._id, endpoint._id, counter++).then((e) => void steady.push(e)));
        }
        await Promise.all(pending);
        await waitForHits(steady, 300_000);
        const steadyFigures = {
          ratePerSec: rate,
          events: steady.length,
          emitMs: summarizeLatencies(steady.map((e) => e.emitMs)),
          eventToHitMs: summarizeLatencies(steady.map((e) => hitAt.get(e.id)! - e.emittedAt)),
        };

        // Where the time goes, from a sample of the steady run (not distorted by the burst backlog).
        const sample = steady
          .filter((_, i) => i % Math.max(1, Math.floor(steady.length / settings.historySample)) === 0)
          .slice(0, settings.historySample);
        const parts = await Promise.all(sample.map((e) => breakdown(client.workflow.getHandle(webhookDeliveryWorkflowId(e.deliveryId)), e)));
        // A part missing from a history (an attempt retried) is left out of that part's figures.
        const split = Object.fromEntries(
          (Object.keys(parts[0]) as Array<keyof (typeof parts)[number]>).map((key) => [
            key,
            summarizeLatencies(parts.map((p) => p[key]).filter((v) => Number.isFinite(v) && v >= 0)),
          ]),
        );
        return {
          pingWorkflowsPerSec: pingPerSec,
          floorDeliveriesPerSec: floorPerSec,
          passesPerSec,
          cpuPerOp: { ping: cpuOf('ping'), floor: cpuOf('floor'), deliveries: cpuOf('burst') },
          burst: burstFigures,
          steady: steadyFigures,
          breakdown: { sampled: sample.length, ...split },
        };
      }),
    );
    floorHttp.close();

    const baselineFile = join(resultsDir, 'baseline.json');
    let baseline: { pingClosed: number; pingOpen: number } | null = null;
    if (existsSync(baselineFile)) {
      const data = JSON.parse(readFileSync(baselineFile, 'utf8')) as {
        workflows?: Array<{ workflow: string; load: string; completionsPerSec: number }>;
      };
      const ping = (load: string) => data.workflows?.find((w) => w.workflow === 'pingWorkflow' && w.load === load)?.completionsPerSec ?? Number.NaN;
      baseline = { pingClosed: ping('closed'), pingOpen: ping('open') };
    }
    const ceiling = baseline ? Math.max(baseline.pingClosed, baseline.pingOpen) : Number.NaN;

    printTable('Webhook fan-out: emitEvent -> delivery workflow -> HTTPS receiver (200)', [
      {
        run: 'burst',
        events: results.burst.events,
        'deliveries/s': results.burst.deliveriesPerSec,
        'emit p50 ms': results.burst.emitMs.p50,
        'emit p99 ms': results.burst.emitMs.p99,
        'event->hit p50 ms': results.burst.eventToHitMs.p50,
        'event->hit p99 ms': results.burst.eventToHitMs.p99,
      },
      {
        run: `steady ${results.steady.ratePerSec}/s`,
        events: results.steady.events,
        'deliveries/s': results.steady.ratePerSec,
        'emit p50 ms': results.steady.emitMs.p50,
        'emit p99 ms': results.steady.emitMs.p99,
        'event->hit p50 ms': results.steady.eventToHitMs.p50,
        'event->hit p99 ms': results.steady.eventToHitMs.p99,
      },
    ]);
    const { sampled, ...split } = results.breakdown as { sampled: number } & Record<string, { p50: number; p99: number }>;
    printTable(
      `Where the time goes (steady run, ${sampled} deliveries sampled from workflow histories)`,
      Object.entries(split).map(([part, s]) => ({ part, 'p50 ms': s.p50, 'p99 ms': s.p99 })),
    );
    printTable('Against bare one-activity workflows (pingWorkflow, open load)', [
      {
        measured: 'same servers, this run (both passes)',
        'ping workflows/s': results.pingWorkflowsPerSec,
        'webhook deliveries/s': results.burst.deliveriesPerSec,
        ratio: round(results.burst.deliveriesPerSec / results.pingWorkflowsPerSec, 2),
      },
      {
        measured: "floor: the spec's work per delivery only (reference)",
        'ping workflows/s': results.pingWorkflowsPerSec,
        'webhook deliveries/s': results.floorDeliveriesPerSec,
        ratio: round(results.floorDeliveriesPerSec / results.pingWorkflowsPerSec, 2),
      },
      ...(baseline
        ? [
            {
              measured: 'results/baseline.json (best of closed, open)',
              'ping workflows/s': ceiling,
              'webhook deliveries/s': results.burst.deliveriesPerSec,
              ratio: round(results.burst.deliveriesPerSec / ceiling, 2),
            },
          ]
        : []),
    ]);
    const { ping, floor: floorPasses, deliveries } = results.passesPerSec;
    console.log(
      `each pass, forward then mirrored (/s): ping ${ping.join(', ')}; floor ${floorPasses.join(', ')}; deliveries ${deliveries.join(', ')}` +
        ` (ratio ${deliveries.map((d, i) => round(d / ping[i], 2)).join(', ')})`,
    );
    printTable(
      'CPU ms per workflow or delivery, by process (mean of both passes; this process: emits, worker, receiver)',
      Object.entries(results.cpuPerOp).map(([kind, columns]) => ({ kind, ...columns })),
    );
    console.log(`the floor skips: ${FLOOR_SKIPS}`);
    printActivityTimings(timings.summary());
    const file = saveResults('webhooks', {
      activityDurations: timings.summary(),
      benchmark: 'webhooks',
      takenAt: new Date().toISOString(),
      machine: machineBefore,
      loadAverage1mAfter: machineInfo().loadAverage1m,
      settings,
      ...results,
      ratioToPingThisRun: round(results.burst.deliveriesPerSec / results.pingWorkflowsPerSec, 2),
      /** What the floor yardstick skips of a real delivery, and its ratio to the ping: the goal's floor on this machine. */
      floor: { skips: FLOOR_SKIPS, ratioToPing: round(results.floorDeliveriesPerSec / results.pingWorkflowsPerSec, 2) },
      baseline: baseline ? { ...baseline, ratioToBest: round(results.burst.deliveriesPerSec / ceiling, 2) } : null,
    });
    console.log(`\nresults written to ${file}`);
  } finally {
    await receiver.close();
    await connection.close();
    await nativeConnection.close();
    await mongo.close();
    await Promise.all([temporal.stop(), ferret.stop()]);
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error('webhooks benchmark failed:', error);
  process.exit(1);
});
