// The worker process: runs workflows/ and activities/ on the `billing` task queue.
// createBillingWorker is also what tests and benchmarks start; running this file connects to
// MongoDB and Temporal from the environment and shuts down gracefully on SIGINT/SIGTERM.
import { DefaultLogger, NativeConnection, Runtime, Worker, makeTelemetryFilterString, type LogLevel, type WorkerOptions } from '@temporalio/worker';
import { testClockTaskQueue } from '../workflows/test-clock/messages';
import { connectDatabase, type Database } from '../store/database';
import { slowCommandMsFrom } from '../store/slow-commands';
import { Client, Connection } from '@temporalio/client';
import { createActivities, type ActivityDeps } from '../activities';
import { createPaymentConnections } from '../adapters/provider';
import { ensureRoutines } from '../services/operations/routines';
import { temporalConnectionOptions, untilNamespaceAnswers } from '../adapters/temporal-connection';
import { ensureIndexes } from '../store/indexes';
import { findStoreStripeAccount } from '../store/stores';
import { chargeAccountPins } from '../store/charge-accounts';
import { isEntryPoint } from '../adapters/entry-point';
import { heartbeatWhileRunning, type ActivityTimings } from './activity-interceptors';
import { mailerFromEnv } from '../adapters/email/smtp';
import { countActivityOutcomes, coreBusinessMetrics, workerMetricsExporter } from './metrics';
import { installBusinessMetrics } from '../services/operations/business-metrics';
import { tracingClientInterceptors, tracingFromEnv, type Tracing } from '../adapters/tracing';
import { tracingActivityInterceptors, tracingSinks, tracingWorkflowModule } from './tracing';
import { workerTuningFromEnv, workerTuningOptions } from './tuning';
import { shownVersion, workerDeploymentOptions, workerVersionFromEnv } from './versioning';
import { cachedWorkflowBundle, versionedWorkflowsPath, workflowsPath } from './workflow-bundle';

export const defaultTaskQueue = 'billing';

export { versionedWorkflowsPath, workflowsPath };

export interface BillingWorkerOptions extends Omit<WorkerOptions, 'connection' | 'namespace' | 'taskQueue' | 'activities' | 'workflowBundle'> {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  db: Database;
  /** Client activities use to start or message workflows; tests pass theirs. */
  temporal: Client;
  /** Overrides for activity dependencies (tests only fake what is truly outside). */
  activityDeps?: Partial<ActivityDeps>;
  /** Records each activity's duration (benchmarks choose timeouts from these). */
  activityTimings?: ActivityTimings;
  /** Tracing when on (adapters/tracing.ts): workflow and activity spans join the caller's trace. */
  tracing?: Tracing | null;
}

export async function createBillingWorker({
  connection,
  namespace = 'default',
  taskQueue = defaultTaskQueue,
  db,
  temporal,
  activityDeps = {},
  activityTimings,
  tracing = null,
  // Another build's workflows (the versioning test's build B); workflows/ (with behaviours when versioned) otherwise.
  workflowsPath: givenPath,
  ...workerOptions
}: BillingWorkerOptions): Promise<Worker> {
  const bundledPath = givenPath ?? (workerOptions.workerDeploymentOptions?.useWorkerVersioning ? versionedWorkflowsPath : workflowsPath);
  const options = {
    // A workflow task waits this long for the worker that ran its workflow last, then any worker takes it
    // (10 s by default): part of how soon a survivor resumes a dead worker's workflows.
    stickyQueueScheduleToStartTimeout: '3 seconds',
    // Slots, pollers and the workflow cache's bound, from the environment (worker/tuning.ts).
    ...workerTuningOptions(workerTuningFromEnv()),
    ...workerOptions,
    ...(tracing ? { sinks: { ...workerOptions.sinks, ...tracingSinks(tracing) } } : {}),
    interceptors: {
      ...workerOptions.interceptors,
      ...(tracing ? { workflowModules: [...(workerOptions.interceptors?.workflowModules ?? []), tracingWorkflowModule] } : {}),
      activity: [
        ...(tracing ? [tracingActivityInterceptors] : []),
        heartbeatWhileRunning,
        countActivityOutcomes,
        ...(activityTimings ? [activityTimings.record()] : []),
        ...(workerOptions.interceptors?.activity ?? []),
      ],
    },
    connection,
    namespace,
    taskQueue,
    workflowsPath: bundledPath,
    // The store's connection and, beside a real one, the test connection test clocks' money needs.
    activities: createActivities({
      db,
      ...createPaymentConnections(db, process.env, {
        stripeAccountOf: (storeId) => findStoreStripeAccount(db, storeId),
        chargeAccounts: chargeAccountPins(db),
      }),
      temporal,
      taskQueue,
      ...activityDeps,
    }),
  } satisfies WorkerOptions;
  // One bundle for both workers: the billing queue and the test clocks' own (a busy clock never holds up renewals).
  // Built once per distinct input and cached on disk (worker/workflow-bundle.ts): a restart or a test file's worker skips webpack.
  const { workflowsPath: path, ...rest } = options;
  const { bundle: workflowBundle } = await cachedWorkflowBundle({
    workflowsPath: path,
    workflowInterceptorModules: rest.interceptors.workflowModules,
  });
  const billing = await Worker.create({ ...rest, workflowBundle });
  const clocks = await Worker.create({ ...rest, workflowBundle, taskQueue: testClockTaskQueue(taskQueue), ...TEST_CLOCK_WORKER_BOUNDS });
  return runsBeside(billing, clocks);
}

