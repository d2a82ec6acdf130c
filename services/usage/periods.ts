// Metered usage periods: pricing a period from its rollups and the subscription's items, GET usage
// (the open period computed at call time), and what the usage-period workflow does (open, recompute,
// pull the end in at the threshold, close, charge once through the charge workflow).
import type { Database } from '../../store/database';
import { ApplicationFailure } from '@temporalio/common';
import { ApiError } from '../../domain/errors';
import { usageChargeKey, usageIdempotencyKey } from '../../domain/charges';
import { lowestThreshold, periodTotal, priceLine, thresholdReached } from '../../domain/pricing';
import {
  CLOSE_GRACE_SECONDS,
  cycleOf,
  DAY,
  isoDate,
  lateRollupKey,
  periodRollupKey,
  usageChargeDescription,
  usageChargeLines,
  type CloseReason,
} from '../../domain/usage-periods';
import { idTimeMs } from '../../domain/ids';
import { periodEnd, isBillingCycle } from '../../domain/billing-periods';
import { isEnded } from '../../domain/subscriptions';
import { metersById } from '../../store/meters';
import type { SubscriptionDoc } from '../../store/subscriptions';
import {
  addCustomerSubscription,
  customerKey,
  ensureUsageState,
  findUsagePeriod,
  findUsageState,
  insertUsagePeriod,
  updateUsagePeriod,
  updateUsageState,
  usagePeriodId,
  type PeriodLineDoc,
  type PricingSnapshot,
  type UsageItemDoc,
  type UsagePeriodDoc,
  type UsageStateDoc,
} from '../../store/usage';
import { usagePeriodObject, type UsagePeriodObject } from '../../resources/usage-period';
import { openJournalsFor, quantityOf, readRollups, type RollupTotals } from '../../store/usage-rollups';
import type { UsageWorkflowInput } from '../../workflows/usage-periods/messages';
import { startCharge } from '../charges/charges';
import {
  forgetAttachment,
  isChargeable,
  loadSubscription,
  newUsageState,
  seconds,
  signalUsageWorkflow,
  subscriptionItems,
  requireSubscription,
  type UsageDeps,
} from './shared';
import { findOffer } from '../../store/offers';
import { inheritOfferItems } from './items';
import { recoverUsageJournals } from './ingestion';

interface Computed {
  lines: PeriodLineDoc[];
  amount_total: number;
  threshold: number | null;
  pricing: PricingSnapshot[];
}

/** Prices a period from its rollups and the subscription's current items (deactivated meters at zero). */
async function computePeriod(db: Database, storeId: string, subscriptionId: string, periodStart: number, items: UsageItemDoc[]): Promise<Computed> {
  const meters = await metersById(
    db,
    storeId,
    items.map((i) => i.meter),
  );
  const priced = items.filter((i) => meters.has(i.meter)).sort((a, b) => (a.created_ms ?? 0) - (b.created_ms ?? 0) || (a.meter < b.meter ? -1 : 1));
  const rollups = await readRollups(
    db,
    priced.map((i) => periodRollupKey(subscriptionId, periodStart, i.meter)),
  );
  const lines: PeriodLineDoc[] = priced.map((item) => {
    const meter = meters.get(item.meter)!;
    const quantity = quantityOf(rollups.get(periodRollupKey(subscriptionId, periodStart, item.meter)), meter.formula);
    const line = priceLine(quantity, item, meter.status === 'active');
    return {
      meter: meter._id,
      event_name: meter.event_name,
      display_name: meter.display_name,
      quantity: line.quantity,
      included: line.included,
      billable: line.billable,
      unit_amount: line.unit_amount,
      amount: line.amount,
    };
  });
  lines.push(...(await lateLines(db, storeId, subscriptionId, periodStart, priced, meters)));
  const pricing: PricingSnapshot[] = priced.map((item) => ({
    meter: item.meter,
    formula: meters.get(item.meter)!.formula,
    active: meters.get(item.meter)!.status === 'active',
    unit_amount: item.unit_amount,
    included_units: item.included_units,
    tiers: item.tiers,
    rounding: item.rounding,
  }));
  return { lines, amount_total: periodTotal(lines), threshold: lowestThreshold(priced), pricing };
}

/** Late events reach back at most this far (35 days, and the period that held the oldest of them). */
const LATE_LOOKBACK_SECONDS = 70 * DAY;

/**
 * Lines for the late events counted in this period, one per meter and closed period they belong to:
 * priced on top of *all* of that period's usage so far (its own and the late events earlier periods
 * already charged), so included units and tier steps are granted once; named after it, at zero for a
 * deactivated meter. Reads: items x closed periods of the lookback for the late totals here, then, for
 * each (meter, period) with late events, the late totals of the periods between (all within 70 days).
 */
