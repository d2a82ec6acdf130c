// `npm start`: the whole local stack in one command. FerretDB (data in DATA_DIR/ferretdb/) and the
// Temporal dev server with its Web UI (data in DATA_DIR/temporal.db; DATA_DIR defaults to .data) unless
// MONGODB_URI / TEMPORAL_ADDRESS point elsewhere, the Mailpit mail catcher (DATA_DIR/mailpit.db) unless
// SMTP_URL does, then the worker and the API (each restarted with a backoff if it dies), then the demo
// store; Ctrl-C stops it all in order.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { killAllGroups, spawnGroup, stopAllGroups, type ChildGroup } from './processes';
import { freePort, isPortFree, startFerretDb, startMailpit, startTemporalDevServer } from './servers';
import { projectRoot } from './tools';
import { waitFor } from './wait';
import { Connection } from '@temporalio/client';
import { temporalConnectionOptions } from '../adapters/temporal-connection';
import { makeVersionCurrent, shownVersion, workerVersionFromEnv, type WorkerVersion } from '../worker/versioning';

const dataDir = resolve(projectRoot, process.env.DATA_DIR ?? '.data');

/** The key that seals stored secrets (SECRETS_KEY): made once in the data folder, kept across restarts. */
function secretsKeyFile(): string {
  const file = join(dataDir, 'secrets.key');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600 });
  }
  return file;
}
const defaultPorts = {
  api: 3000,
  apiMetrics: 9464,
  workerMetrics: 9465,
  temporal: 7233,
  temporalUi: 8233,
  ferretDb: 27017,
  mailpitSmtp: 1025,
  mailpitUi: 8025,
};

/** Where SMTP_URL sends mail, without its credentials. */
function shownSmtp(smtpUrl: string): string {
  if (smtpUrl === 'disabled') return 'disabled: no e-mail is sent';
  try {
    const url = new URL(smtpUrl);
    return `${url.protocol}//${url.host}`;
  } catch {
    return 'not a URL';
  }
}

/** A path as the banner shows it: relative inside the project, absolute elsewhere. */
function shown(path: string): string {
  const inside = relative(projectRoot, path);
  return inside.startsWith('..') || isAbsolute(inside) ? path : inside;
}

interface Started {
  name: string;
  stop(): Promise<void>;
}

/** Everything started so far, in start order; shutdown walks it backwards (API, worker, servers). */
const started: Started[] = [];

function say(message: string): void {
  console.log(`[start] ${message}`);
}

/** The port set in `variable`, as given (0: any free port); else the default, or a free port when the default is busy. */
async function portFor(label: string, variable: string, preferred: number): Promise<number> {
  const configured = process.env[variable];
  if (configured === '0') return freePort();
  if (configured) {
    const port = Number(configured);
    if (!Number.isInteger(port) || port <= 0 || port > 65_535) throw new Error(`${variable} must be a port number, not "${configured}"`);
    return port;
  }
  if (await isPortFree(preferred)) return preferred;
  const port = await freePort();
  say(`${label}: port ${preferred} is busy, using ${port} instead`);
  return port;
}

let shuttingDown = false;
let stopAskedAt = 0;
/**
 * One Ctrl-C can arrive twice (the terminal signals the whole group and `npm start`'s tsx wrapper passes
 * it on again): a signal this soon after the first is the same Ctrl-C; only a later one forces.
 */
const SAME_CTRL_C_WITHIN_MS = 2_000;

async function shutdown(exitCode: number): Promise<never> {
  if (shuttingDown) {
    if (Date.now() - stopAskedAt < SAME_CTRL_C_WITHIN_MS) return new Promise<never>(() => undefined);
    // A second Ctrl-C while stopping: stop waiting for graceful exits.
    say('forcing shutdown');
    killAllGroups();
    process.exit(1);
  }
  shuttingDown = true;
  stopAskedAt = Date.now();
  say('stopping...');
  for (const entry of [...started].reverse()) {
    say(`stopping ${entry.name}`);
    await entry.stop().catch((error: unknown) => say(`${entry.name} did not stop cleanly: ${String(error)}`));
  }
  // Anything spawned but not yet registered (a signal during startup).
  await stopAllGroups();
  say('stopped');
  process.exit(exitCode);
}

/** Streams a child's output to the console, each line prefixed with its name; calls onLine per line. */
function forwardOutput(group: ChildGroup, onLine?: (line: string) => void): void {
  const prefix = `[${group.name}]`;
  for (const stream of [group.child.stdout, group.child.stderr]) {
    if (!stream) continue;
    const lines = createInterface({ input: stream });
    lines.on('line', (line) => {
      console.log(`${prefix} ${line}`);
      onLine?.(line);
    });
  }
}

