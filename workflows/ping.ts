// A no-op workflow and a one-activity workflow: the smallest units the baseline benchmark
// and the worker smoke tests measure Temporal itself with.
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { ping } = proxyActivities<Activities>({ startToCloseTimeout: '10 seconds' });

export async function noopWorkflow(): Promise<string> {
  return 'done';
}

export async function pingWorkflow(): Promise<string> {
  return ping();
}

/** Sleeps for the given duration of workflow time, then answers: proves time skipping works. */
export async function sleepWorkflow(ms: number): Promise<number> {
  await sleep(ms);
  return ms;
}
