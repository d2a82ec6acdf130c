// The API (api/server.ts) and the worker (worker/main.ts) as real child processes, configured by
// environment as an operator runs them, each in its own process group so a stop leaves nothing behind.
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { spawnGroup, type ChildGroup } from '../../temporal-dev/processes';
import { freePort } from '../../temporal-dev/servers';
import { waitFor } from './env';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface AppProcess {
  group: ChildGroup;
  /** stdout and stderr so far (for failure messages). */
  output(): string;
}

export interface ApiProcess extends AppProcess {
  /** Origin, e.g. http://127.0.0.1:41234 (paths start with /v1). */
  url: string;
}

function spawnApp(name: string, entry: string, env: Record<string, string>): AppProcess {
  const group = spawnGroup(name, process.execPath, ['--import', 'tsx', entry], {
    cwd: root,
    env: { ...process.env, MONGODB_URI: inject('mongoUri'), TEMPORAL_ADDRESS: inject('temporalAddress'), ...env },
  });
  let output = '';
  for (const stream of [group.child.stdout!, group.child.stderr!]) stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { group, output: () => output };
}

/** Waits for `ready`; a process that exits first, or never gets ready, is stopped and reported with its output. */
async function whenReady(app: AppProcess, what: string, ready: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  try {
    await waitFor(ready, {
      timeoutMs,
      intervalMs: 250,
      description: what,
      abortIf: () => (app.group.hasExited() ? new Error(`${what}: exited during startup`) : undefined),
    });
  } catch (error) {
    await app.group.stop({ signal: 'SIGKILL' });
    throw new Error(`${(error as Error).message}\n${app.output().slice(-4000)}`, { cause: error });
  }
}

/** api/server.ts on a free port; resolves once it answers HTTP. `env` adds to the shared settings. */
export async function startApiProcess(env: Record<string, string>, timeoutMs = 180_000): Promise<ApiProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const app = spawnApp(`api-${port}`, 'api/server.ts', { PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: url, LOG_LEVEL: 'error', ...env });
  // Any answer means it listens (an unknown path without a key answers 404, or 429 once the address window is spent).
  await whenReady(app, `the API process on ${url} to answer`, async () => (await fetch(`${url}/v1/nothing`).catch(() => null)) !== null, timeoutMs);
  return { ...app, url };
}

/** worker/main.ts started; `ready` resolves once it prints "worker ready" (tests that watch its startup). */
export function launchWorkerProcess(env: Record<string, string>, timeoutMs = 180_000): { app: AppProcess; ready: Promise<void> } {
  // Unversioned, as createTestWorker's: no test makes a version of its queue current (docs/testing.md).
  const app = spawnApp('worker', 'worker/main.ts', { LOG_LEVEL: 'ERROR', WORKER_VERSIONING: 'off', ...env });
  return { app, ready: whenReady(app, 'the worker process to print "worker ready"', () => app.output().includes('worker ready'), timeoutMs) };
}

/** worker/main.ts; resolves once it prints "worker ready" (polling its task queue). */
export async function startWorkerProcess(env: Record<string, string>, timeoutMs = 180_000): Promise<AppProcess> {
  const { app, ready } = launchWorkerProcess(env, timeoutMs);
  await ready;
  return app;
}
