// The checkout session workflow `checkout-session/<cs_id>`: the one writer of a session. Open until
// paid, its deadline (a timer at expires_at) or the `expire` update; a payment attempt holds the
// session (beginPayment) until its result arrives, so a payment racing the deadline or an expire
// completes or expires the session exactly once. A pending PIX or review then waits for the
// provider's notice (PIX: at most until its code expires) and never reopens. Provider checks and
// the subscription hand-off that fail are tried again later, so the workflow never dies of them.
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  log,
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ProviderNotice } from '../adapters/provider/types';
import {
  beginPaymentUpdate,
  CUSTOMER_ID_ATTRIBUTE,
  expireUpdate,
  NOT_OPEN_FAILURE,
  PAYMENT_HOLD_MS,
  PROVIDER_TIMEOUT_CODE,
  providerSettledSignal,
  recordPaymentResultUpdate,
  stateQuery,
  type CheckoutWorkflowInput,
  type CheckoutWorkflowState,
  type PaymentResultInput,
} from './checkout-session-messages';

/** A review has no deadline: ask the provider once a day in case its notice was lost. */
const REVIEW_RECHECK = '1 day';
const DAY_MS = 24 * 60 * 60 * 1000;

/** Wait before trying a failed outside step again: 5 minutes, doubling, at most a day (short history). */
function retryDelayMs(failures: number): number {
  return Math.min(5 * 60 * 1000 * 2 ** Math.min(failures - 1, 10), DAY_MS);
}

// Database writes: retried until they succeed (each is a conditional, repeatable update).
const store = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 },
});
// Provider reads and the subscription hand-off: bounded; a failure is logged and tried again later (outsideStep).
const outside = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute', maximumAttempts: 10 },
});

function notOpen(state: CheckoutWorkflowState): ApplicationFailure {
  return ApplicationFailure.create({
    type: NOT_OPEN_FAILURE,
    message: `The checkout session is ${state.status}, not open.`,
    nonRetryable: true,
  });
}

