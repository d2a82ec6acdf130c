// What one checkout session workflow knows (its queryable state with every payment attempt, the
// provider's notice) and one method per transition: run an attempt (one keyed charge activity; past its
// tries the attempt is unknown and asked again under its key until the provider answers), land it
// (complete, decline, or give an approval on a closed session back), expire, re-check what a closed
// session left unknown, settle a pending payment, hand off to a subscription.
import { ActivityFailure, ApplicationFailure, condition, log, patched, proxyActivities, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { WORKER_GONE_AFTER } from '../lib/timeouts';
import type { ProviderNotice, TransactionState } from '../../adapters/provider/types';
import { nextReviewCheckMs, reviewWindowOver } from '../../domain/reviews';
import { pixAllowed } from '../../domain/checkout';
import { EarlyNotices } from '../lib/early-notices';
import { Mutex } from '../lib/mutex';
import { at, money, showProgress } from '../lib/business-view';
import type { VersionedInput } from '../lib/input-version';
import { clockNow, clockWait, onTestClock, refreshClock, testClockRef } from '../lib/clock';
import { sendBuyerEmail, sendsBuyerEmails } from '../lib/buyer-emails';
import {
  ATTEMPT_HOLD_MS,
  AUTHENTICATION_ABANDONED_CODE,
  AUTHENTICATION_FAILED_CODE,
  checkoutAttemptKey,
  CUSTOMER_ID_ATTRIBUTE,
  lateRefundEmailKey,
  NOT_OPEN_FAILURE,
  PAYMENT_IN_PROGRESS_FAILURE,
  CARD_LOCKED_FAILURE,
  MAX_CARD_DECLINES,
  PIX_UNAVAILABLE_FAILURE,
  PROVIDER_UNAVAILABLE_CODE,
  type AttemptResult,
  type CheckoutAttempt,
  type CheckoutWorkflowInput,
  type CheckoutWorkflowState,
  type PayAnswer,
  type PayInput,
  type PaymentAttemptOutcome,
} from './messages';

const DAY_MS = 24 * 60 * 60 * 1000;
const MINUTE_MS = 60 * 1000;
/** Runs begun before this took a charge's timeout and one "never received" look-up as nothing charged. */
const UNKNOWN_ATTEMPTS_PATCH = 'checkout-unknown-attempts';
/**
 * Runs begun before this held a card awaiting 3-D Secure as a payment in review (session complete and
 * pending); patched runs keep the session open while the buyer authenticates (awaitAuthentication).
 */
const AUTHENTICATION_PATCH = 'checkout-3ds-authentication';
/** Runs begun before this asked again at once (a 1 ms timer) after a review end that had nothing to give back: a hot loop. */
const REVIEW_END_BACKOFF_PATCH = 'checkout-review-end-backoff';
/** Runs begun before this took a PIX still pending at its expiry as expired without cancelling it at the provider. */
const PIX_FENCE_PATCH = 'checkout-pix-fence';
/** Runs begun before this gave an approval that reached the closed session back without telling the buyer. */
const LATE_REFUND_EMAIL_PATCH = 'checkout-late-refund-email';
/**
 * Runs begun before this dropped a paid notice naming a declined attempt: a 3-D Secure that failed leaves its
 * intent re-confirmable with the client secret the page held, so it can still succeed later. Patched runs give it back.
 */
const PAID_DECLINE_PATCH = 'checkout-paid-decline-given-back';
/** When a closed session looks an attempt still unknown up again, counted from the close. */
export const CLOSED_RECHECKS_MS = [MINUTE_MS, 10 * MINUTE_MS, 60 * MINUTE_MS, DAY_MS];

/** Wait before asking about an unknown attempt again while the session is open: 10 s, doubling, at most 10 minutes. */
function unknownRecheckMs(round: number): number {
  return Math.min(10_000 * 2 ** Math.min(round - 1, 10), 10 * MINUTE_MS);
}
/** Notices kept while the session's transaction is unknown: one per attempt, and a session has few. */
const EARLY_NOTICES_KEPT = 20;

/** Wait before trying a failed outside step again: 5 minutes, doubling, at most a day (short history). */
export function retryDelayMs(failures: number): number {
  return Math.min(5 * 60 * 1000 * 2 ** Math.min(failures - 1, 10), DAY_MS);
}

// Database writes and giving money back: retried until they succeed (each is keyed or conditional).
const records = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 },
});
// The charge itself: a few tries under the attempt's key; then the provider is asked by key instead.
const charges = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds', maximumAttempts: 4 },
});
// Provider lookups and the subscription hand-off: bounded; a failure is logged and tried again later (outsideStep).
const outside = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute', maximumAttempts: 10 },
});

type Settlement = 'paid' | 'refused' | 'expired';

function refusal(type: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true });
}