/** Runs a TypeScript entry point in its own process group through tsx's loader (no wrapper process). */
function startTsChild(name: string, entry: string, env: NodeJS.ProcessEnv): ChildGroup {
  return spawnGroup(name, process.execPath, ['--import', 'tsx', entry], { cwd: projectRoot, env });
}

function exitedError(group: ChildGroup): () => Error | undefined {
  return () => (group.hasExited() ? new Error(`${group.name} exited during startup (see its output above)`) : undefined);
}

const RESTART_FIRST_MS = 1_000;
const RESTART_MAX_MS = 30_000;
/** A child up this long counts as healthy again: its next crash restarts after the first delay. */
const HEALTHY_AFTER_MS = 60_000;

interface Supervised {
  /** The first process (startup waits on it: a child that cannot start at all stops the launcher). */
  first: ChildGroup;
  entry: Started;
}

/**
 * Runs an app child and starts it again whenever it dies (after 1 s, doubling to 30 s while it keeps
 * dying), so a crashed worker does not take the API, Temporal and FerretDB down with it.
 */
function supervise(name: string, entry: string, env: NodeJS.ProcessEnv, stopTimeoutMs: number, onLine?: (line: string) => void): Supervised {
  let current = startTsChild(name, entry, env);
  let delayMs = RESTART_FIRST_MS;
  let pending: NodeJS.Timeout | undefined;
  let stopped = false;
  const watch = (group: ChildGroup) => {
    forwardOutput(group, onLine);
    const startedAt = Date.now();
    void group.exited.then((status) => {
      if (shuttingDown || stopped) return;
      if (Date.now() - startedAt >= HEALTHY_AFTER_MS) delayMs = RESTART_FIRST_MS;
      say(`${name} exited unexpectedly (code ${status.code}, signal ${status.signal}); restarting it in ${delayMs / 1000} s`);
      pending = setTimeout(() => {
        if (shuttingDown || stopped) return;
        current = startTsChild(name, entry, env);
        say(`${name} restarted (pid ${current.pid})`);
        watch(current);
      }, delayMs);
      delayMs = Math.min(delayMs * 2, RESTART_MAX_MS);
    });
  };
  watch(current);
  const stop = async () => {
    stopped = true;
    clearTimeout(pending);
    await current.stop({ timeoutMs: stopTimeoutMs });
  };
  return { first: current, entry: { name, stop } };
}

/** New workflows go to the worker's version once it is current: no manual `set-current-version` locally. */
async function makeCurrent(env: NodeJS.ProcessEnv, namespace: string, version: WorkerVersion): Promise<void> {
  // The worker's own connection settings (TLS, API key) when TEMPORAL_ADDRESS is not the dev server.
  const connection = await Connection.connect(temporalConnectionOptions(env));
  try {
    // The server accepts a version only after its worker has polled: retried for up to 60 s.
    await makeVersionCurrent(connection.workflowService, namespace, version, { timeoutMs: 60_000 });
    say(`worker version ${shownVersion(version)} is current (runs pinned to other builds finish only on their own workers)`);
  } finally {
    await connection.close();
  }
}

interface DemoResult {
  created: boolean;
  store: Record<string, unknown>;
  api_key?: string | null;
  offers?: Array<Record<string, unknown>>;
  coupon?: Record<string, unknown> | null;
}

/** Runs the idempotent demo seed through the admin CLI and parses its JSON. */
async function seedDemo(env: NodeJS.ProcessEnv): Promise<DemoResult> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'admin/cli.ts', 'demo', '--json'], {
    cwd: projectRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the demo seed (npm run admin -- demo) did not finish within 60 s'));
    }, 60_000);
    child.once('exit', (exitCode) => {
      clearTimeout(timer);
      resolve(exitCode);
    });
  });
  if (code !== 0) throw new Error(`the demo seed failed (exit ${code}): ${(stderr || stdout).trim()}`);
  return JSON.parse(stdout) as DemoResult;
}

function formatPrice(offer: Record<string, unknown>): string {
  const prices = Array.isArray(offer.prices) ? (offer.prices as Array<Record<string, unknown>>) : [];
  const price = prices.find((p) => p.default) ?? prices[0];
  if (!price || typeof price.amount !== 'number') return '';
  const cycle = offer.billing_cycle ?? offer.billingCycle;
  return `${String(price.currency).toUpperCase()} ${(price.amount / 100).toFixed(2)}${cycle ? ` / ${String(cycle)}` : ''}`;
}

