// How long one run of a long-lived workflow may grow before it continues as new. Temporal refuses a
// run's 2,001st update and terminates a run at 51,200 history events; a run here starts afresh when
// Temporal suggests it or well before either limit, after draining its handlers. While it drains, the
// updates whose callers retry (one-off charges, sent by a retried activity) are refused, so a steady
// stream of them cannot keep the run from ever finishing its handlers; their retry lands on the new run.
import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';

/** Updates and signals one run takes: half of Temporal's 2,000 updates, leaving room for those arriving while it drains. */
export const MESSAGES_PER_RUN = 1_000;
/** History events one run grows to: a fifth of Temporal's 51,200, so replaying a run on a new worker stays quick. */
export const EVENTS_PER_RUN = 10_000;

/** Failure type of an update refused while its run drains: retryable, the caller's retry reaches the next run. */
export const RUN_ROLLING_OVER = 'run_rolling_over';

export class RunLength {
  private handled = 0;
  /** The run is finishing its handlers before continuing as new. */
  draining = false;

  /** Counts one message (update or signal) this run took. */
  took(): void {
    this.handled += 1;
  }

  /** Temporal suggests a new run, or this run took enough messages or events. */
  full(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= EVENTS_PER_RUN || this.handled >= MESSAGES_PER_RUN;
  }

  /** Update validator: refuses (retryable) while the run drains, so its caller retries on the next run. */
  admit(): void {
    if (!this.draining) return;
    throw ApplicationFailure.create({ type: RUN_ROLLING_OVER, message: 'The workflow is continuing as new; retry the update.', nonRetryable: false });
  }
}
