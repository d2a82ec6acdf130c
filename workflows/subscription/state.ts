// What one run of the subscription workflow knows (the document's life, version and object, a charge
// awaiting the provider's notice) and one method per action or timed step, each taken under the mutex
// and written through activities that compare-and-set the document's version. A paid cycle and a
// cancellation send the buyer a notice beside those steps (never holding the mutex).
import { ApplicationFailure, currentUpdateInfo, log, patched, proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import { PROVIDER_TRIES_PER_ROUND, untilKnown } from '../lib/unknown-rounds';
import { reviewUntilStopped } from '../lib/reviews';
import { clockNow, clockNowSeconds, clockWait, joinClock, testClockRef } from '../lib/clock';
import type { Activities } from '../../activities';
import { WORKER_GONE_AFTER } from '../lib/timeouts';
import type { ProviderNotice } from '../../adapters/provider/types';
import type { EventRequest } from '../../store/events';
import type { SubscriptionObject } from '../../resources/subscription';
import type { ChargeDecision, ChargeWorkflowInput } from '../charge/messages';
import * as rules from '../../domain/subscriptions';
import { nextReviewCheckMs } from '../../domain/reviews';
import { EarlyNotices } from '../lib/early-notices';
import { Mutex } from '../lib/mutex';
import { buyerEmailKey, sendBuyerEmail, sendsBuyerEmails } from '../lib/buyer-emails';
import {
  ACTION_REFUSED,
  type CancelInput,
  type CarriedReview,
  type ChangeOfferInput,
  type PauseInput,
  type SubscriptionWorkflowInput,
  type SubscriptionWorkflowState,
} from './messages';

// MongoDB reads and writes: quick, retried until they succeed.
const records = proxyActivities<Activities>({
  startToCloseTimeout: '20 seconds',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
// Provider charges: keyed, so a retry after a timeout asks the provider for the same charge again.
const payments = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '2 seconds', maximumInterval: '5 minutes' },
});

// One-off charges (the charge workflow waits on them): keyed, and heartbeating, so a worker dying
// mid-charge is noticed in seconds and another repeats the charge under its key (charged once).
const oneOffPayments = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
// The same charge as a local activity (issue 30): it runs inside the update's workflow task, without an
// activity task's two trips through the server. Keyed, so a worker dying mid-charge means the task is
// retried on a survivor and the charge runs again under its key (charged once); a charge longer than
// the workflow task timeout keeps the task alive (the SDK heartbeats it), and 30 s is the regular budget.
const oneOffLocalPayments = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
/**
 * Runs before this retried a one-off charge's local activity without end (a minute apart at most, the
 * workflow task heartbeating all along: the history grew while the outcome stayed unknown). Patched runs
 * try PROVIDER_TRIES_PER_ROUND times, then wait on a timer (unknownRetryMs) and ask again by key.
 */
const ONE_OFF_ROUNDS_PATCH = 'one-off-charge-bounded-rounds';
const oneOffBoundedPayments = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '30 seconds', maximumAttempts: PROVIDER_TRIES_PER_ROUND },
});

/** How many notices for transactions not (yet) awaited are kept: enough for a charge in flight plus re-sent stale ones. */
const EARLY_NOTICES_KEPT = 20;

/** Workflow time in Unix seconds: the test clock's when attached (Date is deterministic in the sandbox). */
export const nowSeconds = clockNowSeconds;

/** Runs before this kept nothing of the paused state and resumed active; their replay must too. */
const restoresPausedState = () => patched('resume-restores-paused-state');

/**
 * Runs before this read an off-session `authentication_required` as any decline: no reason kept, no buyer
 * e-mail, no fence before the next retry. Their replay must too (the patch is asked only where it changes something).
 */
const RENEWAL_AUTHENTICATION = 'renewal-authentication';

function refused(reason: string): ApplicationFailure {
  return ApplicationFailure.create({ type: ACTION_REFUSED, message: reason, nonRetryable: true });
}

/** A cycle charge left in review: a renewal (period from periodStart) or the reactivation of an ended subscription. */
interface AwaitedCharge {
  transactionId: string;
  orderId: string;
  periodStart: number;
  reactivation: boolean;
  /** The provider key it was charged under and when its review began (runs from before lookups have neither). */
  key?: string;
  startedMs?: number;
  /** When the provider is next asked by key, kept across continue-as-new (default: a day after the wait begins). */
  nextCheckMs?: number;
}

