// The tests' side of test/support/fault-worker.ts: that worker in a process of its own (it SIGKILLs itself
// right after the provider approves a saved-card charge), and the charge a request gets once a survivor
// recovered it. Shared by the tests that kill a worker between the money and the order.
import { fileURLToPath } from 'node:url';
import { spawnGroup, type ChildGroup } from '../../temporal-dev/processes';
import { call, type TestApi } from './api';
import { waitFor } from './env';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface FaultWorker {
  group: ChildGroup;
  /** What the process printed so far (stdout and stderr). */
  output: () => string;
}

/** The fault worker on `taskQueue` against database `dbName`, once it polls; stopped again if it never does. */
export async function startFaultWorker(dbName: string, taskQueue: string): Promise<FaultWorker> {
  let output = '';
  const group = spawnGroup('fault-worker', `${root}node_modules/.bin/tsx`, [`${root}test/support/fault-worker.ts`], {
    cwd: root,
    env: { ...process.env, MONGODB_DB: dbName, TEMPORAL_TASK_QUEUE: taskQueue },
  });
  group.child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  group.child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    await waitFor(() => output.includes('ready'), {
      timeoutMs: 60_000,
      description: 'fault worker polling',
      abortIf: () => (group.hasExited() ? new Error(output) : undefined),
    });
  } catch (error) {
    await group.stop({ signal: 'SIGKILL' });
    throw error;
  }
  return { group, output: () => output };
}

/** The same one-off charge asked again under `key` until it is no longer 409 in use (recovery outlasted a request's wait); a replay's 200 reads as 201. */
export function chargeAfterRecovery(api: TestApi, storeKey: string, subscriptionId: string, key: string, amount: number) {
  return waitFor(
    async () => {
      const again = await call(api, storeKey, 'POST', `/v1/subscriptions/${subscriptionId}/charges`, {
        json: { amount },
        headers: { 'idempotency-key': key },
      });
      return again.status === 409 ? null : { ...again, status: again.status === 200 ? 201 : again.status };
    },
    { timeoutMs: 60_000, intervalMs: 1_000, description: 'the charge after recovery' },
  );
}
