// `npm start` (temporal-dev/launcher.ts) as a user runs it: a child process on free ports with a temp
// DATA_DIR prints a key that answers GET /v1/account and a Mailpit inbox that answers, keeps Temporal's SQLite in WAL mode, leaves no
// process behind on Ctrl-C (SIGINT to its process group), and on restart keeps the demo store and key;
// a worker killed under it is started again (with a growing delay) while the API keeps answering, and
// Ctrl-C while a replacement starts stops that one too.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../temporal-dev/servers';
import { projectRoot } from '../../../temporal-dev/tools';
import { waitFor } from '../../support/env';

// Two shared cores: the worker's workflow bundle alone can take a minute.
const STARTUP_MS = 240_000;
const SHUTDOWN_MS = 90_000;

interface Launch {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
  hasExited(): boolean;
}

let dataDir: string;
let env: NodeJS.ProcessEnv;
let ports: {
  api: number;
  apiMetrics: number;
  workerMetrics: number;
  ferretDb: number;
  temporal: number;
  temporalUi: number;
  mailpitSmtp: number;
  mailpitUi: number;
};
const launches: Launch[] = [];
const seenPids = new Set<number>();

function launch(): Launch {
  // detached: its own process group, as a terminal runs it, so SIGINT reaches it the way Ctrl-C does.
  const child = spawn(process.execPath, ['--import', 'tsx', 'temporal-dev/launcher.ts'], {
    cwd: projectRoot,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    let rest = '';
    stream.on('data', (chunk: Buffer) => {
      const parts = (rest + chunk.toString()).split('\n');
      rest = parts.pop()!;
      lines.push(...parts);
    });
  }
  let done = false;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => ((done = true), resolve(code))));
  const started: Launch = { child, lines, exited, hasExited: () => done };
  launches.push(started);
  return started;
}

const tail = (run: Launch) => run.lines.slice(-40).join('\n');

async function waitForBanner(run: Launch): Promise<void> {
  await waitFor(() => run.lines.some((line) => line.includes('Press Ctrl-C to stop.')), {
    timeoutMs: STARTUP_MS,
    intervalMs: 250,
    description: 'the launcher to print its banner',
    abortIf: () => (run.hasExited() ? new Error(`the launcher exited during startup:\n${tail(run)}`) : undefined),
  });
}

function bannerValue(run: Launch, pattern: RegExp): string | undefined {
  for (const line of run.lines) {
    const match = pattern.exec(line);
    if (match) return match[1];
  }
  return undefined;
}

/** Every process descended from `root` (Linux /proc), with its command line. */
function descendants(root: number): Map<number, string> {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces and parentheses): state, ppid, ...
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // The process ended while we listed it.
    }
  }
  const found = new Map<number, string>();
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [pid, ppid] of parents) {
      if (ppid !== parent || found.has(pid)) continue;
      let cmdline = '';
      try {
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      } catch {
        // Gone meanwhile.
      }
      found.set(pid, cmdline);
      queue.push(pid);
    }
  }
  return found;
}

/** Alive means present and not a zombie waiting for its parent to reap it. */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.setTimeout(2_000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('timeout', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/**
 * Ctrl-C, seen twice at once as `npm start`'s tsx wrapper passes it on, then: one graceful stop (never
 * "forcing shutdown"), the launcher exits 0, every process it started is gone and every port is closed.
 */
async function interruptAndCheckNothingLeft(run: Launch, children: Map<number, string>): Promise<void> {
  process.kill(-run.child.pid!, 'SIGINT');
  process.kill(-run.child.pid!, 'SIGINT');
  const code = await Promise.race([run.exited, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), SHUTDOWN_MS).unref())]);
  expect(code, `launcher output:\n${tail(run)}`).toBe(0);
  expect(countLines(run, 'forcing shutdown'), tail(run)).toBe(0);
  await waitFor(() => [...children.keys()].every((pid) => !isAlive(pid)), {
    timeoutMs: 15_000,
    description: 'every process the launcher started to be gone',
  }).catch((error: Error) => {
    const left = [...children].filter(([pid]) => isAlive(pid)).map(([pid, cmd]) => `${pid} ${cmd}`);
    throw new Error(`${error.message}; still running:\n${left.join('\n')}`);
  });
  for (const port of Object.values(ports)) expect(await portAnswers(port), `port ${port} still answers`).toBe(false);
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'billing-launcher-'));
  ports = {
    api: await freePort(),
    apiMetrics: await freePort(),
    workerMetrics: await freePort(),
    ferretDb: await freePort(),
    temporal: await freePort(),
    temporalUi: await freePort(),
    mailpitSmtp: await freePort(),
    mailpitUi: await freePort(),
  };
  env = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(ports.api),
    API_METRICS_PORT: String(ports.apiMetrics),
    WORKER_METRICS_PORT: String(ports.workerMetrics),
    FERRETDB_PORT: String(ports.ferretDb),
    TEMPORAL_PORT: String(ports.temporal),
    TEMPORAL_UI_PORT: String(ports.temporalUi),
    MAILPIT_SMTP_PORT: String(ports.mailpitSmtp),
    MAILPIT_UI_PORT: String(ports.mailpitUi),
    LOG_LEVEL: 'warn',
  };
  // The suite's servers are in these (global setup); the launcher must start its own.
  delete env.MONGODB_URI;
  delete env.TEMPORAL_ADDRESS;
  delete env.SMTP_URL;
});