export async function checkoutSessionWorkflow(input: CheckoutWorkflowInput): Promise<CheckoutWorkflowState> {
  const { storeId, sessionId } = input;
  const deadlineMs = input.expiresAt * 1000;
  const state: CheckoutWorkflowState = {
    status: 'open',
    payment_status: 'unpaid',
    order: null,
    subscription: null,
    customer: null,
    method: null,
    transaction_id: null,
    pix_expires_at: null,
    attempt: null,
    last_error: null,
    settlement: null,
    problem: null,
  };
  let attemptStartedAt = 0;
  let notice: ProviderNotice | null = null;
  const early: ProviderNotice[] = [];

  // One transition at a time: handlers and the main path take this lock around their writes.
  let locked = false;
  async function exclusively<T>(fn: () => Promise<T>): Promise<T> {
    await condition(() => !locked);
    locked = true;
    try {
      return await fn();
    } finally {
      locked = false;
    }
  }

  const attemptStale = () => state.attempt !== null && Date.now() - attemptStartedAt >= PAYMENT_HOLD_MS;

  async function expireNow() {
    const session = await store.markCheckoutSessionExpired({ storeId, sessionId });
    state.status = 'expired';
    state.attempt = null;
    await store.emitCheckoutSessionEvent({ storeId, sessionId, type: 'checkout.session.expired', legacyType: null });
    return session;
  }

  async function applyPaymentResult(result: PaymentResultInput) {
    const { outcome } = result;
    if (outcome.status === 'declined' || outcome.status === 'failed') {
      state.last_error = { code: outcome.code, message: outcome.message };
      await store.recordCheckoutDecline({ storeId, sessionId, error: state.last_error });
      return;
    }
    const pending = outcome.status === 'review' || outcome.status === 'pix_pending';
    const completed = await store.completeCheckoutSession({ storeId, sessionId, result, paymentStatus: pending ? 'pending' : 'paid', completedAt: Math.floor(Date.now() / 1000) });
    state.status = 'complete';
    state.payment_status = pending ? 'pending' : 'paid';
    state.order = completed.order;
    state.customer = result.customerId;
    state.method = result.method;
    state.transaction_id = outcome.transactionId;
    state.pix_expires_at = outcome.status === 'pix_pending' ? outcome.pixExpiresAt : null;
    state.last_error = null;
    if (pending) notice = early.find((n) => n.transactionId === state.transaction_id) ?? null;
    upsertSearchAttributes([{ key: CUSTOMER_ID_ATTRIBUTE, value: result.customerId }]);
    // checkout.session.* exist only in 2026-11-01; a 2026-09-01 endpoint hears of the purchase as
    // order.paid, which the catalog derives from the paid order's invoice.paid (so it carries the order).
    await store.emitCheckoutSessionEvent({ storeId, sessionId, type: 'checkout.session.completed', legacyType: null });
    if (!pending && completed.order) await store.emitCheckoutOrderEvent({ storeId, orderId: completed.order });
  }

  setHandler(stateQuery, () => state);

  setHandler(
    beginPaymentUpdate,
    (request) =>
      exclusively(async () => {
        if (state.status !== 'open') return { ok: false as const, reason: 'not_open' as const, state };
        if (Date.now() >= deadlineMs) return { ok: false as const, reason: 'expired' as const, state };
        if (state.attempt !== null && state.attempt !== request.attemptId && !attemptStale()) {
          return { ok: false as const, reason: 'in_progress' as const, state };
        }
        state.attempt = request.attemptId;
        attemptStartedAt = Date.now();
        return { ok: true as const };
      }),
    { validator: (request) => void request.attemptId.length },
  );

  setHandler(recordPaymentResultUpdate, (result) =>
    exclusively(async () => {
      if (state.status !== 'open') {
        // Only possible after a hold ran out (PAYMENT_HOLD_MS): the operator must look at it.
        if (result.outcome.status !== 'declined' && result.outcome.status !== 'failed') {
          log.error('payment result arrived after the session closed', { sessionId, attemptId: result.attemptId, outcome: result.outcome.status });
        }
        return { applied: false, state };
      }
      // A provider that did not answer in time may still charge: its attempt keeps the hold (deadline,
      // expire and other attempts wait) until the late answer arrives or the hold runs out.
      const unconfirmed = result.outcome.status === 'failed' && result.outcome.code === PROVIDER_TIMEOUT_CODE;
      if (state.attempt === result.attemptId && !unconfirmed) state.attempt = null;
      await applyPaymentResult(result);
      return { applied: true, state };
    }),
  );

  setHandler(
    expireUpdate,
    async () => {
      // A payment in flight lands first; the expiry then finds the session complete and refuses.
      await condition(() => state.attempt === null || state.status !== 'open', PAYMENT_HOLD_MS);
      return exclusively(async () => {
        if (state.status !== 'open') throw notOpen(state);
        return expireNow();
      });
    },
    {
      validator: () => {
        if (state.status !== 'open') throw notOpen(state);
      },
    },
  );

  setHandler(providerSettledSignal, (incoming) => {
    if (notice !== null) return;
    // A notice can overtake the attempt's result: kept until the transaction id is known.
    if (state.transaction_id === null) {
      early.push(incoming);
      return;
    }
    // Notices for other transactions (an earlier declined attempt) do not concern this session.
    if (incoming.transactionId === state.transaction_id) notice = incoming;
  });

  // Open: until paid, the deadline, or expire.
  const untilDeadline = deadlineMs - Date.now();
  if (untilDeadline > 0) await condition(() => state.status !== 'open', untilDeadline);
  if (state.status === 'open') {
    // The deadline passed; an attempt begun before it may still be landing.
    await condition(() => state.attempt === null || state.status !== 'open', PAYMENT_HOLD_MS);
    await exclusively(async () => {
      if (state.status === 'open') await expireNow();
    });
  }

  if (state.status === 'complete' && state.payment_status === 'pending') {
    await awaitSettlement();
  }
  if (state.status === 'complete' && state.payment_status === 'paid' && input.recurring) {
    let subscription: string | null | undefined;
    while (subscription === undefined) {
      subscription = await outsideStep('create_subscription', () => outside.createCheckoutSubscription({ storeId, sessionId }));
      if (subscription === undefined) await sleep(retryDelayMs(state.problem!.failures));
    }
    state.subscription = subscription;
  }

  await condition(allHandlersFinished);
  return state;

  /**
   * One outside step; undefined when it failed after its retry policy (or at once, nonRetryable):
   * logged and kept in state.problem (queryable) for the caller to try again later.
   */
  async function outsideStep<T>(step: 'check_transaction' | 'create_subscription', call: () => Promise<T>): Promise<T | undefined> {
    try {
      const value = await call();
      if (state.problem?.step === step) state.problem = null;
      return value;
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      const cause = error.cause;
      const nonRetryable = cause instanceof ApplicationFailure && cause.nonRetryable === true;
      const failures = state.problem?.step === step ? state.problem.failures + 1 : 1;
      const problem = {
        step,
        type: cause instanceof ApplicationFailure ? (cause.type ?? null) : null,
        message: cause?.message ?? error.message,
        nonRetryable,
        failures,
      };
      state.problem = problem;
      // A data problem needs an operator; anything else is the provider or a server being away.
      const details = { sessionId, ...problem, retryInMs: retryDelayMs(failures) };
      if (nonRetryable) log.error('checkout step failed on a data problem; trying again later', details);
      else log.warn('checkout step failed after its retries; trying again later', details);
      return undefined;
    }
  }

  async function awaitSettlement(): Promise<void> {
    let outcome: 'paid' | 'refused' | 'expired' | null = null;
    while (outcome === null) {
      if (state.method === 'pix' && state.pix_expires_at !== null) {
        const left = state.pix_expires_at * 1000 - Date.now();
        if (left > 0) await condition(() => notice !== null, left);
        if (notice) {
          outcome = notice.status;
        } else {
          // The code is past its validity: paid only if the provider says so, expired otherwise.
          const tx = await outsideStep('check_transaction', () => outside.checkCheckoutTransaction({ storeId, transactionId: state.transaction_id! }));
          if (tx !== undefined) outcome = tx === 'paid' ? 'paid' : tx === 'refused' ? 'refused' : 'expired';
          // The provider's answer or its notice, whichever comes first, decides.
          else await condition(() => notice !== null, retryDelayMs(state.problem!.failures));
        }
      } else {
        // After a failed check, ask again sooner than the daily recheck.
        const wait = state.problem?.step === 'check_transaction' ? retryDelayMs(state.problem.failures) : REVIEW_RECHECK;
        const arrived = await condition(() => notice !== null, wait);
        if (arrived && notice) {
          outcome = notice.status;
        } else {
          const tx = await outsideStep('check_transaction', () => outside.checkCheckoutTransaction({ storeId, transactionId: state.transaction_id! }));
          if (tx === 'paid' || tx === 'refused' || tx === 'expired') outcome = tx;
        }
      }
    }
    await exclusively(async () => {
      const paid = outcome === 'paid';
      await store.settleCheckoutSession({ storeId, sessionId, outcome: outcome!, settledAt: Math.floor(Date.now() / 1000) });
      state.payment_status = paid ? 'paid' : 'unpaid';
      state.settlement = outcome;
      await store.emitCheckoutSessionEvent({
        storeId,
        sessionId,
        type: paid ? 'checkout.session.async_payment_succeeded' : 'checkout.session.async_payment_failed',
        legacyType: null,
      });
      // invoice.paid, or invoice.payment_failed for a refused payment (an expired PIX cancels its order quietly).
      if (state.order) await store.emitCheckoutOrderEvent({ storeId, orderId: state.order });
    });
  }
}
