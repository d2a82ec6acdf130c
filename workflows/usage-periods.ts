// One subscription's usage periods (`usage/<sub_id>`): opens the period of the current cycle
// (inheriting the offer's usage rows on its first run), recomputes it every 10 minutes and on the
// `recompute` signal, closes it at its end (period_end), at the billing threshold (its end pulled in;
// the next period opens from there to the cycle end) or when the subscription stops being
// chargeable (subscription_ended), then charges it once through the charge workflow (key
// `usage:<period id>`) and continues as new for the next period — and also while a period stays open
// or no period can open (paused), once the history grows long. Also the usage routine's workflow.
import { allHandlersFinished, condition, continueAsNew, patched, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { PeriodRef } from '../activities/usage';
import { nextUsageStep, RECOMPUTE_INTERVAL_SECONDS, USAGE_HISTORY_EVENTS_LIMIT, type UsageStep } from '../domain/usage-periods';
import { recomputeSignal, usageStateQuery, type UsageWorkflowInput, type UsageWorkflowState } from './usage-periods-messages';

// MongoDB reads and writes: quick, retried until they succeed.
const store = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
// Closing waits (by failing) while ingestion batches for the period are in flight: patient retries.
const closing = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '2 minutes' },
});
// The charge workflow answers once the provider did; its key makes a retry a replay.
const payments = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '2 seconds', maximumInterval: '5 minutes' },
});

/** Workflow time in Unix seconds (Date is deterministic inside the workflow sandbox). */
const nowSeconds = () => Math.floor(Date.now() / 1000);

export async function usagePeriodsWorkflow(input: UsageWorkflowInput): Promise<{ finished: string } | void> {
  const state: UsageWorkflowState = { subscription: input.subscriptionId, phase: 'opening', reason: null, open: null, last_closed: null };
  let recomputeRequested = false;
  setHandler(recomputeSignal, () => {
    recomputeRequested = true;
  });
  setHandler(usageStateQuery, () => state);

  /** Sleeps until `until` (Unix seconds) or a recompute signal, whichever comes first. */
  async function waitUntil(until: number): Promise<void> {
    const ms = until * 1000 - Date.now();
    if (ms > 0 && !recomputeRequested) await condition(() => recomputeRequested, ms);
    recomputeRequested = false;
  }

  /**
   * A long wait (a quarter's recomputes, a pause) would outgrow Temporal's history limit: start a fresh
   * run, which finds the open period again in the usage state (prepareUsagePeriod).
   */
  async function continueAsNewIfHistoryLong(): Promise<void> {
    const info = workflowInfo();
    if (!info.continueAsNewSuggested && info.historyLength < historyLimit) return;
    // Runs recorded before this check existed replay without it.
    if (!patched('usage-continue-as-new-on-long-history')) return;
    await condition(allHandlersFinished);
    await continueAsNew<typeof usagePeriodsWorkflow>(input);
  }

  let period: PeriodRef;
  let interval = RECOMPUTE_INTERVAL_SECONDS;
  let historyLimit = USAGE_HISTORY_EVENTS_LIMIT;
  for (;;) {
    state.phase = 'opening';
    const prepared = await store.prepareUsagePeriod({ ...input, now: nowSeconds() });
    interval = prepared.recomputeEverySeconds;
    historyLimit = prepared.historyEventsLimit ?? USAGE_HISTORY_EVENTS_LIMIT;
    if (prepared.kind === 'open') {
      period = prepared.period;
      break;
    }
    state.reason = prepared.reason;
    if (prepared.kind === 'finished') {
      state.phase = 'finished';
      await condition(allHandlersFinished);
      return { finished: prepared.reason };
    }
    state.phase = 'waiting';
    await waitUntil(nowSeconds() + interval);
    await continueAsNewIfHistoryLong();
  }

  state.phase = 'open';
  state.reason = null;
  let step: UsageStep;
  for (;;) {
    const computed = await store.recomputeUsagePeriod({ ...input, periodId: period.id, now: nowSeconds() });
    state.open = computed.period;
    step = nextUsageStep({
      now: nowSeconds(),
      end: period.end,
      thresholdBoundary: period.threshold_boundary,
      chargeable: computed.chargeable,
      thresholdReached: computed.thresholdReached,
      interval,
    });
    if (step.kind === 'close') break;
    if (step.kind === 'move_end') {
      period = await store.moveUsagePeriodEnd({ ...input, periodId: period.id, end: step.end });
      continue;
    }
    await waitUntil(step.until);
    await continueAsNewIfHistoryLong();
  }

  state.phase = 'closing';
  const closed = await closing.closeUsagePeriod({ ...input, periodId: period.id, reason: step.reason, end: step.end, now: nowSeconds() });
  state.open = null;
  let charge: string | null = closed.period.charge;
  if (closed.chargeNeeded) {
    state.phase = 'charging';
    charge = (await payments.chargeUsagePeriod({ ...input, periodId: period.id })).charge;
  }
  state.last_closed = { id: period.id, close_reason: step.reason, amount_total: closed.amount_total, charge };
  // One run per period keeps the history small; the next run opens the next period.
  await condition(allHandlersFinished);
  await continueAsNew<typeof usagePeriodsWorkflow>(input);
}

const routine = proxyActivities<Activities>({ startToCloseTimeout: '5 minutes', retry: { maximumAttempts: 3 } });

/** The usage routine (a schedule runs it every 10 minutes): starts usage for new subscriptions of usage offers. */
export async function usageRoutineWorkflow(): Promise<{ started: number }> {
  return routine.runUsageRoutine({});
}
