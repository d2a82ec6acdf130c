// The usage-period workflow's activities and the usage routine: each one a call into
// services/usage/periods.ts and services/usage/routine.ts.
import { RECOMPUTE_INTERVAL_SECONDS, USAGE_HISTORY_EVENTS_LIMIT, type CloseReason } from '../domain/usage-periods';
import type { UsageWorkflowInput } from '../workflows/usage-periods/messages';
import type { UsageDeps } from '../services/usage/shared';
import {
  chargeUsagePeriod,
  closeUsagePeriod,
  moveUsagePeriodEnd,
  prepareUsagePeriod,
  recomputeUsagePeriod,
  type ChargeResult,
  type CloseResult,
  type PeriodRef,
  type PrepareResult,
  type RecomputeResult,
} from '../services/usage/periods';
import { runUsageRoutine } from '../services/usage/routine';

export type { ChargeResult, CloseResult, PeriodRef, PrepareResult, RecomputeResult } from '../services/usage/periods';

type WithStore = UsageWorkflowInput;

export function createUsageActivities(deps: UsageDeps) {
  const { db } = deps;
  return {
    /** Inherits the offer's rows once, then finds or opens the period of the current cycle. */
    async prepareUsagePeriod(input: WithStore & { now: number }): Promise<PrepareResult> {
      return {
        ...(await prepareUsagePeriod(db, input)),
        recomputeEverySeconds: deps.usageRecomputeSeconds ?? RECOMPUTE_INTERVAL_SECONDS,
        historyEventsLimit: deps.usageHistoryEventsLimit ?? USAGE_HISTORY_EVENTS_LIMIT,
      };
    },
    /** Prices the open period now; says whether the threshold is reached and the subscription chargeable. */
    async recomputeUsagePeriod(input: WithStore & { periodId: string; now: number }): Promise<RecomputeResult> {
      return recomputeUsagePeriod(db, input);
    },
    /** The threshold was reached: the open period now ends at `end`. */
    async moveUsagePeriodEnd(input: WithStore & { periodId: string; end: number }): Promise<PeriodRef> {
      return moveUsagePeriodEnd(db, input);
    },
    /** Closes the period with its final lines (retried while ingestion batches for it are in flight). */
    async closeUsagePeriod(input: WithStore & { periodId: string; reason: CloseReason; end: number; now: number }): Promise<CloseResult> {
      return closeUsagePeriod(db, input);
    },
    /** Charges a closed period once (key `usage:<period id>`) through the charge workflow. */
    async chargeUsagePeriod(input: WithStore & { periodId: string }): Promise<ChargeResult> {
      return chargeUsagePeriod(deps, input);
    },
    /** The usage routine: starts the usage workflow of new subscriptions of offers with usage rows. */
    async runUsageRoutine(input: { now?: number } = {}): Promise<{ started: number; reported: number }> {
      return runUsageRoutine(deps, input.now ?? Date.now());
    },
  };
}