function printBanner(info: {
  apiBase: string;
  /** GET /metrics of the API and of the worker (Prometheus text). */
  metricsUrls: { api: string; worker: string };
  uiUrl: string | undefined;
  temporalAddress: string;
  namespace: string;
  mongoUri: string;
  /** Mailpit's web inbox; undefined when SMTP_URL sends mail elsewhere. */
  inboxUrl: string | undefined;
  smtpUrl: string;
  localData: string[];
  demo: DemoResult;
}): void {
  const { demo } = info;
  const rule = '─'.repeat(72);
  const lines = [
    '',
    rule,
    '  Billing API is running',
    `  API base URL      ${info.apiBase}`,
    `  API metrics       ${info.metricsUrls.api}`,
    `  Worker metrics    ${info.metricsUrls.worker}`,
    `  Temporal Web UI   ${info.uiUrl ?? '(external Temporal: use its own UI)'}`,
    `  Temporal          ${info.temporalAddress} (namespace ${info.namespace})`,
    `  MongoDB           ${info.mongoUri}`,
    `  Mail inbox        ${info.inboxUrl ?? `(SMTP_URL: ${shownSmtp(info.smtpUrl)})`}`,
  ];
  if (info.localData.length > 0) lines.push(`  Local data        ${info.localData.join(', ')}`);
  lines.push('');
  const store = demo.store;
  const storeLabel = `"${String(store.name ?? 'Demo Store')}" (${String(store._id ?? store.id)})`;
  if (demo.created && demo.api_key) {
    lines.push(`  Demo store ${storeLabel} created.`);
    lines.push(`  API key (shown once, save it now): ${demo.api_key}`);
    for (const offer of demo.offers ?? []) {
      lines.push(`    offer  ${String(offer._id ?? offer.id)}  ${String(offer.name)}  ${String(offer.type ?? '')}  ${formatPrice(offer)}`);
    }
    const coupon = demo.coupon;
    if (coupon) {
      const percent = coupon.percent_off ?? coupon.percentOff;
      lines.push(`    coupon ${String(coupon.code ?? coupon._id)}${percent ? `  ${String(percent)}% off` : ''}`);
    }
    lines.push(`  Try: curl -H "Authorization: Bearer ${demo.api_key}" ${info.apiBase}/account`);
  } else {
    lines.push(`  Demo store ${storeLabel} exists; its API key was shown on first start`);
    lines.push('  (npm run admin -- ... can create another key).');
  }
  lines.push('', '  Press Ctrl-C to stop.', rule, '');
  console.log(lines.join('\n'));
}

