// The checkout session workflow `checkout-session/<cs_id>`: the one writer of a session. Open until
// paid, its deadline (a timer at expires_at) or the `expire` update; a payment attempt holds the
// session (beginPayment) until its result arrives, so a payment racing the deadline or an expire
// completes or expires the session exactly once. A pending PIX or review then waits for the
// provider's notice and never reopens; failed provider checks and subscription hand-offs are retried later.
import { allHandlersFinished, condition, setHandler, sleep } from '@temporalio/workflow';
import { LiveCheckoutSession, retryDelayMs } from './checkout-session-state';
import {
  beginPaymentUpdate,
  expireUpdate,
  PAYMENT_HOLD_MS,
  providerSettledSignal,
  recordPaymentResultUpdate,
  stateQuery,
  type CheckoutWorkflowInput,
  type CheckoutWorkflowState,
} from './checkout-session-messages';

export async function checkoutSessionWorkflow(input: CheckoutWorkflowInput): Promise<CheckoutWorkflowState> {
  const deadlineMs = input.expiresAt * 1000;
  const session = new LiveCheckoutSession(input);
  const { state } = session;
  registerHandlers(session, deadlineMs);

  // Open: until paid, the deadline, or expire.
  const untilDeadline = deadlineMs - Date.now();
  if (untilDeadline > 0) await condition(() => state.status !== 'open', untilDeadline);
  if (state.status === 'open') {
    // The deadline passed; an attempt begun before it may still be landing.
    await condition(session.attemptLanded, PAYMENT_HOLD_MS);
    await session.expireIfStillOpen();
  }

  if (state.status === 'complete' && state.payment_status === 'pending') {
    await session.awaitSettlement();
  }
  if (state.status === 'complete' && state.payment_status === 'paid' && input.recurring) {
    let subscription: string | null | undefined;
    while (subscription === undefined) {
      subscription = await session.createSubscription();
      if (subscription === undefined) await sleep(retryDelayMs(state.problem!.failures));
    }
    state.subscription = subscription;
  }

  await condition(allHandlersFinished);
  return state;
}

function registerHandlers(session: LiveCheckoutSession, deadlineMs: number): void {
  setHandler(stateQuery, () => session.state);
  setHandler(beginPaymentUpdate, (request) => session.beginPayment(request, deadlineMs), {
    validator: (request) => void request.attemptId.length,
  });
  setHandler(recordPaymentResultUpdate, (result) => session.recordPaymentResult(result));
  setHandler(expireUpdate, () => session.expire(), { validator: () => session.refuseUnlessOpen() });
  setHandler(providerSettledSignal, (incoming) => session.noticeArrived(incoming));
}
