// From a written event to running deliveries: one delivery document per target endpoint (its id
// derived from event and endpoint), one `webhook-delivery/<uuid>` workflow each (a start that finds
// the id running or closed does nothing), then the event is marked dispatched. Running it twice, or
// from the sweeper after a crash, creates nothing twice. Resends signal the workflow, starting a new
// run when the old one has closed.
import type { Database } from '../../store/database';
import type { Client } from '@temporalio/client';
import type { EventDoc } from '../../store/collections';
import { confirmDispatched, dropOutboxEntry, findEvent, findStaleOutbox } from '../../store/events';
import { findEndpointsByIds } from '../../store/webhook-endpoints';
import { deliveriesOfEvent, ensureDelivery, type WebhookDeliveryDoc } from '../../store/webhook-deliveries';
import { deliveryClient, type DeliveryRef } from './delivery-client';

export interface DispatchDeps {
  db: Database;
  /** Without a client nothing is started here; the sweeper dispatches later. */
  temporal?: Client;
  taskQueue?: string;
  /** The API passes its deps, whose config names the task queue. */
  config?: { taskQueue?: string };
}

export function taskQueueOf(deps: Pick<DispatchDeps, 'taskQueue' | 'config'>): string {
  return deps.taskQueue ?? deps.config?.taskQueue ?? process.env.TEMPORAL_TASK_QUEUE ?? 'billing';
}

/** Starts the delivery's workflow unless its id is running or has run (a delivery runs once unless resent). */
export async function startDeliveryWorkflow(client: Client, taskQueue: string, delivery: DeliveryRef): Promise<void> {
  await deliveryClient(client, taskQueue).start(delivery);
}

/** Resend: signals the running workflow, or starts a new run (with the signal) when it has closed. */
export async function resendDeliveryWorkflow(client: Client, taskQueue: string, delivery: DeliveryRef): Promise<void> {
  await deliveryClient(client, taskQueue).resend(delivery);
}

/**
 * Makes sure every delivery of the event runs: existing ones are started (a no-op when they run or
 * ran), missing ones are created for target endpoints that still exist and are enabled (one deleted
 * or switched off since gets nothing new); then confirms the event dispatched. Returns the deliveries.
 */
export async function dispatchEvent(deps: DispatchDeps, event: EventDoc): Promise<number> {
  if (!deps.temporal) return 0;
  const client = deps.temporal;
  const taskQueue = taskQueueOf(deps);
  const targets = event.targets ?? [];
  const existing = await deliveriesOfEvent(deps.db, event.store_id, event._id, targets);
  const have = new Set(existing.map((d) => d.webhook_endpoint));
  const missing = targets.filter((t) => !have.has(t));
  const endpoints = (await findEndpointsByIds(deps.db, event.store_id, missing)).filter((e) => e.status === 'enabled');
  const created = await Promise.all(endpoints.map((endpoint) => ensureDelivery(deps.db, event, endpoint._id)));
  const all = [...existing, ...created];
  await Promise.all(all.map((delivery) => startDeliveryWorkflow(client, taskQueue, { ...delivery, event_type: event.type })));
  await confirmDispatched(deps.db, [event._id]);
  return all.length;
}

/** Delivers one event to one endpoint (resend naming an endpoint that never had it, or a test event). */
export async function deliverEventTo(deps: DispatchDeps & { temporal: Client }, event: EventDoc, endpointId: string): Promise<WebhookDeliveryDoc> {
  const delivery = await ensureDelivery(deps.db, event, endpointId);
  await resendDeliveryWorkflow(deps.temporal, taskQueueOf(deps), { ...delivery, event_type: event.type });
  return delivery;
}

/**
 * The sweeper's work: events still in the dispatch outbox `olderThanMs` after they were written (their
 * writer died, or a start failed) are dispatched again, which creates and starts only what is missing.
 * Returns how many.
 */
export async function sweepUndispatched(deps: DispatchDeps, { olderThanMs, limit }: { olderThanMs: number; limit: number }): Promise<number> {
  let swept = 0;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const entries = await findStaleOutbox(deps.db, { olderThanMs, limit });
    for (const entry of entries) {
      const event = await findEvent(deps.db, entry.store_id, entry._id);
      // The writer died before the event itself was written: nothing happened, nothing to deliver.
      if (!event) await dropOutboxEntry(deps.db, entry._id);
      else await dispatchEvent(deps, event);
      swept += 1;
    }
    // A full batch may mean more are waiting; stop in time for the activity's timeout.
    if (entries.length < limit || Date.now() > deadline) return swept;
  }
}
