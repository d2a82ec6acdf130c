// Emitting an event: the one call every resource uses when a fact happens. It records the event
// (activities/store/events.ts) and then hands it to delivery.
import type { Db } from 'mongodb';
import type { Client } from '@temporalio/client';
import type { EventDoc } from './store/collections';
import { recordEvent, type EventRequest } from './store/events';

export interface EventDeps {
  db: Db;
  /** Used to start deliveries right away; without it the sweeper dispatches the event. */
  temporal?: Client | null;
  taskQueue?: string;
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
}

export async function emitEvent(deps: EventDeps, input: EmitEventInput): Promise<EventDoc> {
  return recordEvent(deps.db, input);
}
