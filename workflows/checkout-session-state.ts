// What one checkout session workflow knows (its queryable state, the attempt holding it, the provider's
// notice) and one method per transition, each taken under the mutex: begin a payment, record its
// result, expire, settle a pending payment, hand a paid recurring session to its subscription.
import { ActivityFailure, ApplicationFailure, condition, log, proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ProviderNotice } from '../adapters/provider/types';
import { EarlyNotices } from './lib/early-notices';
import { Mutex } from './lib/mutex';
import {
  CUSTOMER_ID_ATTRIBUTE,
  NOT_OPEN_FAILURE,
  PAYMENT_HOLD_MS,
  PROVIDER_TIMEOUT_CODE,
  type BeginPaymentInput,
  type BeginPaymentResult,
  type CheckoutWorkflowInput,
  type CheckoutWorkflowState,
  type PaymentResultAnswer,
  type PaymentResultInput,
} from './checkout-session-messages';

/** A review has no deadline: ask the provider once a day in case its notice was lost. */
const REVIEW_RECHECK = '1 day';
const DAY_MS = 24 * 60 * 60 * 1000;
/** Notices kept while the session's transaction is unknown: one per attempt, and a session has few. */
const EARLY_NOTICES_KEPT = 20;

/** Wait before trying a failed outside step again: 5 minutes, doubling, at most a day (short history). */
export function retryDelayMs(failures: number): number {
  return Math.min(5 * 60 * 1000 * 2 ** Math.min(failures - 1, 10), DAY_MS);
}

// Database writes: retried until they succeed (each is a conditional, repeatable update).
const records = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 },
});
// Provider reads and the subscription hand-off: bounded; a failure is logged and tried again later (outsideStep).
const outside = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute', maximumAttempts: 10 },
});

type Settlement = 'paid' | 'refused' | 'expired';

function notOpen(state: CheckoutWorkflowState): ApplicationFailure {
  return ApplicationFailure.create({
    type: NOT_OPEN_FAILURE,
    message: `The checkout session is ${state.status}, not open.`,
    nonRetryable: true,
  });
}

