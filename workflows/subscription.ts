// One subscription's life (`subscription/<sub_id>`): it owns time — the trial's end, renewals at
// next_billing_at, dunning retries, the end of a scheduled cancellation or of the cycle limit — and
// serializes every action (updates) with those steps through one lock. State lives in MongoDB and is
// changed only through activities that compare-and-set the document's version. It continues as new
// once per paid cycle; in canceled or expired it stays open, idle, for a reactivation.
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  currentUpdateInfo,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ProviderNotice } from '../adapters/provider/types';
import type { EventRequest } from '../store/events';
import type { SubscriptionObject } from '../store/subscriptions';
import * as rules from '../domain/subscriptions';
import {
  ACTION_REFUSED,
  cancelUpdate,
  changeOfferUpdate,
  changePaymentMethodUpdate,
  pauseUpdate,
  reactivateUpdate,
  resumeUpdate,
  scheduleCancellationUpdate,
  subscriptionProviderSettledSignal,
  subscriptionStateQuery,
  type SubscriptionWorkflowInput,
} from './subscription-messages';

// MongoDB reads and writes: quick, retried until they succeed.
const store = proxyActivities<Activities>({
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
// Provider charges: keyed, so a retry after a timeout asks the provider for the same charge again.
const payments = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', maximumInterval: '5 minutes' },
});

/** How many notices for transactions not (yet) awaited are kept: enough for a charge in flight plus re-sent stale ones. */
const EARLY_NOTICES_KEPT = 20;