async function lateLines(
  db: Database,
  storeId: string,
  subscriptionId: string,
  periodStart: number,
  items: UsageItemDoc[],
  meters: Awaited<ReturnType<typeof metersById>>,
): Promise<PeriodLineDoc[]> {
  const state = await findUsageState(db, storeId, subscriptionId);
  const starts = (state?.periods ?? []).map((id) => idTimeMs(id) / 1000).sort((a, b) => a - b);
  const origins = starts.filter((start) => start < periodStart && start >= periodStart - LATE_LOOKBACK_SECONDS);
  if (origins.length === 0) return [];
  const candidates = items.flatMap((item) => origins.map((from) => ({ item, from })));
  const here = await readRollups(
    db,
    candidates.map(({ item, from }) => lateRollupKey(subscriptionId, periodStart, item.meter, from)),
  );
  const pairs = candidates.filter(({ item, from }) => (here.get(lateRollupKey(subscriptionId, periodStart, item.meter, from))?.count ?? 0) > 0);
  const between = (from: number) => starts.filter((start) => start > from && start < periodStart);
  const earlierKeys = (meter: string, from: number) => [
    periodRollupKey(subscriptionId, from, meter),
    ...between(from).map((counted) => lateRollupKey(subscriptionId, counted, meter, from)),
  ];
  const earlier = await readRollups(
    db,
    pairs.flatMap(({ item, from }) => earlierKeys(item.meter, from)),
  );
  const lines: PeriodLineDoc[] = [];
  for (const { item, from } of pairs) {
    const late = here.get(lateRollupKey(subscriptionId, periodStart, item.meter, from))!;
    const meter = meters.get(item.meter)!;
    // Everything the closed period had before these: its own usage and its late events counted since.
    const counted = mergeTotals(earlierKeys(item.meter, from).map((key) => earlier.get(key)));
    const before = quantityOf(counted, meter.formula);
    const after = quantityOf(mergeTotals([counted, late]), meter.formula);
    const active = meter.status === 'active';
    const amount = Math.max(0, priceLine(after, item, active).amount - priceLine(before, item, active).amount);
    const end = starts.find((start) => start > from) ?? periodStart;
    const quantity = meter.formula === 'last' ? after : quantityOf(late, meter.formula);
    lines.push({
      meter: meter._id,
      event_name: meter.event_name,
      display_name: `${meter.display_name} (late, ${isoDate(from)} to ${isoDate(end)})`,
      quantity,
      included: 0,
      billable: quantity,
      unit_amount: item.tiers && item.tiers.length > 0 ? null : item.unit_amount,
      amount,
      late_period: { start: from, end },
    });
  }
  return lines;
}

/** Totals of several sets of events together: sums and counts added, the latest value kept. */
function mergeTotals(parts: (RollupTotals | undefined)[]): RollupTotals {
  const merged: RollupTotals = { sum: 0, count: 0 };
  for (const part of parts) {
    if (!part) continue;
    merged.sum += part.sum;
    merged.count += part.count;
    if (part.last !== undefined && (merged.last === undefined || part.last > merged.last)) merged.last = part.last;
  }
  return merged;
}

/** GET /subscriptions/{id}/usage: the 12 most recent periods, newest first, the open one computed now. */
export async function subscriptionUsage(db: Database, storeId: string, subscriptionId: string, nowMs = Date.now()): Promise<UsagePeriodObject[]> {
  const sub = await requireSubscription(db, storeId, subscriptionId);
  const state = await findUsageState(db, storeId, sub._id);
  if (!state) return [];
  const ids = [...state.periods].sort().reverse().slice(0, 12);
  const docs = (await Promise.all(ids.map((id) => findUsagePeriod(db, storeId, id)))).filter((d): d is UsagePeriodDoc => d !== null);
  const items = docs.some((d) => d.status === 'open') ? await subscriptionItems(db, sub) : [];
  const out: UsagePeriodObject[] = [];
  for (const doc of docs) {
    if (doc.status !== 'open') {
      out.push(usagePeriodObject(doc));
      continue;
    }
    const computed = await computePeriod(db, storeId, sub._id, doc.period_start, items);
    out.push(usagePeriodObject({ ...doc, lines: computed.lines, amount_total: computed.amount_total, computed_at: seconds(nowMs) }));
  }
  return out;
}

export interface PeriodRef {
  id: string;
  start: number;
  end: number;
  threshold_boundary: boolean;
}

