// The checkout session workflow `checkout-session/<cs_id>`: the one writer of a session. Open until
// paid, its deadline (a timer at expires_at) or the `expire` update; a payment attempt holds the
// session (beginPayment) until its result arrives, so a payment racing the deadline or an expire
// completes or expires the session exactly once. A pending PIX or review then waits for the
// provider's notice (PIX: at most until its code expires) and never reopens.
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  log,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ProviderNotice } from '../activities/provider/types';
import {
  beginPaymentUpdate,
  CUSTOMER_ID_ATTRIBUTE,
  expireUpdate,
  NOT_OPEN_FAILURE,
  PAYMENT_HOLD_MS,
  providerSettledSignal,
  recordPaymentResultUpdate,
  stateQuery,
  type CheckoutWorkflowInput,
  type CheckoutWorkflowState,
  type PaymentResultInput,
} from './checkout-session-messages';

/** A review has no deadline: ask the provider once a day in case its notice was lost. */
const REVIEW_RECHECK = '1 day';

// Database writes: retried until they succeed (each is a conditional, repeatable update).
const store = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 },
});
// Provider reads and the subscription hand-off: bounded, then logged and left to the next check.
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
      if (state.attempt === result.attemptId) state.attempt = null;
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
    const subscription = await outside.createCheckoutSubscription({ storeId, sessionId });
    state.subscription = subscription;
  }

  await condition(allHandlersFinished);
  return state;

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
          const tx = await outside.checkCheckoutTransaction({ storeId, transactionId: state.transaction_id! });
          outcome = tx === 'paid' ? 'paid' : tx === 'refused' ? 'refused' : 'expired';
        }
      } else {
        const arrived = await condition(() => notice !== null, REVIEW_RECHECK);
        if (arrived && notice) {
          outcome = notice.status;
        } else {
          const tx = await outside.checkCheckoutTransaction({ storeId, transactionId: state.transaction_id! });
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
