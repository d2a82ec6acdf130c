// One subscription's usage periods (`usage/<sub_id>`): opens the period of the current cycle
// (inheriting the offer's usage rows on its first run), recomputes it every 10 minutes and on the
// `recompute` signal, closes it at its end, at the billing threshold or when the subscription stops
// being chargeable, charges it once (key `usage:<period id>`) and continues as new for the next
// period (usage-periods-state.ts has the steps).
import { allHandlersFinished, condition, continueAsNew, setHandler } from '@temporalio/workflow';
import { UsagePeriodRun } from './state';
import { joinClock, leaveClock } from '../lib/clock';
import { recomputeSignal, usageStateQuery, type UsageWorkflowInput } from './messages';

// Versioning AUTO_UPGRADE (workflows/versioned.ts): usage periods last as long as their subscription: they move to the current build; changes keep patched().
export async function usagePeriodsWorkflow(input: UsageWorkflowInput): Promise<{ finished: string } | void> {
  const run = new UsagePeriodRun(input);
  setHandler(recomputeSignal, () => run.requestRecompute());
  setHandler(usageStateQuery, () => run.state);
  await joinClock(input.testClock);

  const opened = await run.openPeriod();
  if ('finished' in opened) {
    await condition(allHandlersFinished);
    await leaveClock();
    return opened;
  }
  const { period, close } = await run.watch(opened.open);
  await run.closeAndCharge(period, close);
  // One run per period keeps the history small; the next run opens the next period.
  await condition(allHandlersFinished);
  await continueAsNew<typeof usagePeriodsWorkflow>(input);
}