export type Prepared =
  | { kind: 'open'; period: PeriodRef }
  | { kind: 'wait'; reason: 'not_chargeable' | 'no_cycle' }
  | { kind: 'finished'; reason: 'no_subscription' | 'no_items' | 'ended' };

/** What the workflow gets back from preparing: the period, and how often to recompute it. */
export type PrepareResult = Prepared & { recomputeEverySeconds: number; historyEventsLimit: number };

export interface RecomputeResult {
  chargeable: boolean;
  status: string;
  amount_total: number;
  threshold: number | null;
  thresholdReached: boolean;
  period: UsagePeriodObject;
}

export interface CloseResult {
  amount_total: number;
  chargeNeeded: boolean;
  period: UsagePeriodObject;
}

export interface ChargeResult {
  charge: string | null;
  state: UsagePeriodDoc['charge_state'];
  outcome: string | null;
  refusal: { code: string; message: string } | null;
}

type WithStore = UsageWorkflowInput;

/** End of a period opening at `start`: the subscription's cycle end when ahead, else the next cycle's. */
function periodEndFor(sub: SubscriptionDoc, start: number, now: number): number {
  const cycle = cycleOf(sub);
  if (cycle && cycle.end > start && cycle.end > now) return cycle.end;
  if (!isBillingCycle(sub.billing_cycle)) return start + 30 * DAY;
  let end = periodEnd(start, sub.billing_cycle, sub.custom_billing_days, sub.billing_anchor_day ?? undefined);
  // A start far back (after a long pause) still opens a period that ends in the future.
  while (end <= now) end = periodEnd(end, sub.billing_cycle, sub.custom_billing_days, sub.billing_anchor_day ?? undefined);
  return end;
}

/** Journals are stamped by the ingesting process's clock, periods by the workflow's: room for their skew. */
const CLOSE_CLOCK_SKEW_MS = 60_000;

const refOf = (open: UsageStateDoc['open'] & object): PeriodRef => ({
  id: open.id,
  start: open.start,
  end: open.end,
  threshold_boundary: open.threshold_boundary,
});

async function openPeriod(db: Database, sub: SubscriptionDoc, state: UsageStateDoc, start: number, end: number, now: number): Promise<PeriodRef> {
  const id = usagePeriodId(sub._id, start);
  const stored = await insertUsagePeriod(db, {
    _id: id,
    store_id: sub.store_id,
    subscription: sub._id,
    status: 'open',
    close_reason: null,
    period_start: start,
    period_end: end,
    currency: state.currency,
    lines: [],
    amount_total: 0,
    threshold: null,
    threshold_boundary: false,
    charge: null,
    charge_state: 'none',
    charge_refusal: null,
    computed_at: null,
    closed_at: null,
    livemode: true,
    created: now,
  });
  // Opening twice finds the first (a retried activity); a period already closed is never reopened.
  if (stored.status === 'closed') throw ApplicationFailure.nonRetryable(`usage period ${id} starting at ${start} is already closed`);
  const open = { id, start: stored.period_start, end: stored.period_end, threshold_boundary: stored.threshold_boundary };
  await updateUsageState(db, sub._id, { $set: { open }, $addToSet: { periods: id } });
  return open;
}

/** The usage state, the offer's rows inherited once. */
async function inheritedState(db: Database, sub: SubscriptionDoc, now: number): Promise<UsageStateDoc> {
  const state = await ensureUsageState(db, newUsageState(sub, now));
  if (state.inherited) return state;
  await inheritOfferItems(db, sub, now);
  return (await updateUsageState(db, sub._id, { $set: { inherited: true } })) ?? state;
}

/**
 * Usage rule 4 at creation ("the first routine run after creation" is the one its creation triggers): a
 * new subscription of an offer with usage rows inherits them now, is listed among its customer's
 * subscriptions with usage and its usage workflow starts, so its first events attach and are charged.
 * The routine still starts any it missed (a creation that died before this). False without usage rows.
 */
export async function startUsageOfNewSubscription(deps: UsageDeps, sub: SubscriptionDoc): Promise<boolean> {
  const offer = await findOffer(deps.db, sub.store_id, sub.offer.id);
  if (!offer?.usage?.length) return false;
  await inheritedState(deps.db, sub, sub.created);
  if (sub.customer) await addCustomerSubscription(deps.db, sub.store_id, sub.customer, sub._id);
  forgetAttachment(sub.store_id, sub);
  await signalUsageWorkflow(deps.temporal, deps.taskQueue, sub);
  return true;
}