function notOpen(state: CheckoutWorkflowState): ApplicationFailure {
  return refusal(NOT_OPEN_FAILURE, `The checkout session is ${state.status === 'open' ? 'closing' : state.status}, not open.`);
}

/** The provider took the payment (or holds it pending): the session completes with it. */
function takesPayment(outcome: PaymentAttemptOutcome): boolean {
  return outcome.status === 'approved' || outcome.status === 'review' || outcome.status === 'pix_pending';
}

/** The charge needs the buyer's ids only: a new buyer's record is written once the payment is taken. */
function withoutNewBuyer(input: PayInput): Omit<PayInput, 'newBuyer'> {
  const request: Partial<PayInput> = { ...input };
  delete request.newBuyer;
  return request as Omit<PayInput, 'newBuyer'>;
}

const NOTHING_CHARGED: AttemptResult = {
  outcome: {
    status: 'failed',
    code: PROVIDER_UNAVAILABLE_CODE,
    message: 'The payment provider could not be reached. Nothing was charged; try again.',
  },
  savedCard: null,
};

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
    attempts: [],
    last_error: null,
    settlement: null,
    problem: null,
  };
  private notice: ProviderNotice | null = null;
  /** A notice can overtake the attempt's result: kept until the transaction id is known. */
  private readonly early = new EarlyNotices(EARLY_NOTICES_KEPT);
  private readonly storeId: string;
  private readonly sessionId: string;
  /** In every provider call: a test clock's session pays only through the test connection. */
  private readonly onClock: { testClock?: string };
  private readonly deadlineMs: number;
  private readonly holdMs: number;
  private readonly maxCardDeclines: number;
  /** An expiry (deadline or update) has begun: no new attempt may start. */
  private closing = false;
  /** The attempt that completed the session, and when (the review window starts there). */
  private paying: CheckoutAttempt | null = null;
  private paidAtMs = 0;
  /** What each attempt was asked with (the lookup at expiry needs it to apply an approval). */
  private readonly requests = new Map<number, PayInput>();
  /** 3-D Secure outcomes by transaction id, for attempts waiting for them (one per attempt, a handful per session). */
  private readonly authentications = new Map<string, ProviderNotice>();
  /** Review ends that found nothing to give back yet (the payment still pending at the provider): the next waits longer. */
  private reviewEndRounds = 0;
  /** Unknown attempts being asked about again while the session is open; each ends once known or closed. */
  private readonly resolutions: Promise<void>[] = [];
  /** Declined 3-D Secure attempts by their transaction id (a decline keeps no transaction id on the attempt). */
  private readonly declinedAuthentications = new Map<string, CheckoutAttempt>();
  /** Declined attempts a paid notice named, being given back (one each: at most the session's attempts). */
  private readonly paidDeclines = new Map<number, Promise<void>>();
  private paidDeclinesRunning = 0;

  /** The run's input version: the patches it has without markers (workflows/lib/input-version.ts). */
  private readonly started: VersionedInput;

  constructor(input: CheckoutWorkflowInput) {
    this.started = input;
    this.storeId = input.storeId;
    this.sessionId = input.sessionId;
    this.onClock = testClockRef(input.testClock);
    this.deadlineMs = input.expiresAt * 1000;
    this.holdMs = input.attemptHoldMs ?? ATTEMPT_HOLD_MS;
    this.maxCardDeclines = input.maxCardDeclines ?? MAX_CARD_DECLINES;
  }

  /** The attempt whose charge activity is running, if any. */
  inFlight(): CheckoutAttempt | undefined {
    return this.state.attempts.find((attempt) => attempt.status === 'charging');
  }

  /** Attempts whose tries ran out without the provider's answer: money may have been taken. */
  unknownAttempts(): CheckoutAttempt[] {
    return this.state.attempts.filter((attempt) => attempt.status === 'unknown');
  }

  /** Cards declined on this session so far (card testing is stopped at maxCardDeclines). */
  cardDeclines(): number {
    return this.state.attempts.filter((attempt) => attempt.method === 'card' && attempt.status === 'declined').length;
  }

  /** The pay update's validator: an open session, before its deadline, every earlier attempt known, cards not locked, PIX only where allowed. */
  validatePay(input: PayInput): void {
    if (this.state.status !== 'open' || this.closing || clockNow() >= this.deadlineMs) throw notOpen(this.state);
    if (this.inFlight()) throw refusal(PAYMENT_IN_PROGRESS_FAILURE, 'A payment for this checkout session is already in progress.');
    if (this.unknownAttempts().length > 0)
      throw refusal(PAYMENT_IN_PROGRESS_FAILURE, 'A payment for this checkout session is being confirmed with the provider.');
    if (input.method === 'card' && this.cardDeclines() >= this.maxCardDeclines) {
      throw refusal(CARD_LOCKED_FAILURE, 'Too many cards were declined on this checkout; card payments are locked.');
    }
    if (input.method === 'card' && !input.cardToken) throw refusal('parameter_missing', 'A card payment needs a card token.');
    // The page refuses it first; the session's one writer refuses it for any other caller. (A
    // validator is not re-run on replay, so this needs no patch.)
    if (input.method === 'pix' && !pixAllowed(input.amounts.currency, input.trial)) {
      throw refusal(PIX_UNAVAILABLE_FAILURE, 'PIX is only available for payments in BRL without a free trial.');
    }
  }

  /**
   * The pay update: the attempt is recorded before the first await (a second update in the same
   * activation finds it in flight), charged under its key, and landed; the page gets its outcome.
   */
  pay(input: PayInput): Promise<PayAnswer> {
    const n = this.state.attempts.length + 1;
    const attempt: CheckoutAttempt = {
      n,
      key: checkoutAttemptKey(this.sessionId, n),
      method: input.method,
      amount: input.amounts.amount_total,
      currency: input.amounts.currency,
      status: 'charging',
      code: null,
      transaction_id: null,
    };
    this.state.attempts.push(attempt);
    this.requests.set(n, input);
    showProgress('open', `Attempt ${n} (${attempt.method}, ${money(attempt.amount, attempt.currency)}) charging`, this.started);
    return this.runAttempt(attempt, input);
  }

  /** Lands the attempt's outcome; an unknown one is answered as such and asked about again in the background. */
  private async runAttempt(attempt: CheckoutAttempt, input: PayInput): Promise<PayAnswer> {
    // The buyer pays again while an earlier card waits for 3-D Secure: that one is cancelled first (or found paid).
    if (this.authenticationsWaiting().length > 0) {
      await this.mutex.runExclusive(() => this.fenceAuthentications('abandoned'));
      if (this.state.status !== 'open') return this.neverCharged(attempt);
    }
    const result = await this.chargeUntilKnown(attempt, input);
    if (result) await this.mutex.runExclusive(() => this.land(attempt, input, result));
    else this.becomeUnknown(attempt, input);
    const message = attempt.status === 'declined' || attempt.status === 'failed' ? (this.state.last_error?.message ?? null) : null;
    return { attempt: { ...attempt }, session: this.state.status, message };
  }

  /** The session was paid by an earlier attempt while this one waited to start: it never reached the provider. */
  private neverCharged(attempt: CheckoutAttempt): PayAnswer {
    attempt.status = 'failed';
    attempt.code = PROVIDER_UNAVAILABLE_CODE;
    return { attempt: { ...attempt }, session: this.state.status, message: null };
  }

  /** Attempts whose card waits for the buyer's 3-D Secure. */
  authenticationsWaiting(): CheckoutAttempt[] {
    return this.state.attempts.filter((attempt) => attempt.status === 'action_required');
  }

  private waitingAuthentication(transactionId: string): CheckoutAttempt | undefined {
    return this.authenticationsWaiting().find((attempt) => attempt.transaction_id === transactionId);
  }

  /**
   * The card waits for 3-D Secure: the session stays open and unpaid (no completion, no order), the page
   * shows the bank's step, and the attempt lands once the provider's outcome arrives (awaitAuthentication).
   */
  private async beginAuthentication(attempt: CheckoutAttempt, input: PayInput, transactionId: string): Promise<void> {
    attempt.status = 'action_required';
    attempt.code = null;
    attempt.transaction_id = transactionId;
    this.state.last_error = null;
    // Its event may have overtaken the charge's own answer.
    const early = this.early.take(transactionId);
    if (early) this.authentications.set(transactionId, early);
    showProgress('open', `Attempt ${attempt.n} waiting for the buyer's 3-D Secure; open until ${at(this.deadlineMs)}`, this.started);
    await records.recordCheckoutAction({ storeId: this.storeId, sessionId: this.sessionId, transactionId, key: attempt.key });
    this.resolutions.push(this.awaitAuthentication(attempt, input, transactionId));
  }

  /** Until the 3-D Secure's outcome arrives (event or page confirm) or the attempt is fenced; bounded by the session's life. */
  private async awaitAuthentication(attempt: CheckoutAttempt, input: PayInput, transactionId: string): Promise<void> {
    await condition(() => this.authentications.has(transactionId) || attempt.status !== 'action_required');
    const notice = this.authentications.get(transactionId);
    if (!notice) return;
    await this.mutex.runExclusive(async () => {
      if (attempt.status !== 'action_required') return;
      if (notice.status === 'paid') return this.authenticated(attempt, input);
      return this.authenticationFailed(
        attempt,
        input,
        notice.code ?? AUTHENTICATION_FAILED_CODE,
        notice.message ?? 'The bank did not confirm the payment.',
      );
    });
  }

  /** Paid: the provider's record under the key gives the card it kept (setup_future_usage), then the attempt lands as approved. */
  private async authenticated(attempt: CheckoutAttempt, input: PayInput): Promise<void> {
    const transactionId = attempt.transaction_id!;
    if (input.trial) {
      // A trial's card setup: the card it saved, nothing charged.
      const setup = await records.readCheckoutSetup({ storeId: this.storeId, setupId: transactionId, ...this.onClock });
      attempt.status = 'charging';
      return this.land(attempt, input, setup);
    }
    const found = await this.lookupUntilKnown(attempt);
    const result: AttemptResult =
      found && found.outcome.status === 'approved' ? found : { outcome: { status: 'approved', transactionId }, savedCard: found?.savedCard ?? null };
    attempt.status = 'charging';
    await this.land(attempt, input, result);
  }

  /** A failed, cancelled or abandoned 3-D Secure is a declined card: the buyer may pay again (within the decline limit). */
  private async authenticationFailed(attempt: CheckoutAttempt, input: PayInput, code: string, message: string): Promise<void> {
    if (attempt.transaction_id) this.declinedAuthentications.set(attempt.transaction_id, attempt);
    attempt.status = 'charging';
    await this.land(attempt, input, { outcome: { status: 'declined', code, message }, savedCard: null });
  }

  /**
   * Fences every 3-D Secure still waiting (the session ends, or the buyer pays again): cancelled at the
   * provider under the attempt's key first; one the provider already took is delivered as paid instead.
   * Runs inside the mutex.
   */
  private async fenceAuthentications(why: 'expiry' | 'abandoned'): Promise<void> {
    for (const attempt of this.authenticationsWaiting()) {
      const fenced = await records.cancelCheckoutAction({
        storeId: this.storeId,
        key: attempt.key,
        transactionId: attempt.transaction_id,
        ...this.onClock,
      });
      if (attempt.status !== 'action_required') continue;
      const input = this.requests.get(attempt.n)!;
      if (fenced === 'succeeded') {
        await this.authenticated(attempt, input);
        continue;
      }
      if (why === 'abandoned') {
        await this.authenticationFailed(
          attempt,
          input,
          AUTHENTICATION_ABANDONED_CODE,
          'The bank step was left unfinished; that payment was cancelled.',
        );
        continue;
      }
      attempt.status = 'voided';
      attempt.code = AUTHENTICATION_ABANDONED_CODE;
      log.info('3-D Secure unfinished at the session end: cancelled at the provider', { sessionId: this.sessionId, key: attempt.key });
    }
  }

  /** The keyed charge request; the same request again answers what the provider did with the first. */
  private charge(attempt: CheckoutAttempt, input: PayInput): Promise<AttemptResult> {
    return charges.chargeCheckoutAttempt({
      ...withoutNewBuyer(input),
      storeId: this.storeId,
      sessionId: this.sessionId,
      key: attempt.key,
      ...this.onClock,
    });
  }

  /**
   * The charge activity; past its tries (a timeout, a 5xx, a lost connection) the provider is asked by
   * key once, and null (unknown) when it has no record yet: a try may still reach it.
   */
  private async chargeUntilKnown(attempt: CheckoutAttempt, input: PayInput): Promise<AttemptResult | null> {
    try {
      return await this.charge(attempt, input);
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      log.warn('checkout charge failed after its retries; asking the provider by key', {
        sessionId: this.sessionId,
        key: attempt.key,
        message: error.cause?.message,
      });
    }
    // A trial only saves a card, so nothing can have been charged.
    if (input.trial || !patched(UNKNOWN_ATTEMPTS_PATCH)) return (await this.lookupUntilKnown(attempt)) ?? NOTHING_CHARGED;
    const found = await this.lookup(attempt);
    return found ? found.result : null;
  }

  /** The attempt is unknown: no new attempt is taken until the provider answers for it (resolveUnknown). */
  private becomeUnknown(attempt: CheckoutAttempt, input: PayInput): void {
    if (attempt.status !== 'charging') return;
    attempt.status = 'unknown';
    showProgress('open', `Attempt ${attempt.n} unknown (no answer from the provider); asking again under ${attempt.key}`, this.started);
    this.resolutions.push(this.resolveUnknown(attempt, input));
  }

  /**
   * While the session is open, the unknown attempt is asked about again on a backoff: its record at the
   * provider, else the same keyed request. Ends once it landed or the session is closing (the expiry
   * looks it up, the closed session re-checks it later).
   */
  private async resolveUnknown(attempt: CheckoutAttempt, input: PayInput): Promise<void> {
    const settledElsewhere = () => this.closing || this.state.status !== 'open' || attempt.status !== 'unknown';
    for (let round = 1; ; round++) {
      if (await condition(settledElsewhere, unknownRecheckMs(round))) return;
      const result = await this.askAgain(attempt, input);
      if (result) return this.mutex.runExclusive(() => this.land(attempt, input, result));
    }
  }

  /** The provider's record under the attempt's key, else (session still open) the keyed request again; null while unknown. */
  private async askAgain(attempt: CheckoutAttempt, input: PayInput): Promise<AttemptResult | null> {
    const found = await this.lookup(attempt);
    if (found) return found.result;
    if (found === undefined || this.closing || this.state.status !== 'open') return null;
    try {
      return await this.charge(attempt, input);
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      return null;
    }
  }

  /** Every background resolution has ended (the session closed or each attempt became known). */
  async resolutionsEnded(): Promise<void> {
    await Promise.all(this.resolutions);
  }

  /** The provider's record of the attempt (null: it never received it), asked until it answers. */
  private async lookupUntilKnown(attempt: CheckoutAttempt): Promise<AttemptResult | null> {
    for (;;) {
      const found = await this.lookup(attempt);
      if (found !== undefined) return found && found.result;
      await sleep(retryDelayMs(this.state.problem!.failures));
    }
  }

  private lookup(attempt: CheckoutAttempt) {
    const input = this.requests.get(attempt.n);
    return this.outsideStep('check_transaction', () =>
      outside.lookupCheckoutAttempt({
        storeId: this.storeId,
        sessionId: this.sessionId,
        key: attempt.key,
        method: attempt.method,
        amount: attempt.amount,
        currency: attempt.currency,
        description: input?.description ?? null,
        ...this.onClock,
      }),
    );
  }

  /** The attempt's outcome lands once: on an open session it completes or declines it; on a closed one an approval is given back. */
  private async land(attempt: CheckoutAttempt, input: PayInput, result: AttemptResult): Promise<void> {
    if (attempt.status !== 'charging' && attempt.status !== 'unknown') return;
    const { outcome } = result;
    if (this.state.status !== 'open') return this.giveBack(attempt, outcome, input);
    if (outcome.status === 'action_required') {
      if (patched(AUTHENTICATION_PATCH)) return this.beginAuthentication(attempt, input, outcome.transactionId);
      return this.land(attempt, input, { ...result, outcome: { status: 'review', transactionId: outcome.transactionId } });
    }
    attempt.status = outcome.status;
    attempt.code = 'code' in outcome ? outcome.code : null;
    attempt.transaction_id = 'transactionId' in outcome ? outcome.transactionId : null;
    if (takesPayment(outcome)) return this.complete(attempt, input, result);
    const error = { code: attempt.code!, message: 'message' in outcome ? outcome.message : '' };
    this.state.last_error = error;
    const cardLocked = this.cardDeclines() >= this.maxCardDeclines;
    showProgress(
      'open',
      `Attempt ${attempt.n} ${attempt.status} (${attempt.code})${cardLocked ? '; cards locked' : ''}; open until ${at(this.deadlineMs)}`,
      this.started,
    );
    await records.recordCheckoutDecline({ storeId: this.storeId, sessionId: this.sessionId, error, ...(cardLocked ? { cardLocked } : {}) });
  }

  /** An outcome that arrived after the session closed: nothing is applied, money taken goes back, and its buyer is told. */
  private async giveBack(attempt: CheckoutAttempt, outcome: PaymentAttemptOutcome, input: PayInput): Promise<void> {
    attempt.status = outcome.status;
    attempt.code = 'code' in outcome ? outcome.code : null;
    attempt.transaction_id = 'transactionId' in outcome ? outcome.transactionId : null;
    if (!takesPayment(outcome) && outcome.status !== 'action_required') return;
    log.error('a payment landed on a closed checkout session; giving it back', {
      sessionId: this.sessionId,
      key: attempt.key,
      outcome: outcome.status,
    });
    const back = await records.refundCheckoutAttempt({ storeId: this.storeId, key: attempt.key, ...this.onClock });
    if (!back.ok) {
      log.error('the late payment could not be given back; an operator must look at it', {
        sessionId: this.sessionId,
        key: attempt.key,
        reason: back.reason,
      });
      return;
    }
    attempt.status = back.status;
    // A PIX code or a 3-D Secure cancelled before anything was paid moved no money: nothing to tell.
    const moneyMoved = back.status === 'refunded' || outcome.status === 'approved' || outcome.status === 'review';
    if (moneyMoved && patched(LATE_REFUND_EMAIL_PATCH)) await this.tellBuyerGivenBack(attempt, input);
  }

  /**
   * The buyer of an attempt given back is told by e-mail, once per attempt. Only ids and the amount enter
   * the payload (DESIGN.md principle 10): the activity reads the address from the buyer's record, written
   * now for a new buyer (their payment was taken, as complete() writes it).
   */
  private async tellBuyerGivenBack(attempt: CheckoutAttempt, input: PayInput): Promise<void> {
    if (input.trial || !sendsBuyerEmails(this.started)) return;
    const { storeId, sessionId } = this;
    const customerId = input.newBuyer ? (await records.writeCheckoutBuyer({ storeId, customer: input.newBuyer })).customerId : input.customerId;
    const key = lateRefundEmailKey(sessionId, attempt.n);
    const email = { storeId, sessionId, customerId, amount: attempt.amount, currency: attempt.currency, key };
    await sendBuyerEmail((emails) => emails.sendSessionLateRefundEmail(email), { key, sessionId });
  }

  /**
   * A paid notice for an attempt this session declined (a 3-D Secure that failed, then confirmed again with
   * the page's client secret): that payment completes nothing, so it is given back under the attempt's key
   * and its buyer told, whether the session is open or closed. Runs in the background, under the mutex.
   */
  private givePaidDeclineBack(attempt: CheckoutAttempt): void {
    log.error('a paid notice named a declined attempt; giving it back', { sessionId: this.sessionId, key: attempt.key });
    this.paidDeclinesRunning++;
    const giving = this.mutex.runExclusive(async () => {
      try {
        const back = await records.refundCheckoutAttempt({ storeId: this.storeId, key: attempt.key, ...this.onClock });
        if (!back.ok)
          return log.error('the paid decline could not be given back; an operator must look at it', { key: attempt.key, reason: back.reason });
        attempt.status = back.status;
        await this.tellBuyerGivenBack(attempt, this.requests.get(attempt.n)!);
      } finally {
        this.paidDeclinesRunning--;
      }
    });
    this.paidDeclines.set(attempt.n, giving);
  }

  /** Every paid decline given back (a notice may arrive until the run ends; each is finished before it does). */
  async paidDeclinesGivenBack(): Promise<void> {
    if (this.paidDeclinesRunning > 0) await condition(() => this.paidDeclinesRunning === 0);
  }

  private async complete(attempt: CheckoutAttempt, input: PayInput, result: AttemptResult): Promise<void> {
    const { storeId, sessionId, state } = this;
    const { outcome } = result;
    const buyer = input.newBuyer
      ? await records.writeCheckoutBuyer({ storeId, customer: input.newBuyer })
      : { customerId: input.customerId, customerEmail: input.customerEmail };
    const pending = outcome.status === 'review' || outcome.status === 'pix_pending';
    // A session that only reads its test clock learns the clock's time now: the payment is dated by it.
    await refreshClock((clockId) => records.readTestClockNow({ storeId, clockId }));
    const completed = await records.completeCheckoutSession({
      storeId,
      sessionId,
      result: {
        attemptKey: attempt.key,
        method: input.method,
        outcome,
        amounts: input.amounts,
        installments: input.installments,
        ...buyer,
        savedCard: result.savedCard,
      },
      paymentStatus: pending ? 'pending' : 'paid',
      completedAt: Math.floor(clockNow() / 1000),
    });
    state.status = 'complete';
    state.payment_status = pending ? 'pending' : 'paid';
    state.order = completed.order;
    state.customer = buyer.customerId;
    state.method = input.method;
    state.transaction_id = attempt.transaction_id;
    state.pix_expires_at = outcome.status === 'pix_pending' ? outcome.pixExpiresAt : null;
    state.last_error = null;
    this.paying = attempt;
    this.paidAtMs = clockNow();
    if (pending) this.notice = this.early.take(state.transaction_id!);
    upsertSearchAttributes([{ key: CUSTOMER_ID_ATTRIBUTE, value: buyer.customerId }]);
    // checkout.session.* exist only in 2026-11-01; a 2026-09-01 endpoint hears of the purchase as
    // order.paid, which the catalog derives from the paid order's invoice.paid (so it carries the order).
    await records.emitCheckoutSessionEvent({ storeId, sessionId, type: 'checkout.session.completed', legacyType: null });
    if (!pending && completed.order) await records.emitCheckoutOrderEvent({ storeId, orderId: completed.order });
  }

  /** The expire update: an attempt in flight lands first (or is looked up); the expiry then refuses if it completed the session. */
  async expire() {
    this.closing = true;
    await this.settleAttemptInFlight();
    return this.mutex.runExclusive(async () => {
      await this.fenceAuthentications('expiry');
      if (this.state.status !== 'open') throw notOpen(this.state);
      return this.expireNow();
    });
  }

  /** Refuses an expire update at once when the session is already closed. */
  refuseUnlessOpen(): void {
    if (this.state.status !== 'open') throw notOpen(this.state);
  }

  /** The deadline passed: an attempt in flight lands or is looked up, then the session expires unless it completed. */
  async expireAtDeadline(): Promise<void> {
    this.closing = true;
    await this.settleAttemptInFlight();
    await this.mutex.runExclusive(async () => {
      await this.fenceAuthentications('expiry');
      if (this.state.status === 'open') await this.expireNow();
    });
  }

  /**
   * Waits up to the hold for the attempt in flight; then asks the provider by its key: a payment it
   * took completes the session now, anything else lets the expiry go ahead (a later approval is given back).
   */
  private async settleAttemptInFlight(): Promise<void> {
    if (await condition(() => this.inFlight() === undefined, this.holdMs)) return this.settleUnknownAttempt();
    const attempt = this.inFlight()!;
    const found = await this.lookupUntilKnown(attempt);
    if (found && takesPayment(found.outcome)) await this.landWhileOpen(attempt, found);
  }

  /** Closing with an attempt unknown: one look-up by key lands what the provider holds; else the closed session re-checks it later. */
  private async settleUnknownAttempt(): Promise<void> {
    const [attempt] = this.unknownAttempts();
    if (!attempt) return;
    const found = await this.lookup(attempt);
    if (found) await this.landWhileOpen(attempt, found.result);
  }

  private landWhileOpen(attempt: CheckoutAttempt, result: AttemptResult): Promise<void> {
    return this.mutex.runExclusive(() =>
      this.state.status === 'open' ? this.land(attempt, this.requests.get(attempt.n)!, result) : Promise.resolve(),
    );
  }

  /**
   * The session is closed: each attempt still unknown is looked up again on CLOSED_RECHECKS_MS; a
   * payment found is given back (refunded or voided, keyed), a decline recorded. One the provider still
   * has no record of a day later never reached it (its tries were stopped when given up).
   */
  async recheckUnknownAttempts(): Promise<void> {
    let waitedMs = 0;
    for (const atMs of CLOSED_RECHECKS_MS) {
      if (this.unknownAttempts().length === 0) return;
      await sleep(atMs - waitedMs);
      waitedMs = atMs;
      for (const attempt of this.unknownAttempts()) await this.recheck(attempt);
    }
    for (const attempt of this.unknownAttempts()) this.neverReceived(attempt);
  }

  private async recheck(attempt: CheckoutAttempt): Promise<void> {
    const found = await this.lookupUntilKnown(attempt);
    if (found) await this.mutex.runExclusive(() => this.giveBack(attempt, found.outcome, this.requests.get(attempt.n)!));
  }

  private neverReceived(attempt: CheckoutAttempt): void {
    attempt.status = 'failed';
    attempt.code = PROVIDER_UNAVAILABLE_CODE;
    log.warn('an unknown checkout attempt was never received by the provider', { sessionId: this.sessionId, key: attempt.key });
  }

  private async expireNow() {
    const { storeId, sessionId } = this;
    const session = await records.markCheckoutSessionExpired({ storeId, sessionId });
    this.state.status = 'expired';
    await records.emitCheckoutSessionEvent({ storeId, sessionId, type: 'checkout.session.expired', legacyType: null });
    return session;
  }

  noticeArrived(incoming: ProviderNotice): void {
    // A 3-D Secure's outcome (its event, or the page's confirm re-check): the waiting attempt takes it.
    if (this.waitingAuthentication(incoming.transactionId)) {
      if (!this.authentications.has(incoming.transactionId)) this.authentications.set(incoming.transactionId, incoming);
      return;
    }
    const paidDecline = this.paidDecline(incoming);
    if (paidDecline) return this.givePaidDeclineBack(paidDecline);
    if (this.notice !== null) return;
    if (this.state.transaction_id === null) {
      this.early.keepFirst(incoming);
      return;
    }
    // Notices for other transactions (an earlier declined attempt) do not concern this session.
    if (incoming.transactionId === this.state.transaction_id) this.notice = incoming;
  }

  /**
   * The declined attempt a paid notice names, not yet being given back; undefined otherwise. Only a declined
   * 3-D Secure can be paid later. The session's own payment cannot reach here settled unpaid: a PIX settles
   * unpaid only after the provider confirmed its cancel (final at Stripe and at the test connection), a
   * review ended by its window was voided or refunded by this session, and a review the provider refused
   * has no client secret anyone could confirm it with. Its paid notice after the run ended goes to the
   * give-back workflow, which records its order refunded.
   */
  private paidDecline(incoming: ProviderNotice): CheckoutAttempt | undefined {
    if (incoming.status !== 'paid') return undefined;
    const attempt = this.declinedAuthentications.get(incoming.transactionId);
    if (attempt?.status !== 'declined' || this.paidDeclines.has(attempt.n) || !patched(PAID_DECLINE_PATCH)) return undefined;
    return attempt;
  }

  /** A pending PIX or review: waits for the provider's notice (or asks the provider by key), then settles the session. */
  async awaitSettlement(): Promise<void> {
    let outcome: Settlement | null = null;
    while (outcome === null) {
      outcome =
        this.state.method === 'pix' && this.state.pix_expires_at !== null ? await this.awaitPix(this.state.pix_expires_at) : await this.awaitReview();
    }
    await this.mutex.runExclusive(() => this.settle(outcome));
  }

  /**
   * One outside step; undefined when it failed after its retry policy (or at once, nonRetryable):
   * logged and kept in state.problem (queryable) for the caller to try again later.
   */
  async outsideStep<T>(step: NonNullable<CheckoutWorkflowState['problem']>['step'], call: () => Promise<T>): Promise<T | undefined> {
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

  /** A pending PIX: its notice until the code expires; then paid only if the provider says so (by key), expired otherwise. */
  private async awaitPix(pixExpiresAt: number): Promise<Settlement | null> {
    const left = pixExpiresAt * 1000 - clockNow();
    if (left > 0) await clockWait(() => this.notice !== null, left);
    if (this.notice?.status !== 'paid' && patched(PIX_FENCE_PATCH)) return this.fencePix();
    if (this.notice) return this.notice.status;
    const found = await this.lookup(this.paying!);
    if (found !== undefined) return found?.state === 'paid' ? 'paid' : found?.state === 'refused' ? 'refused' : 'expired';
    // The provider's answer or its notice, whichever comes first, decides.
    await condition(() => this.notice !== null, retryDelayMs(this.state.problem!.failures));
    return null;
  }

  /**
   * The PIX's expiry fence: the intent is cancelled at the provider under `<key>#cancel` first. Only a
   * cancel it confirms expires the PIX (refused when its notice said so); a payment it already took is
   * paid. No answer (timeout, 5xx) is unknown: asked again on retryDelayMs (5 minutes doubling, at most a
   * day), never assumed; a paid notice meanwhile decides.
   */
  private async fencePix(): Promise<Settlement | null> {
    const attempt = this.paying!;
    const fenced = await this.outsideStep('cancel_pending', () =>
      outside.cancelPendingCheckoutAttempt({ storeId: this.storeId, key: attempt.key, transactionId: attempt.transaction_id, ...this.onClock }),
    );
    if (fenced?.status === 'succeeded') return 'paid';
    if (fenced) return this.notice?.status === 'refused' ? 'refused' : 'expired';
    await condition(() => this.notice?.status === 'paid', retryDelayMs(this.state.problem!.failures));
    return this.notice?.status === 'paid' ? 'paid' : null;
  }

  /** A review: its notice, or the provider asked by key daily (sooner after a failed lookup); at the window's end it is refused and voided. */
  private async awaitReview(): Promise<Settlement | null> {
    const now = clockNow();
    const wait = this.state.problem?.step === 'check_transaction' ? retryDelayMs(this.state.problem.failures) : this.nextReviewWaitMs(now);
    // Overdue on a test clock: asked now, since 1 ms past a clock that stopped here never comes (off a clock, as recorded).
    const arrived = await clockWait(() => this.notice !== null, Math.max(wait, onTestClock() ? 0 : 1));
    if (arrived && this.notice) return this.notice.status;
    const found = await this.lookup(this.paying!);
    if (found === undefined) return null;
    const settled = settlementOf(found?.state ?? null);
    if (settled) return settled;
    return reviewWindowOver(this.paidAtMs, clockNow()) ? this.endReview() : null;
  }

  /**
   * Daily, then at the window's end; past it, after an end that had nothing to give back, 5 minutes doubling
   * up to a day (DESIGN.md principle 9: at most one look-up and one void a day from then on).
   */
  private nextReviewWaitMs(now: number): number {
    const due = nextReviewCheckMs(this.paidAtMs, now) - now;
    if (due > 0 || this.reviewEndRounds === 0 || !patched(REVIEW_END_BACKOFF_PATCH)) return due;
    return retryDelayMs(this.reviewEndRounds);
  }

  /** The review window ran out: the payment counts as refused and is voided, unless the provider captured it meanwhile. */
  private async endReview(): Promise<Settlement | null> {
    const attempt = this.paying!;
    const back = await records.refundCheckoutAttempt({ storeId: this.storeId, key: attempt.key, ...this.onClock });
    if (back.ok) {
      attempt.status = back.status;
      log.warn('review window over: payment refused and given back', { sessionId: this.sessionId, key: attempt.key, status: back.status });
      return 'refused';
    }
    // Nothing to give back: it settled just now; the provider's record says how.
    const found = await this.lookup(attempt);
    const settled = settlementOf(found?.state ?? null);
    if (settled) return settled;
    // Still pending (processing) or unknown at the provider: asked again after a growing wait, never at once.
    this.reviewEndRounds++;
    log.warn('review window over but nothing could be given back yet; asking again later', {
      sessionId: this.sessionId,
      key: attempt.key,
      round: this.reviewEndRounds,
      reason: back.reason,
    });
    return null;
  }

  private async settle(outcome: Settlement): Promise<void> {
    const { storeId, sessionId, state } = this;
    const paid = outcome === 'paid';
    await records.settleCheckoutSession({ storeId, sessionId, outcome, settledAt: Math.floor(clockNow() / 1000) });
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

/** A pending payment's settlement from the provider's state now; null while still pending. */
function settlementOf(state: TransactionState | null): Settlement | null {
  if (state === 'paid' || state === 'approved') return 'paid';
  if (state === 'refused' || state === 'declined' || state === 'voided' || state === 'refunded') return 'refused';
  if (state === 'expired') return 'expired';
  return null;
}