export class LiveCheckoutSession {
  /** One transition at a time: handlers and the main path take it around their writes. */
  readonly mutex = new Mutex();
  readonly state: CheckoutWorkflowState = {
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
  private attemptStartedAt = 0;
  private notice: ProviderNotice | null = null;
  /** A notice can overtake the attempt's result: kept until the transaction id is known. */
  private readonly early = new EarlyNotices(EARLY_NOTICES_KEPT);
  private readonly storeId: string;
  private readonly sessionId: string;

  constructor(input: CheckoutWorkflowInput) {
    this.storeId = input.storeId;
    this.sessionId = input.sessionId;
  }

  /** No attempt holds the session (any more), or it is no longer open. */
  readonly attemptLanded = () => this.state.attempt === null || this.state.status !== 'open';

  beginPayment(request: BeginPaymentInput, deadlineMs: number): Promise<BeginPaymentResult> {
    return this.mutex.runExclusive(async () => {
      const { state } = this;
      if (state.status !== 'open') return { ok: false as const, reason: 'not_open' as const, state };
      if (Date.now() >= deadlineMs) return { ok: false as const, reason: 'expired' as const, state };
      if (state.attempt !== null && state.attempt !== request.attemptId && !this.attemptStale()) {
        return { ok: false as const, reason: 'in_progress' as const, state };
      }
      state.attempt = request.attemptId;
      this.attemptStartedAt = Date.now();
      return { ok: true as const };
    });
  }

  recordPaymentResult(result: PaymentResultInput): Promise<PaymentResultAnswer> {
    return this.mutex.runExclusive(async () => {
      const { state } = this;
      if (state.status !== 'open') {
        // Only possible after a hold ran out (PAYMENT_HOLD_MS): the operator must look at it.
        if (result.outcome.status !== 'declined' && result.outcome.status !== 'failed') {
          log.error('payment result arrived after the session closed', { sessionId: this.sessionId, attemptId: result.attemptId, outcome: result.outcome.status });
        }
        return { applied: false, state };
      }
      // A provider that did not answer in time may still charge: its attempt keeps the hold (deadline,
      // expire and other attempts wait) until the late answer arrives or the hold runs out.
      const unconfirmed = result.outcome.status === 'failed' && result.outcome.code === PROVIDER_TIMEOUT_CODE;
      if (state.attempt === result.attemptId && !unconfirmed) state.attempt = null;
      await this.applyPaymentResult(result);
      return { applied: true, state };
    });
  }

  /** The expire update: a payment in flight lands first; the expiry then finds the session complete and refuses. */
  async expire() {
    await condition(this.attemptLanded, PAYMENT_HOLD_MS);
    return this.mutex.runExclusive(async () => {
      if (this.state.status !== 'open') throw notOpen(this.state);
      return this.expireNow();
    });
  }

  /** Refuses an expire update at once when the session is already closed. */
  refuseUnlessOpen(): void {
    if (this.state.status !== 'open') throw notOpen(this.state);
  }

  /** The deadline passed: expires the session unless a payment (begun before it) completed it. */
  expireIfStillOpen(): Promise<void> {
    return this.mutex.runExclusive(async () => {
      if (this.state.status === 'open') await this.expireNow();
    });
  }

  noticeArrived(incoming: ProviderNotice): void {
    if (this.notice !== null) return;
    if (this.state.transaction_id === null) {
      this.early.keepFirst(incoming);
      return;
    }
    // Notices for other transactions (an earlier declined attempt) do not concern this session.
    if (incoming.transactionId === this.state.transaction_id) this.notice = incoming;
  }

  /** A pending PIX or review: waits for the provider's notice (or asks the provider), then settles the session. */
  async awaitSettlement(): Promise<void> {
    let outcome: Settlement | null = null;
    while (outcome === null) {
      outcome = this.state.method === 'pix' && this.state.pix_expires_at !== null ? await this.awaitPix(this.state.pix_expires_at) : await this.awaitReview();
    }
    await this.mutex.runExclusive(() => this.settle(outcome));
  }

  /**
   * One outside step; undefined when it failed after its retry policy (or at once, nonRetryable):
   * logged and kept in state.problem (queryable) for the caller to try again later.
   */
  async outsideStep<T>(step: 'check_transaction' | 'create_subscription', call: () => Promise<T>): Promise<T | undefined> {
    try {
      const value = await call();
      if (this.state.problem?.step === step) this.state.problem = null;
      return value;
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      const cause = error.cause;
      const nonRetryable = cause instanceof ApplicationFailure && cause.nonRetryable === true;
      const failures = this.state.problem?.step === step ? this.state.problem.failures + 1 : 1;
      const problem = {
        step,
        type: cause instanceof ApplicationFailure ? (cause.type ?? null) : null,
        message: cause?.message ?? error.message,
        nonRetryable,
        failures,
      };
      this.state.problem = problem;
      // A data problem needs an operator; anything else is the provider or a server being away.
      const details = { sessionId: this.sessionId, ...problem, retryInMs: retryDelayMs(failures) };
      if (nonRetryable) log.error('checkout step failed on a data problem; trying again later', details);
      else log.warn('checkout step failed after its retries; trying again later', details);
      return undefined;
    }
  }

  /** The subscription hand-off; undefined when it failed and is to be tried again later. */
  createSubscription(): Promise<string | null | undefined> {
    return this.outsideStep('create_subscription', () => outside.createCheckoutSubscription({ storeId: this.storeId, sessionId: this.sessionId }));
  }

  private attemptStale(): boolean {
    return this.state.attempt !== null && Date.now() - this.attemptStartedAt >= PAYMENT_HOLD_MS;
  }

  private async expireNow() {
    const { storeId, sessionId } = this;
    const session = await records.markCheckoutSessionExpired({ storeId, sessionId });
    this.state.status = 'expired';
    this.state.attempt = null;
    await records.emitCheckoutSessionEvent({ storeId, sessionId, type: 'checkout.session.expired', legacyType: null });
    return session;
  }

  private async applyPaymentResult(result: PaymentResultInput) {
    const { storeId, sessionId, state } = this;
    const { outcome } = result;
    if (outcome.status === 'declined' || outcome.status === 'failed') {
      state.last_error = { code: outcome.code, message: outcome.message };
      await records.recordCheckoutDecline({ storeId, sessionId, error: state.last_error });
      return;
    }
    const pending = outcome.status === 'review' || outcome.status === 'pix_pending';
    const completed = await records.completeCheckoutSession({ storeId, sessionId, result, paymentStatus: pending ? 'pending' : 'paid', completedAt: Math.floor(Date.now() / 1000) });
    state.status = 'complete';
    state.payment_status = pending ? 'pending' : 'paid';
    state.order = completed.order;
    state.customer = result.customerId;
    state.method = result.method;
    state.transaction_id = outcome.transactionId;
    state.pix_expires_at = outcome.status === 'pix_pending' ? outcome.pixExpiresAt : null;
    state.last_error = null;
    if (pending) this.notice = this.early.take(state.transaction_id!);
    upsertSearchAttributes([{ key: CUSTOMER_ID_ATTRIBUTE, value: result.customerId }]);
    // checkout.session.* exist only in 2026-11-01; a 2026-09-01 endpoint hears of the purchase as
    // order.paid, which the catalog derives from the paid order's invoice.paid (so it carries the order).
    await records.emitCheckoutSessionEvent({ storeId, sessionId, type: 'checkout.session.completed', legacyType: null });
    if (!pending && completed.order) await records.emitCheckoutOrderEvent({ storeId, orderId: completed.order });
  }

  /** A pending PIX: its notice until the code expires; then paid only if the provider says so, expired otherwise. */
  private async awaitPix(pixExpiresAt: number): Promise<Settlement | null> {
    const left = pixExpiresAt * 1000 - Date.now();
    if (left > 0) await condition(() => this.notice !== null, left);
    if (this.notice) return this.notice.status;
    const tx = await this.checkTransaction();
    if (tx !== undefined) return tx === 'paid' ? 'paid' : tx === 'refused' ? 'refused' : 'expired';
    // The provider's answer or its notice, whichever comes first, decides.
    await condition(() => this.notice !== null, retryDelayMs(this.state.problem!.failures));
    return null;
  }

  /** A review: its notice, or the provider's answer when asked daily (sooner after a failed check). */
  private async awaitReview(): Promise<Settlement | null> {
    const wait = this.state.problem?.step === 'check_transaction' ? retryDelayMs(this.state.problem.failures) : REVIEW_RECHECK;
    const arrived = await condition(() => this.notice !== null, wait);
    if (arrived && this.notice) return this.notice.status;
    const tx = await this.checkTransaction();
    return tx === 'paid' || tx === 'refused' || tx === 'expired' ? tx : null;
  }

  private checkTransaction() {
    return this.outsideStep('check_transaction', () => outside.checkCheckoutTransaction({ storeId: this.storeId, transactionId: this.state.transaction_id! }));
  }

  private async settle(outcome: Settlement): Promise<void> {
    const { storeId, sessionId, state } = this;
    const paid = outcome === 'paid';
    await records.settleCheckoutSession({ storeId, sessionId, outcome, settledAt: Math.floor(Date.now() / 1000) });
    state.payment_status = paid ? 'paid' : 'unpaid';
    state.settlement = outcome;
    await records.emitCheckoutSessionEvent({
      storeId,
      sessionId,
      type: paid ? 'checkout.session.async_payment_succeeded' : 'checkout.session.async_payment_failed',
      legacyType: null,
    });
    // invoice.paid, or invoice.payment_failed for a refused payment (an expired PIX cancels its order quietly).
    if (state.order) await records.emitCheckoutOrderEvent({ storeId, orderId: state.order });
  }
}