/** An ended subscription's last period: open only for usage attached after the previous one closed. */
async function lastPeriodOfEnded(
  db: Database,
  sub: SubscriptionDoc,
  state: UsageStateDoc,
  items: UsageItemDoc[],
  start: number,
  now: number,
): Promise<Prepared> {
  const pending = await readRollups(
    db,
    items.map((i) => periodRollupKey(sub._id, start, i.meter)),
  );
  if (![...pending.values()].some((r) => r.count > 0) || start >= now) return { kind: 'finished', reason: 'ended' };
  return { kind: 'open', period: await openPeriod(db, sub, state, start, now, now) };
}

/** Inherits the offer's rows once, then finds or opens the period of the current cycle. */
export async function prepareUsagePeriod(db: Database, input: WithStore & { now: number }): Promise<Prepared> {
  const sub = await loadSubscription(db, input.storeId, input.subscriptionId);
  if (!sub) return { kind: 'finished', reason: 'no_subscription' };
  const state = await inheritedState(db, sub, input.now);
  const items = await subscriptionItems(db, sub);
  // Re-checked on every run: an item whose process died before recording the subscription here counts too.
  if (items.length > 0 && sub.customer) await addCustomerSubscription(db, sub.store_id, sub.customer, sub._id);
  if (state.open) return { kind: 'open', period: refOf(state.open) };
  if (items.length === 0) return { kind: 'finished', reason: 'no_items' };
  const start = state.next_start ?? cycleOf(sub)?.start ?? input.now;
  if (isChargeable(sub)) return { kind: 'open', period: await openPeriod(db, sub, state, start, periodEndFor(sub, start, input.now), input.now) };
  if (!isEnded(sub.status)) return { kind: 'wait', reason: 'not_chargeable' };
  // Usage attached after the last period closed (while it was past_due) is still charged.
  return lastPeriodOfEnded(db, sub, state, items, start, input.now);
}

/** Prices the open period now; says whether the threshold is reached and the subscription chargeable. */
export async function recomputeUsagePeriod(db: Database, input: WithStore & { periodId: string; now: number }): Promise<RecomputeResult> {
  const sub = await loadSubscription(db, input.storeId, input.subscriptionId);
  const period = await findUsagePeriod(db, input.storeId, input.periodId);
  if (!sub || !period) throw ApplicationFailure.nonRetryable(`usage period ${input.periodId} of ${input.subscriptionId} not found`);
  const items = await subscriptionItems(db, sub);
  if (items.length > 0 && sub.customer) await addCustomerSubscription(db, sub.store_id, sub.customer, sub._id);
  const computed = await computePeriod(db, sub.store_id, sub._id, period.period_start, items);
  const updated =
    period.status === 'open'
      ? await updateUsagePeriod(db, period._id, {
          lines: computed.lines,
          amount_total: computed.amount_total,
          threshold: computed.threshold,
          computed_at: input.now,
        })
      : period;
  await updateUsageState(db, sub._id, { $set: { threshold: computed.threshold, pricing: computed.pricing } });
  return {
    chargeable: isChargeable(sub),
    status: sub.status,
    amount_total: computed.amount_total,
    threshold: computed.threshold,
    thresholdReached: thresholdReached(computed.amount_total, computed.threshold),
    period: usagePeriodObject(updated ?? period),
  };
}

/** The threshold was reached: the open period now ends at `end` (ingestion reads the new end first). */
export async function moveUsagePeriodEnd(db: Database, input: WithStore & { periodId: string; end: number }): Promise<PeriodRef> {
  const state = await findUsageState(db, input.storeId, input.subscriptionId);
  if (!state?.open || state.open.id !== input.periodId) throw ApplicationFailure.nonRetryable(`usage period ${input.periodId} is not open`);
  const open = { ...state.open, end: input.end, threshold_boundary: true };
  await updateUsageState(db, input.subscriptionId, { $set: { open } });
  await updateUsagePeriod(db, input.periodId, { period_end: input.end, threshold_boundary: true });
  return refOf(open);
}

/**
 * Fails (to be retried) while ingestion batches of the customer begun before the end plus the grace
 * are still being written; replays the ones a dead process left. Later batches are not waited for:
 * a customer who never stops sending always has one.
 */
