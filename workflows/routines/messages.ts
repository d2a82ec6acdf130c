// What the routines (workflows/routines/workflow.ts) share with their callers: inputs, the `state` query and
// the `run_now` signal (support staff: `npm run temporal -- workflow signal --name run_now ...`).
import { defineQuery, defineSignal } from '@temporalio/workflow';

/** The registered workflow names (services/operations/routines.ts starts them without importing the workflows). */
export const EVENT_SWEEPER_WORKFLOW = 'eventSweeperWorkflow';
export const USAGE_ROUTINE_WORKFLOW = 'usageRoutineLoopWorkflow';

export interface RoutineState {
  runs: number;
  /** ISO times of the last run and of the next one due. */
  last_run_at: string | null;
  next_run_at: string | null;
  /** What the last run found (events re-driven, usage workflows started) and the total since started. */
  last_found: number | null;
  found_total: number;
  last_error: string | null;
}

export interface RoutineInput {
  everyMs: number;
  /** The counts so far, handed over by continue-as-new. */
  carried?: RoutineState;
}

export interface EventSweeperInput extends RoutineInput {
  /** Only events written at least this long ago: younger ones are still being dispatched by their writer. */
  olderThanMs: number;
  limit: number;
}

export const routineStateQuery = defineQuery<RoutineState>('state');
export const runNowSignal = defineSignal('run_now');
