// One subscription's life (`subscription/<sub_id>`): it owns time — the trial's end, renewals at
// next_billing_at, dunning retries, the end of a scheduled cancellation or of the cycle limit — and
// serializes every action (updates) with those steps through one mutex (subscription-state.ts). It
// continues as new once per paid cycle and when a run grows long (carrying a charge in review to the
// next run); in canceled or expired it stays open, idle, for a reactivation.
import { allHandlersFinished, condition, continueAsNew, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import * as rules from '../../domain/subscriptions';
import { LiveSubscription } from './state';
import { at, money, showProgress } from '../lib/business-view';
import { clockNow, clockWait, leaveClock } from '../lib/clock';
import { RunLength } from '../lib/run-length';
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
} from './messages';
import type { ChargeWorkflowInput } from '../charge/messages';

// Versioning AUTO_UPGRADE (workflows/versioned.ts): a subscription runs for years, longer than any build: it moves to the current build and changes keep patched().
export async function subscriptionWorkflow(input: SubscriptionWorkflowInput): Promise<void> {
  const subscription = new LiveSubscription(input);
  const run = new RunLength();
  // The load takes the mutex before the handlers are registered: registering one runs updates
  // already waiting for this run at once, and they must see the loaded state.
  const loading = subscription.load();
  registerHandlers(subscription, run);

  const loaded = await loading;
  // The document is the source of truth; without it there is nothing to run.
  if (!loaded) {
    subscription.missing = true;
    await condition(allHandlersFinished);
    await leaveClock();
    return;
  }
  subscription.adopt(loaded);
  // Runs started before this check waited for their next step whatever the updates; their replay must keep doing so.
  const rollsOver = patched('subscription-continue-as-new-on-long-run');
  const full = () => rollsOver && run.full();
  // Runs started before this kept a charge in review in their run however long it grew; their replay must too.
  const carriesReview = patched('subscription-review-continues-as-new');

  for (;;) {
    showSubscription(subscription);
    const turn = await takeTurn(subscription, full, () => carriesReview && full());
    // Once per paid cycle, or when the run grows long (a woken wait skipped this check before the patch).
    const startAfresh = turn === 'woke' ? full() : turn === 'paid' || workflowInfo().continueAsNewSuggested || full();
    // A buyer's confirmation that just woke the loop is settled first: it lives in this run only.
    if (startAfresh && !subscription.confirmationArrived()) await continueAsNewDrained(subscription, run, input, carriesReview);
  }
}

/**
 * One turn of the main loop: settle a charge in review (unless the run grows long first), or wait for the
 * next step (or an action) and take it.
 */
async function takeTurn(subscription: LiveSubscription, full: () => boolean, reviewStops: () => boolean): Promise<'paid' | 'stepped' | 'woke'> {
  const stepped = (paid: boolean) => (paid ? 'paid' : 'stepped');
  // The buyer confirmed (3-D Secure, in the portal) the renewal the bank asked about: it pays the open cycle.
  if (subscription.confirmationArrived()) return stepped(await subscription.mutex.runExclusive(() => subscription.settleConfirmation()));
  if (subscription.awaiting) {
    if (!(await subscription.awaitNotice(reviewStops))) return 'woke';
    return stepped(await subscription.mutex.runExclusive(() => subscription.settleAwaited()));
  }
  subscription.changed = false;
  const wake = () => subscription.changed || full();
  const step = rules.nextStep(subscription.life);
  if (step === null) {
    // Paused, canceled or expired: nothing happens until an action changes the state.
    await clockWait(wake);
    return 'woke';
  }
  const waitMs = step.at * 1000 - clockNow();
  if (waitMs > 0 && (await clockWait(wake, waitMs, { summary: `until ${step.kind} or an action` }))) return 'woke';
  return stepped(await subscription.mutex.runExclusive(() => subscription.takeDueStep()));
}

/**
 * Starts afresh from the document once every handler and buyer e-mail has finished (one-off charges
 * arriving meanwhile are refused and retried on the new run). A charge in review goes to the next run
 * with its notice if one arrived by now (the input is built after the drain, so a notice handled in
 * this run is in it, and one signalled later reaches the new run); runs from before the patch kept it.
 */
async function continueAsNewDrained(
  subscription: LiveSubscription,
  run: RunLength,
  input: SubscriptionWorkflowInput,
  carriesReview: boolean,
): Promise<void> {
  run.draining = true;
  await condition(() => allHandlersFinished() && subscription.buyerEmailsSent());
  // The review this run was given (if any) is settled or carried anew, never handed on as it came.
  const { review: _given, ...afresh } = input;
  if (!subscription.awaiting) await continueAsNew<typeof subscriptionWorkflow>(afresh);
  const review = carriesReview ? subscription.carriedReview() : null;
  if (review) await continueAsNew<typeof subscriptionWorkflow>({ ...afresh, review });
  run.draining = false;
}

/** The subscription's status as BillingStatus and what it waits for as the current step. */
function showSubscription(subscription: LiveSubscription): void {
  const { life } = subscription;
  const { awaiting } = subscription;
  if (awaiting)
    return showProgress(
      life.status,
      `Cycle ${life.cycles_completed + 1} payment in review since ${at(awaiting.startedMs ?? clockNow())}; awaiting the provider`,
    );
  const step = rules.nextStep(life);
  if (step === null) return showProgress(life.status, `${life.status}: nothing scheduled; waits for an action`);
  if (step.kind === 'charge')
    return showProgress(
      life.status,
      `${life.status}: renewal ${life.cycles_completed + 1} (${money(life.amount, life.currency)}) at ${at(step.at * 1000)}`,
    );
  if (step.kind === 'retry') {
    const tries = life.past_due_details?.attempts ?? 0;
    return showProgress(
      life.status,
      `past_due since ${at((life.past_due_details?.since ?? 0) * 1000)}: ${tries} failed, retry at ${at(step.at * 1000)}`,
    );
  }
  return showProgress(life.status, `${life.status}: becomes ${step.to} at ${at(step.at * 1000)}`);
}

function registerHandlers(subscription: LiveSubscription, run: RunLength): void {
  // Every message counts towards the run's length (Temporal's limits are per run).
  const counted =
    <A, R>(handle: (input: A) => R) =>
    (input: A): R => {
      run.took();
      return handle(input);
    };
  setHandler(
    pauseUpdate,
    counted((input) => subscription.pause(input)),
  );
  setHandler(
    resumeUpdate,
    counted((input) => subscription.resume(input)),
  );
  setHandler(
    cancelUpdate,
    counted((input) => subscription.cancel(input)),
  );
  setHandler(
    scheduleCancellationUpdate,
    counted((input) => subscription.scheduleCancellation(input)),
  );
  setHandler(
    changeOfferUpdate,
    counted((input) => subscription.changeOffer(input)),
  );
  setHandler(
    reactivateUpdate,
    counted((input) => subscription.reactivate(input)),
  );
  setHandler(
    changePaymentMethodUpdate,
    counted((input) => subscription.changePaymentMethod(input)),
  );
  setHandler(
    oneOffChargeUpdate,
    counted((input: ChargeWorkflowInput) => subscription.chargeOneOff(input)),
    { validator: (_charge: ChargeWorkflowInput) => run.admit() },
  );
  setHandler(
    subscriptionProviderSettledSignal,
    counted((settled) => subscription.noticeArrived(settled)),
  );
  setHandler(subscriptionStateQuery, () => subscription.snapshot());
}