/** Workflow time in Unix seconds (Date is deterministic inside the workflow sandbox). */
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Runs critical sections one after another, in arrival order (deterministic promise chain). */
class Lock {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

function refused(reason: string): ApplicationFailure {
  return ApplicationFailure.create({ type: ACTION_REFUSED, message: reason, nonRetryable: true });
}

export async function subscriptionWorkflow(input: SubscriptionWorkflowInput): Promise<void> {
  // Handlers are registered before the first await (an update may already be waiting for this run);
  // they wait for the state to be loaded through the lock, which the load holds.
  let life: rules.SubscriptionLife = undefined as unknown as rules.SubscriptionLife;
  let version = -1;
  let object: SubscriptionObject = undefined as unknown as SubscriptionObject;
  /** Set by every write: the main loop recomputes its next step. */
  let changed = false;
  /** A cycle charge left in review: a renewal (period from periodStart) or the reactivation of an ended subscription. */
  let awaiting: { transactionId: string; orderId: string; periodStart: number; reactivation: boolean } | null = null;
  let notice: ProviderNotice | null = null;
  /**
   * Notices for transactions not awaited, oldest first: a charge's notice can arrive while its activity
   * runs, and signals are handled before the activity's result in an activation. No charge is in flight
   * at continueAsNew (it waits for handlers and is skipped while awaiting), so none is carried across it.
   */
  const earlyNotices = new Map<string, ProviderNotice>();
  let missing = false;
  const lock = new Lock();
  const workflowId = workflowInfo().workflowId;
  // The load takes the lock first: registering a handler runs updates already waiting for this run
  // at once, and they must see the loaded state.
  const loading = lock.run(() => store.loadSubscription(input));

  async function apply(
    change: rules.LifeChange,
    events: rules.LifeEvent[],
    history: { action: string; reason: string | null } | null,
    request: EventRequest | null = null,
  ): Promise<SubscriptionObject> {
    const result = await store.applySubscriptionChange({
      storeId: input.storeId,
      subscriptionId: input.subscriptionId,
      expectedVersion: version,
      set: change,
      events,
      history,
      at: nowSeconds(),
      request,
    });
    life = result.life;
    version = result.version;
    object = result.object;
    changed = true;
    return object;
  }

  /** An action: decided on the state as it is once the lock is held; refusals are 400 provider_error. */
  function action(decide: () => rules.ActionResult | Promise<rules.ActionResult>, request: EventRequest | null | undefined, reason: string | null = null) {
    return lock.run(async () => {
      if (missing) throw refused('The subscription no longer exists.');
      const result = await decide();
      if (!result.ok) throw refused(result.reason);
      return apply(result.change, result.events, { action: result.historyAction, reason }, request ?? null);
    });
  }

  /** A charge was left in review: wait for its notice, taking it at once if it already arrived. */
  function awaitSettlement(pending: NonNullable<typeof awaiting>): void {
    awaiting = pending;
    notice = earlyNotices.get(pending.transactionId) ?? null;
    earlyNotices.delete(pending.transactionId);
  }

  function keepEarlyNotice(settled: ProviderNotice): void {
    // Runs started before this change dropped such notices; their replay must keep doing so.
    if (!patched('keep-early-provider-notices')) return;
    earlyNotices.delete(settled.transactionId);
    earlyNotices.set(settled.transactionId, settled);
    if (earlyNotices.size > EARLY_NOTICES_KEPT) earlyNotices.delete(earlyNotices.keys().next().value!);
  }

  const cycleKey = (prefix: string) => `${prefix}:${input.subscriptionId}:${life.cycles_completed + 1}:v${version}`;

  function chargeCycle(key: string, recordDeclinedOrder: boolean) {
    return payments.chargeSubscriptionCycle({
      storeId: input.storeId,
      subscriptionId: input.subscriptionId,
      key,
      at: nowSeconds(),
      recordDeclinedOrder,
      notifyRef: workflowId,
    });
  }

  async function reactivate(at: number, request: EventRequest | null): Promise<SubscriptionObject> {
    return apply(
      rules.reactivated(life, at),
      [{ type: 'customer.subscription.updated', legacyType: 'subscription.reactivated' }],
      { action: 'reactivated', reason: null },
      request,
    );
  }

  async function cycleApproved(periodStart: number): Promise<void> {
    await apply(rules.chargeApproved(life, periodStart), [{ type: 'customer.subscription.updated' }], { action: 'renewed', reason: null });
  }

  async function cycleFailed(code: string | null): Promise<void> {
    const declined = rules.chargeDeclined(life, nowSeconds());
    await apply(declined.change, declined.events, { action: declined.change.status === 'expired' ? 'expired_unpaid' : 'charge_failed', reason: code });
  }

  /** A due charge (renewal, trial end, dunning retry): true when a cycle was paid. */
  async function chargeDue(): Promise<boolean> {
    const periodStart = life.next_billing_at ?? nowSeconds();
    const result = await chargeCycle(cycleKey('cycle'), true);
    if (result.outcome === 'approved') {
      await cycleApproved(periodStart);
      return true;
    }
    if (result.outcome === 'review') {
      awaitSettlement({ transactionId: result.transactionId!, orderId: result.orderId!, periodStart, reactivation: false });
      return false;
    }
    await cycleFailed(result.code);
    return false;
  }

  /** The provider's notice for a renewal in review arrived: settle its order, then the subscription. */
  async function settleAwaited(): Promise<boolean> {
    const pending = awaiting!;
    const settled = notice!;
    awaiting = null;
    notice = null;
    const status = await store.settleSubscriptionCycleOrder({ storeId: input.storeId, orderId: pending.orderId, notice: settled });
    if (pending.reactivation) {
      // Paid: the reactivation completes now, its period starting when the money arrived; refused: it stays ended.
      if (status !== 'paid' || !rules.isEnded(life.status)) return false;
      await reactivate(nowSeconds(), null);
      return true;
    }
    // An action may have ended or paused the subscription meanwhile: then only the order settles.
    if (!rules.CHARGEABLE_STATUSES.includes(life.status)) return false;
    if (status === 'paid') {
      await cycleApproved(pending.periodStart);
      return true;
    }
    await cycleFailed(settled.code);
    return false;
  }

  setHandler(pauseUpdate, ({ reason, request }) => action(() => rules.pause(life), request, reason ?? null));
  setHandler(resumeUpdate, ({ request }) => action(() => rules.resume(life, nowSeconds()), request));
  setHandler(cancelUpdate, ({ reason, comment, source, request }) =>
    action(
      () => rules.cancelNow(life, nowSeconds(), { reason: reason ?? null, comment: comment ?? null, source: source ?? 'dashboard' }),
      request,
      reason ?? null,
    ),
  );
  setHandler(scheduleCancellationUpdate, ({ reason, comment, source, request }) =>
    action(
      () => rules.scheduleCancellation(life, nowSeconds(), { reason: reason ?? null, comment: comment ?? null, source: source ?? 'dashboard' }),
      request,
      reason ?? null,
    ),
  );
  setHandler(changeOfferUpdate, ({ offer, request }) =>
    action(async () => {
      const found = await store.offerTerms({ storeId: input.storeId, offerId: offer, currency: life.currency });
      if (!found.ok) return { ok: false, reason: found.reason };
      return rules.changeOffer(life, found.terms);
    }, request),
  );
  setHandler(reactivateUpdate, ({ request }) =>
    lock.run(async () => {
      if (missing) throw refused('The subscription no longer exists.');
      const undo = rules.undoScheduledCancellation(life);
      if (undo) {
        if (!undo.ok) throw refused(undo.reason);
        return apply(undo.change, undo.events, { action: undo.historyAction, reason: null }, request ?? null);
      }
      const offer = rules.isEnded(life.status)
        ? await store.offerTerms({ storeId: input.storeId, offerId: life.offer.id, currency: life.currency })
        : null;
      const refusal = rules.reactivationRefusal(life, offer?.ok === true && offer.active);
      if (refusal) throw refused(refusal);
      // One payment in review at a time: a second one would replace the first in `awaiting` and lose its notice.
      if (awaiting) throw refused('A payment of this subscription is in review at the provider; reactivate once it has settled.');
      // A new cycle is charged at once under a key unique to this update; a decline changes nothing.
      const at = nowSeconds();
      const key = `reactivate:${input.subscriptionId}:${currentUpdateInfo()?.id ?? `v${version}`}`;
      const result = await chargeCycle(key, false);
      if (result.outcome === 'review') {
        // Money may still move: the pending renewal order waits for the provider's notice, which
        // reactivates (paid) or leaves the subscription ended (refused). Until then it is unchanged.
        awaitSettlement({ transactionId: result.transactionId!, orderId: result.orderId!, periodStart: at, reactivation: true });
        changed = true;
        return object;
      }
      if (result.outcome !== 'approved') {
        const why = result.message ?? 'the card was declined';
        throw refused(`The provider refused the reactivation: ${why}${result.code ? ` (${result.code})` : ''}.`);
      }
      return reactivate(at, request ?? null);
    }),
  );
  setHandler(changePaymentMethodUpdate, ({ payment_method, request }) =>
    action(() => rules.changePaymentMethod(life, payment_method, nowSeconds()), request),
  );
  setHandler(subscriptionProviderSettledSignal, (settled) => {
    if (awaiting && settled.transactionId === awaiting.transactionId) notice = settled;
    else keepEarlyNotice(settled);
  });
  setHandler(subscriptionStateQuery, () => ({
    loaded: version >= 0,
    life,
    version,
    next: version >= 0 ? rules.nextStep(life) : null,
    awaitingSettlement: awaiting ? { transactionId: awaiting.transactionId, orderId: awaiting.orderId } : null,
    object,
  }));

  const loaded = await loading;
  // The document is the source of truth; without it there is nothing to run.
  if (!loaded) {
    missing = true;
    await condition(allHandlersFinished);
    return;
  }
  life = loaded.life;
  version = loaded.version;
  object = loaded.object;

  for (;;) {
    let cyclePaid = false;
    if (awaiting) {
      await condition(() => notice !== null);
      cyclePaid = await lock.run(settleAwaited);
    } else {
      changed = false;
      const step = rules.nextStep(life);
      if (step === null) {
        // Paused, canceled or expired: nothing happens until an action changes the state.
        await condition(() => changed);
        continue;
      }
      const waitMs = step.at * 1000 - Date.now();
      if (waitMs > 0 && (await condition(() => changed, waitMs))) continue;
      cyclePaid = await lock.run(async () => {
        // Re-decided under the lock: an action may have changed the state while we waited for it.
        const due = rules.nextStep(life);
        if (due === null || due.at > nowSeconds() || awaiting) return false;
        if (due.kind === 'end') {
          await apply(rules.periodEnded(due.to, due.at), [{ type: 'customer.subscription.deleted' }], {
            action: due.to === 'canceled' ? 'canceled_at_period_end' : 'expired_cycle_limit',
            reason: null,
          });
          return false;
        }
        return chargeDue();
      });
    }
    // Once per paid cycle (or when the history grows long), start afresh from the document.
    if (cyclePaid || workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      if (!awaiting) await continueAsNew<typeof subscriptionWorkflow>(input);
    }
  }
}