type Loaded = NonNullable<Awaited<ReturnType<Activities['loadSubscription']>>>;
type WithRequest = { request?: EventRequest | null };

export class LiveSubscription {
  /** Serializes every action and timed step; the load holds it first. */
  readonly mutex = new Mutex();
  life: rules.SubscriptionLife = undefined as unknown as rules.SubscriptionLife;
  version = -1;
  object: SubscriptionObject = undefined as unknown as SubscriptionObject;
  /** Set by every write: the main loop recomputes its next step. */
  changed = false;
  awaiting: AwaitedCharge | null = null;
  notice: ProviderNotice | null = null;
  /** The document was not found: every action is refused. */
  missing = false;
  /**
   * Notices for transactions not awaited, oldest first: a charge's notice can arrive while its activity
   * runs, and signals are handled before the activity's result in an activation. No charge is in flight
   * at continueAsNew (it waits for handlers), so none is carried across it; the awaited one's is.
   */
  private readonly earlyNotices = new EarlyNotices(EARLY_NOTICES_KEPT);
  private readonly workflowId = workflowInfo().workflowId;
  /** Buyer e-mails under way; continue-as-new waits for them. */
  private emailsInFlight = 0;
  /** The provider's notice that the buyer confirmed the renewal attempt the bank asked about (settled by the main loop). */
  private confirmation: ProviderNotice | null = null;

  constructor(private readonly input: SubscriptionWorkflowInput) {
    // Set before the handlers are registered, so a notice signalled to this run at once is taken.
    if (input.review) this.resumeReview(input.review);
  }

  /** Joins the test clock and reads the document under the mutex, so updates already waiting for this run see both. */
  load() {
    return this.mutex.runExclusive(async () => {
      await joinClock(this.input.testClock);
      const { storeId, subscriptionId, testClock } = this.input;
      return records.loadSubscription({ storeId, subscriptionId, testClock });
    });
  }

  adopt(loaded: Loaded): void {
    this.life = loaded.life;
    this.version = loaded.version;
    this.object = loaded.object;
  }

  snapshot(): SubscriptionWorkflowState {
    const { life, version, awaiting, object } = this;
    return {
      loaded: version >= 0,
      life,
      version,
      next: version >= 0 ? rules.nextStep(life) : null,
      awaitingSettlement: awaiting ? { transactionId: awaiting.transactionId, orderId: awaiting.orderId } : null,
      object,
    };
  }

  // The actions (updates), each decided on the state as it is once the mutex is held.
  pause({ reason, request }: PauseInput) {
    return this.action(() => rules.pause(this.life, restoresPausedState()), request, reason ?? null);
  }

  resume({ request }: WithRequest) {
    return this.action(() => rules.resume(this.life, nowSeconds()), request);
  }

  cancel({ reason, comment, source, request }: CancelInput) {
    let asked: rules.RenewalAuthentication | null = null;
    return this.action(
      () => {
        asked = this.life.past_due_details?.authentication ?? null;
        return rules.cancelNow(this.life, nowSeconds(), { reason: reason ?? null, comment: comment ?? null, source: source ?? 'dashboard' });
      },
      request,
      reason ?? null,
      async () => {
        this.emailCancellation();
        if (asked) await this.closeEndedAuthentication(asked);
      },
    );
  }

  scheduleCancellation({ reason, comment, source, request }: CancelInput) {
    return this.action(
      () => rules.scheduleCancellation(this.life, nowSeconds(), { reason: reason ?? null, comment: comment ?? null, source: source ?? 'dashboard' }),
      request,
      reason ?? null,
    );
  }

  changeOffer({ offer, request }: ChangeOfferInput) {
    return this.action(async () => {
      const found = await records.offerTerms({ storeId: this.input.storeId, offerId: offer, currency: this.life.currency });
      if (!found.ok) return { ok: false, reason: found.reason };
      return rules.changeOffer(this.life, found.terms, patched('change-offer-next-billing-from-new-cycle'));
    }, request);
  }

  changePaymentMethod({ payment_method, request }: { payment_method: rules.SubscriptionPaymentMethod } & WithRequest) {
    return this.action(() => rules.changePaymentMethod(this.life, payment_method, nowSeconds()), request);
  }

