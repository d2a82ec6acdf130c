// One subscription's life (`subscription/<sub_id>`): it owns time — the trial's end, renewals at
// next_billing_at, dunning retries, the end of a scheduled cancellation or of the cycle limit — and
// serializes every action (updates) with those steps through one mutex (subscription-state.ts). It
// continues as new once per paid cycle; in canceled or expired it stays open, idle, for a reactivation.
import { allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import * as rules from '../domain/subscriptions';
import { LiveSubscription } from './subscription-state';
import { at, money, showProgress } from './lib/business-view';
import { clockNow, clockWait, leaveClock } from './lib/clock';
import {
  cancelUpdate,
  changeOfferUpdate,
  changePaymentMethodUpdate,
  oneOffChargeUpdate,
  pauseUpdate,
  reactivateUpdate,
  resumeUpdate,
  scheduleCancellationUpdate,
  subscriptionProviderSettledSignal,
  subscriptionStateQuery,
  type SubscriptionWorkflowInput,
} from './subscription-messages';

export async function subscriptionWorkflow(input: SubscriptionWorkflowInput): Promise<void> {
  const subscription = new LiveSubscription(input);
  // The load takes the mutex before the handlers are registered: registering one runs updates
  // already waiting for this run at once, and they must see the loaded state.
  const loading = subscription.load();
  registerHandlers(subscription);

  const loaded = await loading;
  // The document is the source of truth; without it there is nothing to run.
  if (!loaded) {
    subscription.missing = true;
    await condition(allHandlersFinished);
    await leaveClock();
    return;
  }
  subscription.adopt(loaded);

  for (;;) {
    let cyclePaid = false;
    showSubscription(subscription);
    if (subscription.awaiting) {
      await subscription.awaitNotice();
      cyclePaid = await subscription.mutex.runExclusive(() => subscription.settleAwaited());
    } else {
      subscription.changed = false;
      const step = rules.nextStep(subscription.life);
      if (step === null) {
        // Paused, canceled or expired: nothing happens until an action changes the state.
        await clockWait(() => subscription.changed);
        continue;
      }
      const waitMs = step.at * 1000 - clockNow();
      if (waitMs > 0 && (await clockWait(() => subscription.changed, waitMs, { summary: `until ${step.kind} or an action` }))) continue;
      cyclePaid = await subscription.mutex.runExclusive(() => subscription.takeDueStep());
    }
    // Once per paid cycle (or when the history grows long), start afresh from the document.
    if (cyclePaid || workflowInfo().continueAsNewSuggested) {
      await condition(() => allHandlersFinished() && subscription.noticesSettled());
      if (!subscription.awaiting) await continueAsNew<typeof subscriptionWorkflow>(input);
    }
  }
}

/** The subscription's status as BillingStatus and what it waits for as the current step. */
function showSubscription(subscription: LiveSubscription): void {
  const { life } = subscription;
  if (subscription.awaiting) return showProgress(life.status, `Cycle ${life.cycles_completed + 1} payment in review since ${at(clockNow())}; awaiting the provider`);
  const step = rules.nextStep(life);
  if (step === null) return showProgress(life.status, `${life.status}: nothing scheduled; waits for an action`);
  if (step.kind === 'charge') return showProgress(life.status, `${life.status}: renewal ${life.cycles_completed + 1} (${money(life.amount, life.currency)}) at ${at(step.at * 1000)}`);
  if (step.kind === 'retry') {
    const tries = life.past_due_details?.attempts ?? 0;
    return showProgress(life.status, `past_due since ${at((life.past_due_details?.since ?? 0) * 1000)}: ${tries} failed, retry at ${at(step.at * 1000)}`);
  }
  return showProgress(life.status, `${life.status}: becomes ${step.to} at ${at(step.at * 1000)}`);
}

function registerHandlers(subscription: LiveSubscription): void {
  setHandler(pauseUpdate, (input) => subscription.pause(input));
  setHandler(resumeUpdate, (input) => subscription.resume(input));
  setHandler(cancelUpdate, (input) => subscription.cancel(input));
  setHandler(scheduleCancellationUpdate, (input) => subscription.scheduleCancellation(input));
  setHandler(changeOfferUpdate, (input) => subscription.changeOffer(input));
  setHandler(reactivateUpdate, (input) => subscription.reactivate(input));
  setHandler(changePaymentMethodUpdate, (input) => subscription.changePaymentMethod(input));
  setHandler(oneOffChargeUpdate, (input) => subscription.chargeOneOff(input));
  setHandler(subscriptionProviderSettledSignal, (settled) => subscription.noticeArrived(settled));
  setHandler(subscriptionStateQuery, () => subscription.snapshot());
}
