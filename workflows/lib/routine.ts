// A routine as one long-lived workflow: run the step, wait its interval (or a `run_now` signal), run
// again; continue as new when the history grows, carrying the counts. One row in the Web UI for the
// routine's whole life instead of one per run; a failed step is recorded and tried at the next turn.
import { ActivityFailure, allHandlersFinished, condition, continueAsNew, setCurrentDetails, setHandler, workflowInfo } from '@temporalio/workflow';
import { routineStateQuery, runNowSignal, type RoutineInput, type RoutineState } from '../routines/messages';

/** Keeps each run's history well under the size where replays on a new worker get slow. */
const HISTORY_EVENTS_LIMIT = 2_000;

export async function runRoutine(input: RoutineInput, found: string, step: () => Promise<number>): Promise<never> {
  const state: RoutineState = input.carried ?? { runs: 0, last_run_at: null, next_run_at: null, last_found: null, found_total: 0, last_error: null };
  let wanted = true; // the first turn runs at once: a worker (re)start sweeps what waited meanwhile
  setHandler(routineStateQuery, () => state);
  setHandler(runNowSignal, () => void (wanted = true));
  for (;;) {
    if (!wanted) await condition(() => wanted, input.everyMs, { summary: `wait ${Math.round(input.everyMs / 1000)} s or run_now` });
    wanted = false;
    await runOnce(state, step);
    state.next_run_at = new Date(Date.now() + input.everyMs).toISOString();
    setCurrentDetails(detailsOf(state, found));
    const info = workflowInfo();
    if (!wanted && (info.continueAsNewSuggested || info.historyLength > HISTORY_EVENTS_LIMIT)) {
      // Its handlers are synchronous, so this waits for nothing today; it keeps a future async one whole.
      await condition(allHandlersFinished);
      await continueAsNew<(input: RoutineInput) => Promise<never>>({ ...input, carried: state });
    }
  }
}

async function runOnce(state: RoutineState, step: () => Promise<number>): Promise<void> {
  try {
    const count = await step();
    state.last_found = count;
    state.found_total += count;
    state.last_error = null;
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    state.last_error = error.cause?.message ?? error.message;
  }
  state.runs++;
  state.last_run_at = new Date(Date.now()).toISOString();
}

function detailsOf(state: RoutineState, found: string): string {
  const last = state.last_error ? `failed: ${state.last_error}` : `${state.last_found} ${found}`;
  return `Run ${state.runs} at ${state.last_run_at}: ${last}. ${state.found_total} ${found} since start. Next run ${state.next_run_at}.`;
}
