// What this tests: the worker's tuning from the environment (worker/tuning.ts): defaults, each bound
// read from its variable, malformed or out-of-range values refused at start, and the Worker options.
import { describe, expect, it } from 'vitest';
import { DEFAULT_WORKER_TUNING, workerTuningFromEnv, workerTuningOptions } from '../../worker/tuning';

describe('worker tuning from the environment', () => {
  it('an empty environment gives the defaults, with a bounded workflow cache', () => {
    expect(workerTuningFromEnv({})).toEqual(DEFAULT_WORKER_TUNING);
    expect(DEFAULT_WORKER_TUNING.maxCachedWorkflows).toBeLessThan(2_310);
  });

  it('each variable sets its bound', () => {
    const tuning = workerTuningFromEnv({
      WORKER_MAX_CACHED_WORKFLOWS: '300',
      WORKER_WORKFLOW_TASK_SLOTS: '20',
      WORKER_ACTIVITY_TASK_SLOTS: '50',
      WORKER_LOCAL_ACTIVITY_SLOTS: '60',
      WORKER_WORKFLOW_TASK_POLLERS: '4',
      WORKER_ACTIVITY_TASK_POLLERS: '3',
    });
    expect(tuning).toEqual({
      maxCachedWorkflows: 300,
      maxConcurrentWorkflowTaskExecutions: 20,
      maxConcurrentActivityTaskExecutions: 50,
      maxConcurrentLocalActivityExecutions: 60,
      workflowTaskPollers: 4,
      activityTaskPollers: 3,
    });
  });

  it.each([
    ['WORKER_MAX_CACHED_WORKFLOWS', '0'],
    ['WORKER_MAX_CACHED_WORKFLOWS', '1.5'],
    ['WORKER_MAX_CACHED_WORKFLOWS', 'lots'],
    ['WORKER_MAX_CACHED_WORKFLOWS', '100001'],
    ['WORKER_WORKFLOW_TASK_SLOTS', '-1'],
    ['WORKER_ACTIVITY_TASK_POLLERS', '0'],
  ])('%s=%s is refused with its name and range', (name, value) => {
    expect(() => workerTuningFromEnv({ [name]: value })).toThrow(new RegExp(`${name} must be a whole number from \\d+ to \\d+, not '${value}'`));
  });

  it('more workflow-task slots than cached workflows is refused (Temporal would silently cap them)', () => {
    expect(() => workerTuningFromEnv({ WORKER_MAX_CACHED_WORKFLOWS: '10', WORKER_WORKFLOW_TASK_SLOTS: '20' })).toThrow(/must not exceed/);
  });

  it('the Worker options carry every bound', () => {
    expect(workerTuningOptions(workerTuningFromEnv({ WORKER_MAX_CACHED_WORKFLOWS: '300', WORKER_WORKFLOW_TASK_POLLERS: '4' }))).toMatchObject({
      maxCachedWorkflows: 300,
      workflowTaskPollerBehavior: { type: 'simple-maximum', maximum: 4 },
    });
  });
});