async function main(): Promise<void> {
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  const localData: string[] = [];

  let mongoUri = process.env.MONGODB_URI;
  if (mongoUri) {
    say(`MongoDB: using MONGODB_URI (${mongoUri})`);
  } else {
    const port = await portFor('FerretDB', 'FERRETDB_PORT', defaultPorts.ferretDb);
    const ferretDir = join(dataDir, 'ferretdb');
    say(`starting FerretDB on 127.0.0.1:${port} (data in ${shown(ferretDir)}/)`);
    const ferret = await startFerretDb({ dataDir: ferretDir, port });
    started.push({ name: 'FerretDB', stop: ferret.stop });
    mongoUri = ferret.uri;
    localData.push(`${shown(ferretDir)}/`);
    say(`FerretDB ready at ${mongoUri} (log: ${shown(ferret.logFile)})`);
  }

  let temporalAddress = process.env.TEMPORAL_ADDRESS;
  let uiUrl: string | undefined;
  if (temporalAddress) {
    say(`Temporal: using TEMPORAL_ADDRESS (${temporalAddress})`);
  } else {
    const port = await portFor('Temporal', 'TEMPORAL_PORT', defaultPorts.temporal);
    const uiPort = await portFor('Temporal Web UI', 'TEMPORAL_UI_PORT', defaultPorts.temporalUi);
    const dbFile = join(dataDir, 'temporal.db');
    say(`starting the Temporal dev server on 127.0.0.1:${port}, Web UI on ${uiPort} (data in ${shown(dbFile)})`);
    const temporal = await startTemporalDevServer({ dbFile, port, uiPort });
    started.push({ name: 'Temporal dev server', stop: temporal.stop });
    temporalAddress = temporal.address;
    uiUrl = temporal.uiUrl;
    localData.push(shown(dbFile));
    // WAL mode is what keeps the dev server fast on SQLite; its -wal file proves the pragma took.
    await waitFor(() => existsSync(`${dbFile}-wal`), { timeoutMs: 10_000, description: `${shown(dbFile)}-wal` }).then(
      () => say(`Temporal ready at ${temporalAddress} (SQLite in WAL mode; log: ${shown(temporal.logFile)})`),
      () => say(`warning: ${shown(dbFile)}-wal did not appear; the dev server may not be running SQLite in WAL mode`),
    );
  }

  let smtpUrl = process.env.SMTP_URL;
  let inboxUrl: string | undefined;
  if (smtpUrl) {
    say(`mail: using SMTP_URL (${shownSmtp(smtpUrl)})`);
  } else {
    const smtpPort = await portFor('Mailpit SMTP', 'MAILPIT_SMTP_PORT', defaultPorts.mailpitSmtp);
    const uiPort = await portFor('Mailpit inbox', 'MAILPIT_UI_PORT', defaultPorts.mailpitUi);
    const dbFile = join(dataDir, 'mailpit.db');
    say(`starting Mailpit: SMTP on 127.0.0.1:${smtpPort}, inbox on ${uiPort} (mail kept in ${shown(dbFile)})`);
    const mailpit = await startMailpit({ dbFile, smtpPort, uiPort });
    started.push({ name: 'Mailpit', stop: mailpit.stop });
    smtpUrl = mailpit.smtpUrl;
    inboxUrl = mailpit.uiUrl;
    localData.push(shown(dbFile));
    say(`Mailpit ready: the worker's e-mails land in ${inboxUrl} (log: ${shown(mailpit.logFile)})`);
  }

  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const apiPort = await portFor('API', 'PORT', defaultPorts.api);
  const apiMetricsPort = await portFor('API metrics', 'API_METRICS_PORT', defaultPorts.apiMetrics);
  const workerMetricsPort = await portFor('worker metrics', 'WORKER_METRICS_PORT', defaultPorts.workerMetrics);
  // The worker's version, fixed here so the worker and the launcher agree on it (BUILD_ID passed on).
  const workerVersion = workerVersionFromEnv(process.env);
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    ...(workerVersion ? { BUILD_ID: workerVersion.buildId } : {}),
    // The local stack is development (http://localhost URLs, the test payment connection); production is the processes' default.
    NODE_ENV: process.env.NODE_ENV ?? 'development',
    ...(process.env.SECRETS_KEY || process.env.SECRETS_KEY_FILE ? {} : { SECRETS_KEY_FILE: secretsKeyFile() }),
    MONGODB_URI: mongoUri,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_NAMESPACE: namespace,
    SMTP_URL: smtpUrl,
    PORT: String(apiPort),
    API_METRICS_PORT: String(apiMetricsPort),
    WORKER_METRICS_PORT: String(workerMetricsPort),
  };

  say('starting the worker');
  let workerReady = false;
  const { first: worker, entry: workerEntry } = supervise('worker', 'worker/main.ts', childEnv, 35_000, (line) => {
    if (line.includes('worker ready')) workerReady = true;
  });
  started.push(workerEntry);

  say(`starting the API on port ${apiPort}`);
  const { first: api, entry: apiEntry } = supervise('api', 'api/server.ts', childEnv, 15_000);
  started.push(apiEntry);

  const apiOrigin = `http://localhost:${apiPort}`;
  await Promise.all([
    // Bundling the workflows takes a while on a small machine.
    waitFor(() => workerReady, {
      timeoutMs: 120_000,
      intervalMs: 200,
      description: 'the worker to print "worker ready"',
      abortIf: exitedError(worker),
    }),
    // Any JSON answer (a 401 without a key included) means the API is listening and routing.
    waitFor(
      async () => {
        const response = await fetch(`${apiOrigin}/v1/account`, { signal: AbortSignal.timeout(2_000) });
        await response.json();
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: `the API to answer GET ${apiOrigin}/v1/account`, abortIf: exitedError(api) },
    ),
  ]);
  if (workerVersion) await makeCurrent(childEnv, namespace, workerVersion);
  say('worker and API are ready; seeding the demo store');

  const demo = await seedDemo(childEnv);
  const metricsUrls = { api: `http://localhost:${apiMetricsPort}/metrics`, worker: `http://localhost:${workerMetricsPort}/metrics` };
  printBanner({ apiBase: `${apiOrigin}/v1`, metricsUrls, uiUrl, temporalAddress, namespace, mongoUri, inboxUrl, smtpUrl, localData, demo });
}

main().catch((error: unknown) => {
  console.error(`[start] failed: ${error instanceof Error ? error.message : String(error)}`);
  void shutdown(1);
});
