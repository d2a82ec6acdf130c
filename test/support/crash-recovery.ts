// The crash-recovery harness: a doomed worker process (test/support/crash-worker.ts) that holds one
// activity after doing its work, and a survivor worker in this process that starts polling the moment
// the doomed one is SIGKILLed. `recovered` measures from the kill to the path's visible completion;
// each measurement is also written to test/artifacts/crash-recovery/<path>.json (docs/operations.md quotes them).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker } from '@temporalio/worker';
import { spawnGroup, type ChildGroup } from '../../temporal-dev/processes';
import { waitFor, type TestMongo, type TestTemporal } from './env';
import { createTestWorker } from './worker';
import { testCa } from './webhook-receiver';

const root = fileURLToPath(new URL('../..', import.meta.url));
const figuresDir = join(root, 'test/artifacts/crash-recovery');

/** The recovery bound the issue sets and docs/operations.md promises. */
export const RECOVERY_BOUND_MS = 15_000;

export interface CrashScenario {
  /** Resolves once the doomed worker holds the activity; then kills it and starts the survivor. */
  killWhenHeld(timeoutMs?: number): Promise<void>;
  /** Waits for `done` (polled), returns the milliseconds since the kill and records them for `path`. */
  recovered<T>(path: string, done: () => Promise<T | null | undefined | false>, timeoutMs?: number): Promise<{ ms: number; value: T }>;
  stop(): Promise<void>;
}

export async function crashScenario(mongo: TestMongo, temporal: TestTemporal, taskQueue: string, holdActivity: string): Promise<CrashScenario> {
  const ca = await testCa();
  const webhooks = { allowedHosts: ['localhost'], ca: ca.caCert };
  // Created now (bundling takes seconds), polling only after the kill: the doomed worker gets every task until then.
  const survivor: Worker = await createTestWorker(mongo, temporal, taskQueue, { webhooks });
  const doomed = await startDoomed(mongo, temporal, taskQueue, holdActivity, ca.caFile);
  let running: Promise<void> | null = null;
  let killedAt = 0;
  return {
    async killWhenHeld(timeoutMs = 60_000) {
      await waitFor(() => doomed.output().includes(`holding ${holdActivity}`), {
        timeoutMs,
        intervalMs: 50,
        description: `the doomed worker to hold ${holdActivity}`,
        abortIf: () => (doomed.group.hasExited() ? new Error(`the doomed worker exited:\n${doomed.output()}`) : undefined),
      });
      running = survivor.run();
      killedAt = Date.now();
      await doomed.group.stop({ signal: 'SIGKILL' });
    },
    async recovered(path, done, timeoutMs = 60_000) {
      const value = await waitFor(done, { timeoutMs, intervalMs: 100, description: `${path} to complete on the survivor` });
      const ms = Date.now() - killedAt;
      recordFigure(path, holdActivity, ms);
      return { ms, value: value as never };
    },
    async stop() {
      await doomed.group.stop({ signal: 'SIGKILL' });
      // A survivor never run (the hold never came) still holds the test's connection: run it to shut it down.
      running ??= survivor.run();
      if (survivor.getState() === 'RUNNING') survivor.shutdown();
      await running.catch(() => undefined);
    },
  };
}

async function startDoomed(mongo: TestMongo, temporal: TestTemporal, taskQueue: string, holdActivity: string, caFile: string) {
  let output = '';
  const group: ChildGroup = spawnGroup('crash-worker', `${root}node_modules/.bin/tsx`, [`${root}test/support/crash-worker.ts`], {
    cwd: root,
    env: {
      ...process.env,
      MONGODB_DB: mongo.db.databaseName,
      TEMPORAL_NAMESPACE: temporal.namespace,
      TEMPORAL_TASK_QUEUE: taskQueue,
      CRASH_HOLD_ACTIVITY: holdActivity,
      WEBHOOK_ALLOWED_HOSTS: 'localhost',
      WEBHOOK_CA_FILE: caFile,
    },
  });
  for (const stream of [group.child.stdout!, group.child.stderr!]) stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitFor(() => output.includes('ready'), {
    timeoutMs: 90_000,
    intervalMs: 100,
    description: 'the doomed worker to poll',
    abortIf: () => (group.hasExited() ? new Error(`the doomed worker exited:\n${output}`) : undefined),
  });
  return { group, output: () => output };
}

function recordFigure(path: string, activity: string, ms: number): void {
  mkdirSync(figuresDir, { recursive: true });
  const figure = { path, heldActivity: activity, recoveredMs: ms, boundMs: RECOVERY_BOUND_MS, at: new Date().toISOString() };
  writeFileSync(join(figuresDir, `${path.replace(/[^a-z0-9]+/gi, '-')}.json`), `${JSON.stringify(figure, null, 2)}\n`);
  console.log(`crash recovery: ${path} (${activity} held) completed ${ms} ms after the kill`);
}