  /** A one-off charge under the mutex: refused (spec's code) unless the subscription accepts charges now; charged on its card now. */
  chargeOneOff(input: ChargeWorkflowInput): Promise<ChargeDecision> {
    return this.mutex.runExclusive(async () => {
      const refusal = this.missing
        ? { code: 'subscription_not_chargeable', message: 'The subscription no longer exists.' }
        : rules.oneOffChargeRefusal(this.life);
      if (refusal) throw ApplicationFailure.create({ type: refusal.code, message: refusal.message, nonRetryable: true });
      const card = this.life.default_payment_method!.id;
      const charge = { ...input, subscription: { ...input.subscription, paymentMethodId: card } };
      // Runs that charged through an activity task before this change must replay doing so.
      if (!patched('one-off-charge-local')) return oneOffPayments.executeSubscriptionCharge(charge);
      if (!patched(ONE_OFF_ROUNDS_PATCH)) return oneOffLocalPayments.executeSubscriptionCharge(charge);
      return untilKnown(
        () => oneOffBoundedPayments.executeSubscriptionCharge(charge),
        (rounds, message, waitMs) =>
          log.warn('one-off charge outcome unknown; asked again later by key', { key: input.key, rounds, message, waitMs }),
      );
    });
  }

  reactivate({ request }: WithRequest) {
    return this.mutex.runExclusive(() => this.reactivateNow(request ?? null));
  }

  /**
   * The provider's notice: taken if its charge is awaited; the buyer's confirmation of the renewal the bank
   * asked about wakes the main loop; any other is kept for a charge whose result is still on its way.
   */
  noticeArrived(settled: ProviderNotice): void {
    if (this.awaiting && settled.transactionId === this.awaiting.transactionId) this.notice = settled;
    else if (this.confirms(settled)) {
      this.confirmation = settled;
      this.changed = true;
    } else this.keepEarlyNotice(settled);
  }

  /** A paid notice of the attempt the buyer was asked to confirm (runs from before never had one). */
  private confirms(settled: ProviderNotice): boolean {
    const asked = this.version >= 0 ? this.life.past_due_details?.authentication : null;
    return Boolean(asked && settled.status === 'paid' && settled.transactionId === asked.transaction_id && patched(RENEWAL_AUTHENTICATION));
  }

  /** The buyer's confirmation arrived and waits for the main loop. */
  confirmationArrived(): boolean {
    return this.confirmation !== null;
  }

  /**
   * The buyer confirmed the renewal the bank asked about: its order is paid and the cycle credited, unless the
   * subscription moved on meanwhile (a retry fenced that attempt first: then the notice is stale).
   */
  async settleConfirmation(): Promise<boolean> {
    const settled = this.confirmation!;
    this.confirmation = null;
    const asked = this.life.past_due_details?.authentication;
    if (!asked || asked.transaction_id !== settled.transactionId) return false;
    return this.confirmedRenewalPaid(asked, settled.settledAt);
  }

  /** The confirmed attempt's order becomes paid and pays the open cycle, once (the order moves failed -> paid once). */
  private async confirmedRenewalPaid(asked: rules.RenewalAuthentication, paidAt: number): Promise<boolean> {
    const { storeId } = this.input;
    const paid = await records.payConfirmedRenewal({ storeId, orderId: asked.order_id, transactionId: asked.transaction_id, paidAt });
    if (!paid) return false;
    const periodStart = this.life.next_billing_at ?? nowSeconds();
    return this.creditPaidReview({ transactionId: asked.transaction_id, orderId: asked.order_id, periodStart, reactivation: false, key: asked.key });
  }

  /**
   * Closes the attempt the buyer was asked to confirm before anything else happens to its cycle: `none` when
   * there is none or it is closed (a new attempt may charge); `paid` when the buyer had confirmed it (the cycle
   * is paid by it), `failed` when its order was settled otherwise (not expected: the attempt counts as failed
   * and dunning moves on). Either way nothing is charged beside a payment the buyer made.
   */
  private async fenceAuthentication(): Promise<'none' | 'paid' | 'failed'> {
    const asked = this.life.past_due_details?.authentication;
    if (!asked || !patched(RENEWAL_AUTHENTICATION)) return 'none';
    if ((await this.closeAuthentication(asked)) !== 'succeeded') return 'none';
    this.confirmation = null;
    if (await this.confirmedRenewalPaid(asked, nowSeconds())) return 'paid';
    await this.cycleFailed(rules.AUTHENTICATION_REQUIRED);
    return 'failed';
  }

