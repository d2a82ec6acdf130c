// One run of the usage-period workflow: its queryable state and its steps — open the cycle's period
// (or wait while none can open), recompute it until it is to close, close it and charge it.
import { allHandlersFinished, condition, continueAsNew, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { WORKER_GONE_AFTER } from '../lib/timeouts';
import { clockNow, clockNowSeconds, clockWait, onTestClock } from '../lib/clock';
import type { PeriodRef } from '../../activities/usage';
import { nextUsageStep, RECOMPUTE_INTERVAL_SECONDS, USAGE_HISTORY_EVENTS_LIMIT, type UsageStep } from '../../domain/usage-periods';
import type { UsageWorkflowInput, UsageWorkflowState } from './messages';

// MongoDB reads and writes: quick, retried until they succeed.
const records = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
// Closing waits (by failing) while ingestion batches for the period are in flight: patient retries.
const closing = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '2 minutes' },
});
// The charge workflow answers once the provider did; its key makes a retry a replay.
const payments = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '2 seconds', maximumInterval: '5 minutes' },
});

/** Workflow time in Unix seconds: the test clock's when attached (Date is deterministic in the sandbox). */
const nowSeconds = clockNowSeconds;

type CloseStep = Extract<UsageStep, { kind: 'close' }>;

export class UsagePeriodRun {
  readonly state: UsageWorkflowState;
  private recomputeRequested = false;
  private interval = RECOMPUTE_INTERVAL_SECONDS;
  private historyLimit = USAGE_HISTORY_EVENTS_LIMIT;

  constructor(private readonly input: UsageWorkflowInput) {
    this.state = { subscription: input.subscriptionId, phase: 'opening', reason: null, open: null, last_closed: null };
  }

  /** The recompute signal: the current wait ends now. */
  requestRecompute(): void {
    this.recomputeRequested = true;
  }

  /** The open period of the current cycle, waiting (and continuing as new) while none can open; or why usage is finished. */
  async openPeriod(): Promise<{ open: PeriodRef } | { finished: string }> {
    for (;;) {
      this.state.phase = 'opening';
      const prepared = await records.prepareUsagePeriod({ ...this.input, now: nowSeconds() });
      this.interval = prepared.recomputeEverySeconds;
      this.historyLimit = prepared.historyEventsLimit ?? USAGE_HISTORY_EVENTS_LIMIT;
      if (prepared.kind === 'open') return { open: prepared.period };
      this.state.reason = prepared.reason;
      if (prepared.kind === 'finished') {
        this.state.phase = 'finished';
        return { finished: prepared.reason };
      }
      this.state.phase = 'waiting';
      await this.waitUntil(onTestClock() ? null : nowSeconds() + this.interval);
      await this.continueAsNewIfHistoryLong();
    }
  }

  /** Recomputes the open period (pulling its end in at the threshold) until it is to close; the period as it then is. */
  async watch(opened: PeriodRef): Promise<{ period: PeriodRef; close: CloseStep }> {
    this.state.phase = 'open';
    this.state.reason = null;
    let period = opened;
    for (;;) {
      const computed = await records.recomputeUsagePeriod({ ...this.input, periodId: period.id, now: nowSeconds() });
      this.state.open = computed.period;
      const step = nextUsageStep({
        now: nowSeconds(),
        end: period.end,
        thresholdBoundary: period.threshold_boundary,
        chargeable: computed.chargeable,
        thresholdReached: computed.thresholdReached,
        interval: this.routineInterval(),
        prompt: patched('usage-threshold-close-prompt'),
      });
      if (step.kind === 'close') return { period, close: step };
      if (step.kind === 'move_end') {
        period = await records.moveUsagePeriodEnd({ ...this.input, periodId: period.id, end: step.end });
        continue;
      }
      await this.waitUntil(step.until);
      await this.continueAsNewIfHistoryLong();
    }
  }

  /** Closes the period and charges it once (through the charge workflow) when it has something to charge. */
  async closeAndCharge(period: PeriodRef, close: CloseStep): Promise<void> {
    this.state.phase = 'closing';
    const closed = await closing.closeUsagePeriod({ ...this.input, periodId: period.id, reason: close.reason, end: close.end, now: nowSeconds() });
    this.state.open = null;
    let charge: string | null = closed.period.charge;
    if (closed.chargeNeeded) {
      this.state.phase = 'charging';
      charge = (await payments.chargeUsagePeriod({ ...this.input, periodId: period.id })).charge;
    }
    this.state.last_closed = { id: period.id, close_reason: close.reason, amount_total: closed.amount_total, charge };
  }

  /**
   * Sleeps until `until` (Unix seconds; null: no time of its own) or a recompute signal. On a test clock
   * the routine recomputes follow the clock's moves instead (each tick is when something may have
   * changed): a tick every 10 clock minutes would make an advance of months take thousands of steps.
   */
  private async waitUntil(until: number | null): Promise<void> {
    const ms = until === null ? undefined : until * 1000 - clockNow();
    if ((ms === undefined || ms > 0) && !this.recomputeRequested) await clockWait(() => this.recomputeRequested, ms, { anyTick: true });
    this.recomputeRequested = false;
  }

  /** Seconds between routine recomputes; none on a test clock (see waitUntil). */
  private routineInterval(): number {
    return onTestClock() ? Number.POSITIVE_INFINITY : this.interval;
  }

  /**
   * A long wait (a quarter's recomputes, a pause) would outgrow Temporal's history limit: start a fresh
   * run, which finds the open period again in the usage state (prepareUsagePeriod).
   */
  private async continueAsNewIfHistoryLong(): Promise<void> {
    const info = workflowInfo();
    if (!info.continueAsNewSuggested && info.historyLength < this.historyLimit) return;
    // Runs recorded before this check existed replay without it.
    if (!patched('usage-continue-as-new-on-long-history')) return;
    await condition(allHandlersFinished);
    await continueAsNew<(input: UsageWorkflowInput) => Promise<{ finished: string } | void>>(this.input);
  }
}
