// The billing worker's concurrency and cache bounds (issue 30), each from the environment with a
// default chosen from measurement (docs/limits.md, "Worker tuning"): workflow-task, activity and
// local-activity slots, pollers, and the sticky workflow cache whose size the worker's RSS follows.
import type { WorkerOptions } from '@temporalio/worker';

export interface WorkerTuning {
  /** Workflows kept in memory between tasks (Temporal's default grows with the heap: 2,310 at 4 GiB). */
  maxCachedWorkflows: number;
  maxConcurrentWorkflowTaskExecutions: number;
  maxConcurrentActivityTaskExecutions: number;
  /** One per charge in flight (its hop to the subscription's workflow) plus the subscriptions' own. */
  maxConcurrentLocalActivityExecutions: number;
  workflowTaskPollers: number;
  activityTaskPollers: number;
}

/**
 * The defaults. The cache: 0.29 MiB of RSS per cached (subscription) workflow, measured by
 * `bench:worker-cache`; 1,000 of them are ~290 MiB beside the worker's ~480-650 MiB at rest, within a
 * 1 GiB budget (Temporal's default, 2,310 on a 4 GiB heap, took the soak's worker to 1,454 MiB).
 * Slots and pollers stay at Temporal's defaults: the charge bench's tasks wait on the dev server
 * and FerretDB, not on slots (docs/history/benchmarks.md).
 */
export const DEFAULT_WORKER_TUNING: WorkerTuning = {
  maxCachedWorkflows: 1_000,
  maxConcurrentWorkflowTaskExecutions: 40,
  maxConcurrentActivityTaskExecutions: 100,
  maxConcurrentLocalActivityExecutions: 100,
  workflowTaskPollers: 10,
  activityTaskPollers: 10,
};

/** The environment variable of each bound, and its accepted range (a cache of 0 would replay every task). */
const SETTINGS: Record<keyof WorkerTuning, { env: string; min: number; max: number }> = {
  maxCachedWorkflows: { env: 'WORKER_MAX_CACHED_WORKFLOWS', min: 2, max: 100_000 },
  maxConcurrentWorkflowTaskExecutions: { env: 'WORKER_WORKFLOW_TASK_SLOTS', min: 2, max: 1_000 },
  maxConcurrentActivityTaskExecutions: { env: 'WORKER_ACTIVITY_TASK_SLOTS', min: 1, max: 10_000 },
  maxConcurrentLocalActivityExecutions: { env: 'WORKER_LOCAL_ACTIVITY_SLOTS', min: 1, max: 10_000 },
  workflowTaskPollers: { env: 'WORKER_WORKFLOW_TASK_POLLERS', min: 2, max: 100 },
  activityTaskPollers: { env: 'WORKER_ACTIVITY_TASK_POLLERS', min: 1, max: 100 },
};

function wholeNumber(env: NodeJS.ProcessEnv, name: string, min: number, max: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be a whole number from ${min} to ${max}, not '${raw}'`);
  }
  return value;
}

/** The tuning the environment asks for, each unset bound at its default; a malformed one stops the worker at start. */
export function workerTuningFromEnv(env: NodeJS.ProcessEnv = process.env): WorkerTuning {
  const tuning = { ...DEFAULT_WORKER_TUNING };
  for (const key of Object.keys(SETTINGS) as (keyof WorkerTuning)[]) {
    const { env: name, min, max } = SETTINGS[key];
    tuning[key] = wholeNumber(env, name, min, max) ?? tuning[key];
  }
  // Temporal caps task slots at the cache size (a task needs its workflow cached): say so instead of a warning.
  if (tuning.maxConcurrentWorkflowTaskExecutions > tuning.maxCachedWorkflows) {
    throw new Error(
      `WORKER_WORKFLOW_TASK_SLOTS (${tuning.maxConcurrentWorkflowTaskExecutions}) must not exceed WORKER_MAX_CACHED_WORKFLOWS (${tuning.maxCachedWorkflows})`,
    );
  }
  return tuning;
}

/** The tuning as Worker options. */
export function workerTuningOptions(tuning: WorkerTuning): Partial<WorkerOptions> {
  return {
    maxCachedWorkflows: tuning.maxCachedWorkflows,
    maxConcurrentWorkflowTaskExecutions: tuning.maxConcurrentWorkflowTaskExecutions,
    maxConcurrentActivityTaskExecutions: tuning.maxConcurrentActivityTaskExecutions,
    maxConcurrentLocalActivityExecutions: tuning.maxConcurrentLocalActivityExecutions,
    workflowTaskPollerBehavior: { type: 'simple-maximum', maximum: tuning.workflowTaskPollers },
    activityTaskPollerBehavior: { type: 'simple-maximum', maximum: tuning.activityTaskPollers },
  };
}