  /** A subscription ended while its buyer could still confirm a renewal: closed; confirmed meanwhile, paid and given back. */
  private async closeEndedAuthentication(asked: rules.RenewalAuthentication): Promise<void> {
    if (!patched(RENEWAL_AUTHENTICATION) || (await this.closeAuthentication(asked)) !== 'succeeded') return;
    await this.confirmedRenewalPaid(asked, nowSeconds());
  }

  /** A provider call (up to three Stripe requests): under the provider charges' timeouts and retries. */
  private closeAuthentication(asked: rules.RenewalAuthentication) {
    return payments.closeRenewalAuthentication({
      storeId: this.input.storeId,
      idempotencyKey: asked.key,
      transactionId: asked.transaction_id,
      ...testClockRef(this.input.testClock),
    });
  }

  // The timed steps (the main loop takes the mutex around each).
  /** A due step, re-decided: an action may have changed the state while the loop waited for the mutex. True when a cycle was paid. */
  async takeDueStep(): Promise<boolean> {
    const due = rules.nextStep(this.life);
    if (due === null || due.at > nowSeconds() || this.awaiting) return false;
    if (due.kind === 'end') {
      await this.apply(rules.periodEnded(due.to, due.at), [{ type: 'customer.subscription.deleted' }], {
        action: due.to === 'canceled' ? 'canceled_at_period_end' : 'expired_cycle_limit',
        reason: null,
      });
      return false;
    }
    return this.chargeDue();
  }

  /** The provider's notice for a renewal in review arrived: settle its order, then the subscription. */
  async settleAwaited(): Promise<boolean> {
    const pending = this.awaiting!;
    const settled = this.notice!;
    this.awaiting = null;
    this.notice = null;
    const status = await records.settleSubscriptionCycleOrder({ storeId: this.input.storeId, orderId: pending.orderId, notice: settled });
    if (pending.reactivation) {
      // Paid: the reactivation completes now, its period starting when the money arrived; refused: it stays ended.
      if (status !== 'paid' || !rules.isEnded(this.life.status)) return false;
      await this.reactivated(nowSeconds(), null);
      this.confirmPayment(pending.orderId);
      return true;
    }
    if (status === 'paid' && patched('paid-review-credits-its-period')) return this.creditPaidReview(pending);
    // An action may have ended or paused the subscription meanwhile: then only the order settles.
    if (!rules.CHARGEABLE_STATUSES.includes(this.life.status)) return false;
    if (status === 'paid') {
      await this.cycleApproved(pending.periodStart);
      this.confirmPayment(pending.orderId);
      return true;
    }
    await this.cycleFailed(settled.code);
    return false;
  }

  /**
   * A renewal paid after review pays for its period whatever happened meanwhile: credited (a paused
   * subscription stays paused with that period paid, so resuming never charges it again); an ended
   * one gives the money back (keyed refund, order refunded).
   */
  private async creditPaidReview(pending: AwaitedCharge): Promise<boolean> {
    if (rules.isEnded(this.life.status)) {
      await records.refundSubscriptionCycle({
        storeId: this.input.storeId,
        subscriptionId: this.input.subscriptionId,
        orderId: pending.orderId,
        key: pending.key!,
        ...testClockRef(this.input.testClock),
      });
      return false;
    }
    if (this.life.status === 'paused') {
      // The paid cycle is what a resume gives back: active, whatever the pause started from.
      const resumesActive: rules.LifeChange = restoresPausedState() ? { paused_from: 'active' } : {};
      const credited = { ...rules.chargeApproved(this.life, pending.periodStart), status: 'paused' as const, ...resumesActive };
      await this.apply(credited, [{ type: 'customer.subscription.updated' }], {
        action: 'renewed',
        reason: 'paid after review while paused',
      });
      this.confirmPayment(pending.orderId);
      return true;
    }
    await this.cycleApproved(pending.periodStart);
    this.confirmPayment(pending.orderId);
    return true;
  }