async function awaitIngestionBefore(db: Database, sub: SubscriptionDoc, periodId: string, end: number, graceSeconds: number): Promise<void> {
  const cutoffMs = (end + graceSeconds) * 1000 + CLOSE_CLOCK_SKEW_MS;
  const customer = sub.customer ? customerKey(sub.store_id, sub.customer) : null;
  const openJournals = async () => (customer ? (await openJournalsFor(db, customer, cutoffMs)).length : 0);
  if ((await openJournals()) > 0) await recoverUsageJournals(db);
  const open = await openJournals();
  if (open > 0) throw ApplicationFailure.retryable(`${open} ingestion batch(es) for ${periodId} still in flight`, 'UsageBatchesInFlight');
}

/** Closes the period with its final lines, once the ingestion batches for it have landed. */
export async function closeUsagePeriod(
  db: Database,
  input: WithStore & { periodId: string; reason: CloseReason; end: number; now: number },
): Promise<CloseResult> {
  const period = await findUsagePeriod(db, input.storeId, input.periodId);
  if (!period) throw ApplicationFailure.nonRetryable(`usage period ${input.periodId} not found`);
  if (period.status === 'closed') {
    return {
      amount_total: period.amount_total,
      chargeNeeded: period.charge_state === 'none' && period.amount_total > 0,
      period: usagePeriodObject(period),
    };
  }
  const sub = await loadSubscription(db, input.storeId, input.subscriptionId);
  if (!sub) throw ApplicationFailure.nonRetryable(`subscription ${input.subscriptionId} not found`);
  // At least a second long: the next period starts at this end and its id derives from its start.
  const end = Math.max(input.end, period.period_start + 1);
  // A threshold close comes at its (pulled-in) end, not after the grace: batches begun until then are waited for.
  await awaitIngestionBefore(db, sub, period._id, end, input.reason === 'threshold' ? 0 : CLOSE_GRACE_SECONDS);
  const computed = await computePeriod(db, sub.store_id, sub._id, period.period_start, await subscriptionItems(db, sub));
  const closed = (await updateUsagePeriod(db, period._id, {
    status: 'closed',
    close_reason: input.reason,
    period_end: end,
    lines: computed.lines,
    amount_total: computed.amount_total,
    threshold: computed.threshold,
    computed_at: input.now,
    closed_at: input.now,
    charge_state: computed.amount_total > 0 ? 'none' : 'not_needed',
  }))!;
  const state = await findUsageState(db, input.storeId, input.subscriptionId);
  if (state?.open?.id === period._id) await updateUsageState(db, sub._id, { $set: { open: null, next_start: end } });
  return { amount_total: closed.amount_total, chargeNeeded: closed.amount_total > 0, period: usagePeriodObject(closed) };
}

/** The period's charge through the charge workflow (key `usage:<period id>`); a refusal before the card is kept on the period. */
async function chargeClosedPeriod(deps: UsageDeps, period: UsagePeriodDoc): Promise<ChargeResult> {
  try {
    const result = await startCharge(deps, {
      storeId: period.store_id,
      subscriptionId: period.subscription,
      key: usageChargeKey(period._id),
      amount: period.amount_total,
      currency: period.currency,
      description: usageChargeDescription(period.period_start, period.period_end),
      lines: usageChargeLines(period.lines),
      metadata: { kind: 'usage', usage_period: period._id },
      source: 'usage',
      billingReason: 'usage',
      request: { id: null, idempotency_key: usageIdempotencyKey(period._id) },
    });
    await updateUsagePeriod(deps.db, period._id, { charge: result.charge.id, charge_state: 'charged' });
    return { charge: result.charge.id, state: 'charged', outcome: result.outcome, refusal: null };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    const refusal = { code: error.code, message: error.message };
    await updateUsagePeriod(deps.db, period._id, { charge: null, charge_state: 'refused', charge_refusal: refusal });
    return { charge: null, state: 'refused', outcome: null, refusal };
  }
}

/**
 * Charges a closed period once (key `usage:<period id>`) through the charge workflow. A refusal
 * before the card closes it with charge null for good; a decline keeps the failed charge.
 */
export async function chargeUsagePeriod(deps: UsageDeps, input: WithStore & { periodId: string }): Promise<ChargeResult> {
  const period = await findUsagePeriod(deps.db, input.storeId, input.periodId);
  if (!period || period.status !== 'closed') throw ApplicationFailure.nonRetryable(`usage period ${input.periodId} is not closed`);
  if (period.charge_state !== 'none') {
    return { charge: period.charge, state: period.charge_state, outcome: null, refusal: period.charge_refusal };
  }
  if (period.amount_total <= 0) {
    await updateUsagePeriod(deps.db, period._id, { charge_state: 'not_needed' });
    return { charge: null, state: 'not_needed', outcome: null, refusal: null };
  }
  return chargeClosedPeriod(deps, period);
}
