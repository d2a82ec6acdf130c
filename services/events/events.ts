// Emitting an event, the one call every resource uses when a fact happens: written in catalog
// 2026-11-01 (and under its original name while the store has a 2026-09-01 endpoint) with the request
// that caused it and its matching endpoints, then dispatched; the sweeper finishes a dispatch a dead
// process left in the outbox, and dispatching twice creates nothing twice.
import type { Database } from '../../store/database';
import type { Client } from '@temporalio/client';
import { CURRENT_CATALOG, endpointReceives, LEGACY_CATALOG, legacyNameOf, type EventCatalog } from '../../domain/event-catalogs';
import type { EventDoc } from '../../store/collections';
import {
  addToOutbox,
  buildEventDoc,
  confirmDispatched,
  hasTargets,
  insertEvents,
  insertEventsOnce,
  renderEventBody,
  type EventRequest,
} from '../../store/events';
import { endpointsForFanOut, type FanOutEndpoint } from '../../store/webhook-endpoints';
import { insertDeliveries, newDeliveryDoc } from '../../store/webhook-deliveries';
import { startDeliveryWorkflow, taskQueueOf } from '../webhooks/dispatch';

export interface EventDeps {
  db: Database;
  /** Used to start deliveries right away; without it the sweeper dispatches the event. */
  temporal?: Client;
  taskQueue?: string;
  /** The API's deps carry the task queue in their config. */
  config?: { taskQueue?: string };
}

export interface EmitEventInput {
  storeId: string;
  /** Type in catalog 2026-11-01. */
  type: string;
  object: Record<string, unknown>;
  request?: EventRequest | null;
  /**
   * Name in the original catalog 2026-09-01 when it depends on the fact (upgraded vs downgraded);
   * null when the fact has no original-catalog event; omitted to use the catalog's mapping.
   */
  legacyType?: string | null;
  /** A fact several executions may emit: its events' ids derive from this key and time, so they are written once. */
  fact?: { key: string; ms: number };
}

function targetsOf(endpoints: FanOutEndpoint[], catalog: EventCatalog, type: string): string[] {
  return endpoints.filter((e) => e.status === 'enabled' && e.api_version === catalog && endpointReceives(e.enabled_events, type)).map((e) => e._id);
}

/**
 * Writes the event (both catalogs as needed) and its dispatch outbox entry, then its deliveries,
 * starts their workflows and confirms it dispatched; returns the 2026-11-01 event. Once the event is
 * written, a failure on the way is the sweeper's to finish (from the outbox), not the caller's request
 * to fail.
 */
export async function emitEvent(deps: EventDeps, input: EmitEventInput): Promise<EventDoc> {
  const now = input.fact?.ms ?? Date.now();
  const endpoints = await endpointsForFanOut(deps.db, input.storeId);
  const base = { storeId: input.storeId, object: input.object, request: input.request, factKey: input.fact?.key };
  const legacyType = legacyNameOf(input.type, input.legacyType);
  const written = [
    buildEventDoc(
      { ...base, type: input.type, apiVersion: CURRENT_CATALOG, targets: targetsOf(endpoints, CURRENT_CATALOG, input.type), legacyType },
      now,
    ),
  ];
  if (legacyType && endpoints.some((e) => e.api_version === LEGACY_CATALOG)) {
    written.push(
      buildEventDoc({ ...base, type: legacyType, apiVersion: LEGACY_CATALOG, targets: targetsOf(endpoints, LEGACY_CATALOG, legacyType) }, now),
    );
  }
  const toDispatch = written.filter(hasTargets);
  // The outbox entry goes first: an event never exists undispatched without one.
  await addToOutbox(deps.db, toDispatch);
  // Another writer of the same fact got there first: its events stand, the sweeper dispatches them if it died.
  if (input.fact) {
    if (!(await insertEventsOnce(deps.db, written))) return written[0];
  } else {
    await insertEvents(deps.db, written);
  }
  if (toDispatch.length === 0 || !deps.temporal) return written[0];

  const client = deps.temporal;
  const taskQueue = taskQueueOf(deps);
  try {
    const deliveries = toDispatch.flatMap((event) => {
      const body = renderEventBody(event);
      return (event.targets ?? []).map((endpointId) => newDeliveryDoc(event, endpointId, body, now));
    });
    await insertDeliveries(deps.db, deliveries);
    const typeOf = new Map(toDispatch.map((event) => [event._id, event.type]));
    await Promise.all(
      deliveries.map((delivery) => startDeliveryWorkflow(client, taskQueue, { ...delivery, event_type: typeOf.get(delivery.event) })),
    );
    await confirmDispatched(
      deps.db,
      toDispatch.map((event) => event._id),
    );
  } catch (error) {
    console.warn(
      `events ${toDispatch.map((e) => e._id).join(', ')}: dispatch left to the sweeper (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  return written[0];
}