  /**
   * The notice of the charge in review; lost notices are looked up by key and a review past its window is
   * voided. False when `stop` came true first (the run continues as new; the review is carried).
   */
  async awaitNotice(stop: () => boolean): Promise<boolean> {
    const pending = this.awaiting!;
    if (!pending.key || !patched('review-lookups')) {
      await clockWait(() => this.notice !== null);
      return true;
    }
    const progress = await reviewUntilStopped(
      {
        storeId: this.input.storeId,
        idempotencyKey: pending.key,
        transactionId: pending.transactionId,
        notifyRef: this.workflowId,
        startedMs: pending.startedMs ?? clockNow(),
        noticed: () => this.notice,
        testClock: this.input.testClock,
        firstCheckMs: pending.nextCheckMs,
      },
      stop,
    );
    if (!('settled' in progress)) {
      pending.nextCheckMs = progress.nextCheckMs;
      return false;
    }
    this.notice = progress.settled;
    return true;
  }

  /** The charge in review as the next run takes it over, with its notice if this run already has it; null without a key to ask by. */
  carriedReview(): CarriedReview | null {
    const { transactionId, orderId, periodStart, reactivation, key, startedMs = clockNow(), nextCheckMs } = this.awaiting!;
    if (!key) return null;
    return {
      transactionId,
      orderId,
      periodStart,
      reactivation,
      key,
      startedMs,
      nextCheckMs: nextCheckMs ?? nextReviewCheckMs(startedMs, clockNow()),
      notice: this.notice,
    };
  }

  /** Waits on the charge in review the previous run carried over. */
  private resumeReview(review: CarriedReview): void {
    const { notice, ...pending } = review;
    this.awaiting = pending;
    this.notice = notice;
  }

  /** An action: decided on the state as it is once the mutex is held; refusals are 400 provider_error. */
  private action(
    decide: () => rules.ActionResult | Promise<rules.ActionResult>,
    request: EventRequest | null | undefined,
    reason: string | null = null,
    applied?: () => void | Promise<void>,
  ) {
    return this.mutex.runExclusive(async () => {
      if (this.missing) throw refused('The subscription no longer exists.');
      const result = await decide();
      if (!result.ok) throw refused(result.reason);
      const object = await this.apply(result.change, result.events, { action: result.historyAction, reason }, request ?? null);
      await applied?.();
      return object;
    });
  }

  private async reactivateNow(request: EventRequest | null): Promise<SubscriptionObject> {
    if (this.missing) throw refused('The subscription no longer exists.');
    const undo = rules.undoScheduledCancellation(this.life);
    if (undo) {
      if (!undo.ok) throw refused(undo.reason);
      return this.apply(undo.change, undo.events, { action: undo.historyAction, reason: null }, request);
    }
    const offer = rules.isEnded(this.life.status)
      ? await records.offerTerms({ storeId: this.input.storeId, offerId: this.life.offer.id, currency: this.life.currency })
      : null;
    const refusal = rules.reactivationRefusal(this.life, offer?.ok === true && offer.active);
    if (refusal) throw refused(refusal);
    // One payment in review at a time: a second one would replace the first in `awaiting` and lose its notice.
    if (this.awaiting) throw refused('A payment of this subscription is in review at the provider; reactivate once it has settled.');
    // A new cycle is charged at once under a key of the state it reactivates; a decline changes nothing.
    const at = nowSeconds();
    const key = await this.reactivationKey();
    const result = await this.chargeCycle(key, false);
    if (result.outcome === 'review') {
      // Money may still move: the pending renewal order waits for the provider's notice, which
      // reactivates (paid) or leaves the subscription ended (refused). Until then it is unchanged.
      this.awaitSettlement({
        transactionId: result.transactionId!,
        orderId: result.orderId!,
        periodStart: at,
        reactivation: true,
        key,
        startedMs: clockNow(),
      });
      this.changed = true;
      return this.object;
    }
    if (result.outcome !== 'approved') {
      const why = result.message ?? 'the card was declined';
      throw refused(`The provider refused the reactivation: ${why}${result.code ? ` (${result.code})` : ''}.`);
    }
    const object = await this.reactivated(at, request);
    this.confirmPayment(result.orderId);
    return object;
  }

