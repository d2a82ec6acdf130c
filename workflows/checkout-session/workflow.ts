// The checkout session workflow `checkout-session/<cs_id>`: the one writer of a session. Open until
// paid, its deadline (a timer at expires_at) or the `expire` update. Each `pay` update is one attempt
// the workflow runs itself (keyed `checkout/<cs_id>/<n>` at the provider); one whose tries get no answer
// is unknown, asked again under its key (no new attempt meanwhile); an expiry waits for an attempt in
// flight up to the hold, then asks the provider by key, an approval that lands on a closed session is
// given back (its buyer told by e-mail), and attempts a closed session left unknown are looked up for a
// day and given back if taken; a paid notice for a declined 3-D Secure is given back too. A pending PIX or review then waits for the provider's notice (asked by key daily) and never
// reopens; failed lookups and subscription hand-offs are retried later.
// A paid session ends by sending the buyer the store's purchase confirmation. On a test clock it only
// reads the clock's time while open (the clock's advance expires it) and attaches to the clock only to
// wait for a pending payment (runs before the patch attached from the start).
import { allHandlersFinished, condition, patched, setHandler, sleep } from '@temporalio/workflow';
import { LiveCheckoutSession, retryDelayMs } from './state';
import { at, showProgress } from '../lib/business-view';
import { clockNow, clockWait, joinClock, leaveClock, readClock, readsClock } from '../lib/clock';
import { buyerEmailKey, sendBuyerEmail, sendsBuyerEmails } from '../lib/buyer-emails';
import { expireUpdate, payUpdate, providerSettledSignal, stateQuery, type CheckoutWorkflowInput, type CheckoutWorkflowState } from './messages';

// Versioning PINNED (workflows/versioned.ts): a session lives at most a day (plus its lookups), so it finishes on the build that opened it, never replayed by another.
export async function checkoutSessionWorkflow(input: CheckoutWorkflowInput): Promise<CheckoutWorkflowState> {
  const session = new LiveCheckoutSession(input);
  const { state } = session;
  // Joined before the handlers are registered (the pay validator judges the deadline on the clock's
  // time), with that time known at once: an update finding no handler would be refused.
  const joining = startOnClock(input);
  registerHandlers(session);
  await joining;

  // Open: until paid, the deadline, or expire.
  showProgress('open', `Open until ${at(input.expiresAt * 1000)}`, input);
  const untilDeadline = input.expiresAt * 1000 - clockNow();
  if (untilDeadline > 0) await clockWait(() => state.status !== 'open', untilDeadline, { summary: 'open until paid or expires_at' });
  if (state.status === 'open') await session.expireAtDeadline();

  if (state.status === 'complete' && state.payment_status === 'pending') {
    const pix = state.method === 'pix';
    showProgress(pix ? 'awaiting_payment' : 'in_review', `${pix ? 'PIX awaiting payment' : 'Card payment in review'} since ${at(clockNow())}`, input);
    // Its PIX expiry and review window are on the clock's time: from here it waits with the clock.
    if (readsClock()) await joinClock(input.testClock);
    await session.awaitSettlement();
  }
  showProgress(
    state.status,
    `${state.status === 'complete' ? `Complete, payment ${state.payment_status}` : 'Expired'}${state.order ? `, order ${state.order}` : ''}`,
    input,
  );
  if (state.status === 'complete' && state.payment_status === 'paid' && input.recurring) {
    let subscription: string | null | undefined;
    while (subscription === undefined) {
      subscription = await session.createSubscription();
      if (subscription === undefined) await sleep(retryDelayMs(state.problem!.failures));
    }
    state.subscription = subscription;
  }
  await confirmPurchase(input, state);

  // An attempt still charging on a closed session is finished (and given back) before the run ends.
  await condition(allHandlersFinished);
  await session.resolutionsEnded();
  await leaveClock();
  // Off the test clock: the provider's time, not the buyer's, decides when a late approval shows.
  await session.recheckUnknownAttempts();
  // A paid notice for a declined 3-D Secure, given back (its buyer told) before the run ends.
  await session.paidDeclinesGivenBack();
  return state;
}

/** Patched runs read the clock while open instead of attaching to it: an advance costs nothing per open session. */
const READS_CLOCK_PATCH = 'checkout-reads-clock';

/** On a test clock: reads it (patched) or attaches to it; off a clock, nothing (no patch marker either). */
function startOnClock(input: CheckoutWorkflowInput): Promise<void> {
  if (input.testClock && input.testClockNowMs !== undefined && patched(READS_CLOCK_PATCH)) {
    readClock(input.testClock, input.testClockNowMs);
    return Promise.resolve();
  }
  return joinClock(input.testClock, input.testClockNowMs);
}

/** The store's purchase confirmation for the paid order, once; after the hand-off, so it names the subscription's period. */
async function confirmPurchase(input: CheckoutWorkflowInput, state: CheckoutWorkflowState): Promise<void> {
  const orderId = state.order;
  if (state.status !== 'complete' || state.payment_status !== 'paid' || !orderId || !sendsBuyerEmails(input)) return;
  const key = buyerEmailKey('payment-confirmation');
  await sendBuyerEmail((emails) => emails.sendPaymentConfirmation({ storeId: input.storeId, orderId, key }), { key, orderId });
}

function registerHandlers(session: LiveCheckoutSession): void {
  setHandler(stateQuery, () => session.state);
  setHandler(payUpdate, (request) => session.pay(request), { validator: (request) => session.validatePay(request) });
  setHandler(expireUpdate, () => session.expire(), { validator: () => session.refuseUnlessOpen() });
  setHandler(providerSettledSignal, (incoming) => session.noticeArrived(incoming));
}
