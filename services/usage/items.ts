// Usage items: set through the API (POST replaces the meter's item, same id), listed, deleted, and
// inherited once from the offer's usage rows (an insert, so an item set through the API is never
// overwritten).
import type { Database } from '../../store/database';
import { ApiError, notFound } from '../../domain/errors';
import { normalizePrice, type PriceInput } from '../../domain/pricing';
import { findOffer } from '../../store/offers';
import { findStore } from '../../store/stores';
import { findMeter } from '../../store/meters';
import type { SubscriptionDoc } from '../../store/subscriptions';
import {
  addCustomerSubscription,
  deleteUsageItem,
  ensureUsageState,
  findUsageItem,
  findUsageItemById,
  insertInheritedItem,
  listUsageItems,
  saveUsageItem,
  usageItemId,
  type UsageItemDoc,
} from '../../store/usage';
import { forgetAttachment, newUsageState, requireSubscription, seconds, signalUsageWorkflow, storeMeterIds, type UsageDeps } from './shared';

export interface UsageItemInput extends PriceInput {
  meter: string;
  currency?: string | null;
  label?: string | null;
}

/** POST /subscriptions/{id}/usage_items: creates the meter's item or replaces it (same id). */
export async function putUsageItem(
  deps: UsageDeps,
  storeId: string,
  subscriptionId: string,
  input: UsageItemInput,
  nowMs = Date.now(),
): Promise<{ item: UsageItemDoc; created: boolean }> {
  const { db } = deps;
  const sub = await requireSubscription(db, storeId, subscriptionId);
  const meter = await findMeter(db, storeId, input.meter);
  if (!meter) throw notFound('meter', input.meter, 'meter');
  if (meter.status !== 'active') throw new ApiError('meter_inactive', `Meter ${meter._id} is inactive.`, { param: 'meter' });
  if (input.currency !== undefined && input.currency !== null && input.currency.toLowerCase() !== sub.currency) {
    throw new ApiError('currency_mismatch', `Usage items are priced in the subscription's currency, ${sub.currency}.`, { param: 'currency' });
  }
  const price = normalizePrice(input);
  const now = seconds(nowMs);
  await ensureUsageState(db, newUsageState(sub, now));
  const existing = await findUsageItem(db, storeId, sub._id, meter._id);
  const item: UsageItemDoc = {
    _id: usageItemId(sub._id, meter._id),
    store_id: storeId,
    subscription: sub._id,
    customer: sub.customer,
    meter: meter._id,
    offer: null,
    currency: sub.currency,
    ...price,
    label: input.label ?? null,
    source: 'api',
    created: existing?.created ?? now,
    created_ms: existing?.created_ms ?? nowMs,
    updated: now,
  };
  await saveUsageItem(db, item);
  if (sub.customer) await addCustomerSubscription(db, storeId, sub.customer, sub._id);
  forgetAttachment(storeId, sub, meter._id);
  await signalUsageWorkflow(deps.temporal, deps.taskQueue, sub);
  return { item, created: existing === null };
}

export async function listSubscriptionUsageItems(db: Database, storeId: string, subscriptionId: string): Promise<UsageItemDoc[]> {
  await requireSubscription(db, storeId, subscriptionId);
  return listUsageItems(db, storeId, subscriptionId, await storeMeterIds(db, storeId));
}

export async function removeUsageItem(
  deps: UsageDeps,
  storeId: string,
  subscriptionId: string,
  itemId: string,
): Promise<{ id: string; object: 'usage_item'; deleted: true }> {
  const sub = await requireSubscription(deps.db, storeId, subscriptionId);
  const item = await findUsageItemById(deps.db, storeId, itemId);
  if (!item || item.subscription !== sub._id) throw notFound('usage item', itemId, 'itemId');
  await deleteUsageItem(deps.db, storeId, item._id);
  forgetAttachment(storeId, sub, item.meter);
  await signalUsageWorkflow(deps.temporal, deps.taskQueue, sub);
  return { id: item._id, object: 'usage_item', deleted: true };
}

/** Usage rule 4: the offer's rows, once, in the subscription's currency else the store's. */
export async function inheritOfferItems(db: Database, sub: SubscriptionDoc, now: number): Promise<number> {
  const offer = await findOffer(db, sub.store_id, sub.offer.id);
  if (!offer?.usage?.length) return 0;
  const store = await findStore(db, sub.store_id);
  const byMeter = new Map<string, (typeof offer.usage)[number]>();
  for (const row of offer.usage) {
    if (row.currency === sub.currency) byMeter.set(row.meter, row);
    else if (store && row.currency === store.currency && !byMeter.has(row.meter)) byMeter.set(row.meter, row);
  }
  let inserted = 0;
  for (const row of byMeter.values()) {
    const doc: UsageItemDoc = {
      _id: usageItemId(sub._id, row.meter),
      store_id: sub.store_id,
      subscription: sub._id,
      customer: sub.customer,
      meter: row.meter,
      offer: offer._id,
      currency: sub.currency,
      unit_amount: row.unit_amount,
      included_units: row.included_units,
      tiers: row.tiers
        ? row.tiers.map((t) => ({ up_to: t.up_to, unit_amount: t.unit_amount, ...(t.flat_amount ? { flat_amount: t.flat_amount } : {}) }))
        : null,
      rounding: row.rounding,
      billing_threshold: row.billing_threshold,
      label: row.label,
      source: 'offer',
      created: now,
      created_ms: now * 1000,
      updated: now,
    };
    // An insert: a meter that already has an item (set through the API) keeps it.
    if (await insertInheritedItem(db, doc)) inserted++;
  }
  return inserted;
}
