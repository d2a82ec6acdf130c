// What every part of metered usage shares: the activities' dependencies, a store's subscriptions and
// customers, starting or signalling the usage workflow, the short-lived cache of what attachment
// reads, and the subscription's items and usage state.
import type { Database } from '../../store/database';
import type { Client } from '@temporalio/client';
import type { PaymentProvider } from '../../adapters/provider/types';
import { notFound } from '../../domain/errors';
import { cycleOf } from '../../domain/usage-periods';
import { CHARGEABLE_STATUSES } from '../../domain/subscriptions';
import { findCustomerClock } from '../../store/customers';
import { meterIdsOf } from '../../store/meters';
import { findOffer } from '../../store/offers';
import { findSubscription, type SubscriptionDoc } from '../../store/subscriptions';
import { clockNowMs } from '../../store/test-clocks';
import { findUsageState, listUsageItems, type UsageItemDoc, type UsageStateDoc } from '../../store/usage';
import type { EventDeps } from '../events/events';
import { usageClient } from './client';
import type { SubscriptionShown } from '../operations/workflow-summaries';

export interface UsageDeps extends EventDeps {
  db: Database;
  temporal: Client;
  taskQueue: string;
  /** The worker's connections: a usage charge above its connection's maximum fails before any request. */
  provider?: PaymentProvider;
  testProvider?: PaymentProvider | null;
  /** How often the workflow recomputes an open period (default RECOMPUTE_INTERVAL_SECONDS). */
  usageRecomputeSeconds?: number;
  /** History events after which a usage workflow run continues as new (default USAGE_HISTORY_EVENTS_LIMIT). */
  usageHistoryEventsLimit?: number;
}

export const seconds = (ms: number) => Math.floor(ms / 1000);
export const isChargeable = (sub: SubscriptionDoc) => CHARGEABLE_STATUSES.includes(sub.status);

/** A subscription of the store (another store's is answered like a missing one). */
export function loadSubscription(db: Database, storeId: string, id: string): Promise<SubscriptionDoc | null> {
  return findSubscription(db, storeId, id);
}

// Customers get their test clock at creation and are deleted only with their clock: once seen, both are
// known here until this process deletes the clock (another API process may still accept a deleted clock
// customer's meter events; they attach to nothing).
const knownCustomers = new Map<string, string | null>();

/** Deleted customers (with their test clock) are no longer known. */
export function forgetCustomers(storeId: string, ids: string[]): void {
  for (const id of ids) knownCustomers.delete(`${storeId}|${id}`);
}

/** The customer's test clock (null: none); undefined when the store has no such customer. */
export async function customerTestClock(db: Database, storeId: string, id: string): Promise<string | null | undefined> {
  const key = `${storeId}|${id}`;
  const known = knownCustomers.get(key);
  if (known !== undefined) return known;
  const found = await findCustomerClock(db, storeId, id);
  if (!found) return undefined;
  const clock = found.test_clock;
  if (knownCustomers.size > 100_000) knownCustomers.clear();
  knownCustomers.set(key, clock);
  return clock;
}

export async function customerExists(db: Database, storeId: string, id: string): Promise<boolean> {
  return (await customerTestClock(db, storeId, id)) !== undefined;
}

export async function signalUsageWorkflow(client: Client, taskQueue: string, sub: SubscriptionShown): Promise<void> {
  await usageClient(client, taskQueue).signalRecompute(sub);
}

/**
 * The hook for changes to a chargeable status (reactivation, resume): starts (or wakes) the usage workflow
 * when the subscription's offer has usage rows or the subscription has a usage state (items were set
 * or inherited). Safe to call for every subscription: it does nothing for the others.
 */
export async function ensureUsageForSubscription(deps: UsageDeps, sub: SubscriptionDoc): Promise<boolean> {
  const [offer, state] = await Promise.all([
    sub.offer ? findOffer(deps.db, sub.store_id, sub.offer.id) : Promise.resolve(null),
    findUsageState(deps.db, sub.store_id, sub._id),
  ]);
  if (!state && !offer?.usage?.length) return false;
  await signalUsageWorkflow(deps.temporal, deps.taskQueue, sub);
  return true;
}

/**
 * What attachment reads (a customer's candidates, a subscription, its item for a meter, its usage
 * state), kept for a moment: steady ingestion then reads nothing per call. This process forgets an
 * entry when it changes it (usage items); a change made elsewhere (a cancellation, a period moved by
 * the workflow) is seen within ATTACH_FRESH_MS. A threshold boundary is placed 6 minutes ahead (5
 * minutes of timestamp skew + a minute), so a state read this recently still puts every event in
 * the right period.
 */
const ATTACH_FRESH_MS = 1_000;
const attachReads = new Map<string, { at: number; value: Promise<unknown> }>();

/**
 * `now` is the clock event timestamps are checked against (the arrival time): the freshness bound
 * must hold on that clock, or the threshold-boundary argument above would not.
 */
export function recent<T>(key: string, load: () => Promise<T>, now: number): Promise<T> {
  const hit = attachReads.get(key);
  if (hit && now >= hit.at && now - hit.at < ATTACH_FRESH_MS) return hit.value as Promise<T>;
  if (attachReads.size > 50_000) attachReads.clear();
  const value = load();
  attachReads.set(key, { at: now, value });
  value.catch(() => attachReads.delete(key));
  return value;
}

/** A test clock's time (milliseconds), read at most once per ATTACH_FRESH_MS of real time (`nowMs`). */
export function recentClockNowMs(db: Database, storeId: string, clockId: string, nowMs: number): Promise<number> {
  return recent(`k|${storeId}|${clockId}`, () => clockNowMs(db, storeId, clockId), nowMs);
}

export function forgetAttachment(storeId: string, sub: { _id: string; customer: string | null }, meterId?: string): void {
  if (sub.customer) attachReads.delete(`c|${storeId}|${sub.customer}`);
  attachReads.delete(`u|${storeId}|${sub._id}`);
  if (meterId) attachReads.delete(`i|${storeId}|${sub._id}|${meterId}`);
}

export function storeMeterIds(db: Database, storeId: string): Promise<string[]> {
  return meterIdsOf(db, storeId);
}

export function newUsageState(sub: SubscriptionDoc, now: number): UsageStateDoc {
  return {
    _id: sub._id,
    store_id: sub.store_id,
    customer: sub.customer,
    currency: sub.currency,
    inherited: false,
    open: null,
    next_start: cycleOf(sub)?.start ?? now,
    periods: [],
    threshold: null,
    pricing: [],
    created: now,
  };
}

export async function requireSubscription(db: Database, storeId: string, id: string): Promise<SubscriptionDoc> {
  const sub = await loadSubscription(db, storeId, id);
  if (!sub) throw notFound('subscription', id);
  return sub;
}

export async function subscriptionItems(db: Database, sub: SubscriptionDoc): Promise<UsageItemDoc[]> {
  return listUsageItems(db, sub.store_id, sub._id, await storeMeterIds(db, sub.store_id));
}