  /** A due charge (renewal, trial end, dunning retry): true when a cycle was paid. */
  private async chargeDue(): Promise<boolean> {
    // A retry never charges beside the attempt the buyer may be confirming: that one is closed first.
    const fenced = await this.fenceAuthentication();
    if (fenced !== 'none') return fenced === 'paid';
    const periodStart = this.life.next_billing_at ?? nowSeconds();
    const key = patched('renewal-keys-by-cycle') ? await this.renewalKey() : this.cycleKey('cycle');
    const result = await this.chargeCycle(key, true);
    if (result.outcome === 'approved') {
      await this.cycleApproved(periodStart);
      this.confirmPayment(result.orderId);
      return true;
    }
    if (result.outcome === 'review') {
      this.awaitSettlement({
        transactionId: result.transactionId!,
        orderId: result.orderId!,
        periodStart,
        reactivation: false,
        key,
        startedMs: clockNow(),
      });
      return false;
    }
    await this.cycleFailed(result.code, { key, transactionId: result.transactionId, orderId: result.orderId });
    return false;
  }

  private async apply(
    change: rules.LifeChange,
    events: rules.LifeEvent[],
    history: { action: string; reason: string | null } | null,
    request: EventRequest | null = null,
  ): Promise<SubscriptionObject> {
    const result = await records.applySubscriptionChange({
      storeId: this.input.storeId,
      subscriptionId: this.input.subscriptionId,
      expectedVersion: this.version,
      set: change,
      events,
      history,
      at: nowSeconds(),
      request,
    });
    this.life = result.life;
    this.version = result.version;
    this.object = result.object;
    this.changed = true;
    return this.object;
  }

  /** A charge was left in review: wait for its notice, taking it at once if it already arrived. */
  private awaitSettlement(pending: AwaitedCharge): void {
    this.awaiting = pending;
    this.notice = this.earlyNotices.take(pending.transactionId);
  }

  private keepEarlyNotice(settled: ProviderNotice): void {
    // Runs started before this change dropped such notices; their replay must keep doing so.
    if (!patched('keep-early-provider-notices')) return;
    this.earlyNotices.keepLatest(settled);
  }

  /**
   * The provider key of the next attempt at this cycle: `renewal/<sub>/<cycle>/<k>`, k from the failed
   * attempts so far; a key the provider has already refused for good (a review refused while paused)
   * is skipped after asking it, so a version change never makes a new key for a cycle already charged.
   */
  private async renewalKey(): Promise<string> {
    const cycle = this.life.cycles_completed + 1;
    return this.unrefusedKey(`renewal/${this.input.subscriptionId}/${cycle}`, this.life.past_due_details?.attempts ?? 0);
  }

  /**
   * The provider key of a reactivation: `reactivation/<sub>/v<version>/<k>`, from the state it reactivates,
   * never from the merchant's key (a key reused after its 24 hours would replay the first approval). Every
   * reactivation writes the document, so an approval under a version's key was never credited before.
   */
  private async reactivationKey(): Promise<string> {
    if (patched('reactivation-keys-by-version')) return this.unrefusedKey(`reactivation/${this.input.subscriptionId}/v${this.version}`, 0);
    // Runs that reactivated before keyed it by the update id; their replay must keep doing so.
    const updateId = currentUpdateInfo()?.id ?? `v${this.version}`;
    return patched('renewal-keys-by-cycle')
      ? `reactivation/${this.input.subscriptionId}/${updateId}`
      : `reactivate:${this.input.subscriptionId}:${updateId}`;
  }

  /** `<base>/<k>` for the first k from `start` whose attempt the provider has not refused for good (asked by lookup). */
  private async unrefusedKey(base: string, start: number): Promise<string> {
    for (let k = start; ; k++) {
      const key = `${base}/${k}`;
      const found = await records.lookupCycleCharge({ storeId: this.input.storeId, idempotencyKey: key, ...testClockRef(this.input.testClock) });
      if (found !== 'refused') return key;
    }
  }

  private cycleKey(prefix: string): string {
    return `${prefix}:${this.input.subscriptionId}:${this.life.cycles_completed + 1}:v${this.version}`;
  }

  private chargeCycle(key: string, recordDeclinedOrder: boolean) {
    return payments.chargeSubscriptionCycle({
      storeId: this.input.storeId,
      subscriptionId: this.input.subscriptionId,
      key,
      at: nowSeconds(),
      recordDeclinedOrder,
      notifyRef: this.workflowId,
    });
  }