/** The test clocks' worker takes few tasks at once: its load stays a bounded share of the process. */
const TEST_CLOCK_WORKER_BOUNDS = { maxConcurrentWorkflowTaskExecutions: 4, maxConcurrentActivityTaskExecutions: 8, maxCachedWorkflows: 200 };

/** `main` as callers know it (run, shutdown), running `beside` for as long as it runs. */
function runsBeside(main: Worker, beside: Worker): Worker {
  const run = main.run.bind(main);
  const shutdown = main.shutdown.bind(main);
  const stopBeside = () => {
    if (beside.getState() === 'RUNNING') beside.shutdown();
  };
  main.run = async () => {
    const besideRunning = beside.run();
    try {
      await run();
    } finally {
      stopBeside();
      await besideRunning;
    }
  };
  main.shutdown = () => {
    stopBeside();
    shutdown();
  };
  return main;
}

/** A positive whole number of milliseconds from the environment, or undefined (the default applies). */
function positiveMs(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === '') return undefined;
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms <= 0) throw new Error(`${name} must be a positive number of milliseconds, not '${value}'`);
  return ms;
}

const logLevels: readonly LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

function logLevelFromEnv(): LogLevel {
  const wanted = (process.env.LOG_LEVEL ?? 'WARN').toUpperCase() as LogLevel;
  return logLevels.includes(wanted) ? wanted : 'WARN';
}

async function main(): Promise<void> {
  const level = logLevelFromEnv();
  // Installed before any connection: SDK and core logs at WARN keep `npm start` readable.
  // Signals are handled below so MongoDB is closed only after the worker has drained.
  // Core's Prometheus exporter serves temporal_* and, through the runtime's meter, the business counters.
  Runtime.install({
    logger: new DefaultLogger(level),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: level }), forward: {} }, metrics: workerMetricsExporter() },
    shutdownSignals: [],
  });
  installBusinessMetrics(coreBusinessMetrics(Runtime.instance().metricMeter));
  // Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
  const tracing = tracingFromEnv('billing-worker');

  const mongoUri = process.env.MONGODB_URI;
  if (!mongoUri) throw new Error('MONGODB_URI is not set (npm start sets it; or point it at your MongoDB)');
  // Buyer e-mails: refused here, before connecting anywhere, when SMTP_URL is unset.
  const mailer = mailerFromEnv();
  const temporalOptions = temporalConnectionOptions();
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const taskQueue = process.env.TEMPORAL_TASK_QUEUE ?? defaultTaskQueue;
  const version = workerVersionFromEnv();

  const database = await connectDatabase(mongoUri, process.env.MONGODB_DB ?? 'billing', { slowCommandMs: slowCommandMsFrom(process.env) });
  const { db } = database;
  await ensureIndexes(db);
  const connection = await NativeConnection.connect(temporalOptions);
  const clientConnection = await Connection.connect(temporalOptions);
  const temporal = new Client({ connection: clientConnection, namespace, interceptors: tracingClientInterceptors(tracing) });
  await untilNamespaceAnswers(() => clientConnection.workflowService.describeNamespace({ namespace }), {
    onFirstRefusal: (error) => console.log(`worker: waiting for Temporal namespace ${namespace} to answer (${String(error).slice(0, 200)})`),
  });
  const worker = await createBillingWorker({
    connection,
    namespace,
    taskQueue,
    temporal,
    db,
    activityDeps: { mailer },
    tracing,
    // A version of the deployment `billing` (worker/versioning.ts); unversioned with WORKER_VERSIONING=off.
    workerDeploymentOptions: workerDeploymentOptions(version),
    // On SIGTERM activities in flight (a delivery's POST, a charge) finish instead of being cancelled and repeated.
    shutdownGraceTime: process.env.WORKER_SHUTDOWN_GRACE ?? '30 seconds',
  });
  // The event sweeper (re-drives events whose deliveries never started) and the usage routine (starts
  // usage for new subscriptions of metered offers): one long-lived workflow each per task queue.
  await ensureRoutines(temporal, taskQueue, { sweepEveryMs: positiveMs('EVENT_SWEEP_EVERY_MS') });

  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) return;
    signalled = true;
    console.log(`worker: ${signal} received, finishing in-flight tasks`);
    worker.shutdown();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const running = worker.run();
  if (worker.getState() === 'RUNNING')
    console.log(
      `worker ready (task queue ${taskQueue}, namespace ${namespace}, ${temporalOptions.address}, version ${version ? shownVersion(version) : 'unversioned'}, e-mail ${mailer.target})`,
    );
  try {
    await running;
  } finally {
    await clientConnection.close();
    await connection.close();
    await database.close();
    await tracing?.shutdown();
  }
  console.log('worker stopped');
}

if (isEntryPoint(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error('worker failed:', error);
    process.exit(1);
  });
}