afterAll(async () => {
  // A failed test may leave a stack running: kill the launcher's group and every group it made.
  for (const run of launches) {
    if (run.hasExited()) continue;
    for (const pid of descendants(run.child.pid!).keys()) seenPids.add(pid);
    try {
      process.kill(-run.child.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  for (const pid of seenPids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Not a group leader, or already gone.
    }
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const countLines = (run: Launch, text: string) => run.lines.filter((line) => line.includes(text)).length;
const launcherExited = (run: Launch) => () => (run.hasExited() ? new Error(`the launcher exited:\n${tail(run)}`) : undefined);

/** The pid (and process group) of the launcher's running worker. */
function workerPid(run: Launch): number {
  const [pid] = [...descendants(run.child.pid!)].find(([, command]) => command.includes('worker/main.ts')) ?? [];
  expect(pid, tail(run)).toBeDefined();
  seenPids.add(pid!);
  return pid!;
}

/** GET /healthz's status; 0 when nothing answers. */
async function healthStatus(): Promise<number> {
  try {
    return (await fetch(`http://localhost:${ports.api}/healthz`, { signal: AbortSignal.timeout(2_000) })).status;
  } catch {
    return 0;
  }
}

/** SIGKILLs the worker's group: the launcher says so, starts another, and the stack (API included) keeps working. */
async function killWorkerAndSeeItBack(run: Launch, key: string): Promise<void> {
  const readyBefore = countLines(run, '[worker] worker ready');
  process.kill(-workerPid(run), 'SIGKILL');
  const healthSeen: number[] = [];
  await waitFor(
    async () => {
      healthSeen.push(await healthStatus());
      return countLines(run, '[worker] worker ready') > readyBefore;
    },
    { timeoutMs: STARTUP_MS, intervalMs: 500, description: 'a new worker to print "worker ready"', abortIf: launcherExited(run) },
  );
  // The API stays up throughout the worker's absence.
  expect(new Set(healthSeen)).toEqual(new Set([200]));
  expect(run.lines.join('\n')).toMatch(/\[start\] worker exited unexpectedly \(code null, signal SIGKILL\); restarting it in 1 s/);
  expect(run.lines.join('\n')).toMatch(/\[start\] worker restarted \(pid \d+\)/);

  // Work that needs a worker: a session expired through its workflow (an update the new worker answers).
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const offers = (await (await fetch(`http://localhost:${ports.api}/v1/offers?limit=1`, { headers })).json()) as { data: Array<{ id: string }> };
  const created = await fetch(`http://localhost:${ports.api}/v1/checkout/sessions`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ offer: offers.data[0].id }),
  });
  const session = (await created.json()) as { id: string };
  expect(created.status).toBe(201);
  const expired = await fetch(`http://localhost:${ports.api}/v1/checkout/sessions/${session.id}/expire`, { method: 'POST', headers });
  expect([expired.status, ((await expired.json()) as { status: string }).status]).toEqual([200, 'expired']);
}

/** A second crash soon after waits twice as long; Ctrl-C while that replacement is still starting stops it too, and nothing restarts. */
async function killWorkerAgainAndInterruptItsRestart(run: Launch): Promise<void> {
  const restartedBefore = countLines(run, '[start] worker restarted');
  process.kill(-workerPid(run), 'SIGKILL');
  await waitFor(() => countLines(run, '[start] worker restarted') > restartedBefore, {
    timeoutMs: 30_000,
    intervalMs: 50,
    description: 'the launcher to restart the worker a second time',
    abortIf: launcherExited(run),
  });
  expect(run.lines.join('\n')).toMatch(/\[start\] worker exited unexpectedly \(code null, signal SIGKILL\); restarting it in 2 s/);
  const newPid = Number(
    /\[start\] worker restarted \(pid (\d+)\)/.exec(run.lines.filter((line) => line.includes('[start] worker restarted')).at(-1)!)![1],
  );
  const children = descendants(run.child.pid!);
  expect(children.has(newPid), `worker ${newPid} among the launcher's children`).toBe(true);
  for (const pid of children.keys()) seenPids.add(pid);
  const crashesBefore = countLines(run, 'exited unexpectedly');
  await interruptAndCheckNothingLeft(run, children);
  // The worker stopped by the shutdown is neither reported as a crash nor started again.
  expect([countLines(run, 'exited unexpectedly'), countLines(run, '[start] worker restarted')]).toEqual([crashesBefore, restartedBefore + 1]);
}

describe('npm start (temporal-dev/launcher.ts)', () => {
  let firstKey: string;

  it(
    'prints a key that answers GET /v1/account with 200, runs Temporal SQLite in WAL mode, and leaves no process or port behind on Ctrl-C',
    async () => {
      const run = launch();
      await waitForBanner(run);
      const base = bannerValue(run, /API base URL\s+(\S+)/);
      const key = bannerValue(run, /API key \(shown once, save it now\): (vk_live_[A-Za-z0-9]+)/);
      expect(base, tail(run)).toBe(`http://localhost:${ports.api}/v1`);
      expect(key, tail(run)).toBeDefined();
      firstKey = key!;

      const account = await fetch(`${base}/account`, { headers: { authorization: `Bearer ${firstKey}` } });
      const body = (await account.json()) as { object: string; name: string };
      expect([account.status, body.object]).toEqual([200, 'account']);
      expect(existsSync(join(dataDir, 'temporal.db-wal'))).toBe(true);
      expect(existsSync(join(dataDir, 'ferretdb'))).toBe(true);
      const inbox = bannerValue(run, /Mail inbox\s+(\S+)/);
      expect(inbox, tail(run)).toBe(`http://localhost:${ports.mailpitUi}`);
      const info = await fetch(`http://127.0.0.1:${ports.mailpitUi}/api/v1/info`);
      expect(info.status).toBe(200);
      // The banner's metrics URLs answer Prometheus text: the API's request histogram, the worker's SDK metrics.
      const apiMetrics = bannerValue(run, /API metrics\s+(\S+)/);
      const workerMetrics = bannerValue(run, /Worker metrics\s+(\S+)/);
      expect([apiMetrics, workerMetrics], tail(run)).toEqual([
        `http://localhost:${ports.apiMetrics}/metrics`,
        `http://localhost:${ports.workerMetrics}/metrics`,
      ]);
      expect(await (await fetch(apiMetrics!)).text()).toContain(
        'http_request_duration_seconds_count{method="GET",route="/v1/account",status_code="200"}',
      );
      await waitFor(async () => /^temporal_/m.test(await (await fetch(workerMetrics!)).text()), {
        timeoutMs: 30_000,
        description: `temporal_* metrics at ${workerMetrics}`,
      });

      const children = descendants(run.child.pid!);
      for (const pid of children.keys()) seenPids.add(pid);
      const commands = [...children.values()].join('\n');
      for (const part of ['ferretdb', 'temporal server start-dev', 'mailpit', 'worker/main.ts', 'api/server.ts']) expect(commands).toContain(part);

      await interruptAndCheckNothingLeft(run, children);
    },
    STARTUP_MS + SHUTDOWN_MS + 60_000,
  );

  it(
    'a restart on the same data keeps the demo store (no new key, the first still answers); a killed worker is restarted (1 s, then 2 s) while the API keeps answering, and Ctrl-C during a restart leaves nothing behind',
    async () => {
      expect(firstKey, 'the first start must have printed a key').toBeDefined();
      const run = launch();
      await waitForBanner(run);
      expect(run.lines.join('\n')).not.toMatch(/vk_live_/);
      expect(run.lines.some((line) => line.includes('exists; its API key was shown on first start'))).toBe(true);

      const account = await fetch(`http://localhost:${ports.api}/v1/account`, { headers: { authorization: `Bearer ${firstKey}` } });
      expect(account.status).toBe(200);

      await killWorkerAndSeeItBack(run, firstKey);
      await killWorkerAgainAndInterruptItsRestart(run);
    },
    STARTUP_MS + SHUTDOWN_MS + 60_000,
  );
});