  private async reactivated(at: number, request: EventRequest | null): Promise<SubscriptionObject> {
    return this.apply(
      rules.reactivated(this.life, at),
      [{ type: 'customer.subscription.updated', legacyType: 'subscription.reactivated' }],
      { action: 'reactivated', reason: null },
      request,
    );
  }

  /** No buyer e-mail is under way (continue-as-new waits for this). */
  buyerEmailsSent(): boolean {
    return this.emailsInFlight === 0;
  }

  /** A buyer e-mail sent beside the subscription's steps: an SMTP outage never holds its mutex or its renewals. */
  private emailBuyer(send: Parameters<typeof sendBuyerEmail>[0], about: Record<string, unknown>): void {
    this.emailsInFlight += 1;
    const settled = () => {
      this.emailsInFlight -= 1;
    };
    void sendBuyerEmail(send, about).then(settled, settled);
  }

  /** The store's purchase confirmation for a paid cycle (renewal, trial end, reactivation), naming the period it paid for. */
  private confirmPayment(orderId: string | null): void {
    if (!orderId || !sendsBuyerEmails()) return;
    const { storeId } = this.input;
    const key = buyerEmailKey('payment-confirmation', orderId);
    const { current_period_start: start, current_period_end: end } = this.life;
    const period = start !== null && end !== null ? { start, end } : null;
    this.emailBuyer((emails) => emails.sendPaymentConfirmation({ storeId, orderId, key, period }), { key, orderId });
  }

  /** "The same notices as for a dashboard cancellation" (the spec's words: the buyer e-mails): keyed by the version the cancellation wrote. */
  private emailCancellation(): void {
    if (!sendsBuyerEmails()) return;
    const { storeId, subscriptionId } = this.input;
    const key = buyerEmailKey('cancellation', `v${this.version}`);
    this.emailBuyer((emails) => emails.sendCancellationNotice({ storeId, subscriptionId, key }), { key, subscriptionId });
  }

  private async cycleApproved(periodStart: number): Promise<void> {
    await this.apply(rules.chargeApproved(this.life, periodStart), [{ type: 'customer.subscription.updated' }], { action: 'renewed', reason: null });
  }

  /**
   * A failed cycle charge: past_due (its decline code kept) or expired after the last retry. An attempt the bank
   * wants the buyer to confirm (`authentication_required`) is kept while past_due, and the buyer is e-mailed a link
   * to confirm that same payment in the portal.
   */
  private async cycleFailed(code: string | null, attempt?: { key: string; transactionId: string | null; orderId: string | null }): Promise<void> {
    const failure = patched(RENEWAL_AUTHENTICATION) ? { code, authentication: authenticationOf(code, attempt) } : undefined;
    const declined = rules.chargeDeclined(this.life, nowSeconds(), failure);
    await this.apply(declined.change, declined.events, {
      action: declined.change.status === 'expired' ? 'expired_unpaid' : 'charge_failed',
      reason: code,
    });
    const asked = this.life.status === 'past_due' ? this.life.past_due_details?.authentication : null;
    if (asked) this.askBuyerToConfirm(asked);
  }

  /** The buyer's e-mail with the portal link where they confirm the renewal with 3-D Secure, keyed by its order. */
  private askBuyerToConfirm(asked: rules.RenewalAuthentication): void {
    if (!sendsBuyerEmails()) return;
    const { storeId, subscriptionId } = this.input;
    const key = buyerEmailKey('payment-authentication', asked.order_id);
    this.emailBuyer((emails) => emails.sendRenewalAuthenticationRequest({ storeId, subscriptionId, orderId: asked.order_id, key }), {
      key,
      subscriptionId,
    });
  }
}

/** The attempt a decline asks the buyer to confirm: only `authentication_required` with its payment and order. */
function authenticationOf(
  code: string | null,
  attempt?: { key: string; transactionId: string | null; orderId: string | null },
): rules.RenewalAuthentication | null {
  if (code !== rules.AUTHENTICATION_REQUIRED || !attempt?.transactionId || !attempt.orderId) return null;
  return { key: attempt.key, transaction_id: attempt.transactionId, order_id: attempt.orderId };
}
