// A store's events as they are written, for a `listen` session (GET /v1/webhook_endpoints/listen):
// read by polling the events collection (no change streams: DESIGN.md), rendered in the session's
// catalog and signed with the session's secret, byte for byte what a delivery would carry.
import type { Database } from '../../store/database';
import { generateSignatureHeader } from '../../adapters/webhooks/verify';
import { CURRENT_CATALOG, endpointReceives, LEGACY_CATALOG, legacyNameOf, type EventCatalog } from '../../domain/event-catalogs';
import { idFloorAt } from '../../domain/ids';
import type { EventDoc } from '../../store/collections';
import { findEventsAfter, renderEventBody } from '../../store/events';

/** Events written up to this late (a slow writer, a retried fact keeping its first time) still stream. */
export const LATE_WRITE_WINDOW_MS = 10_000;
/** Events read at once: what a session holds in memory besides its socket's buffer (50 events). */
const PAGE = 50;

export interface ListenSession {
  storeId: string;
  catalog: EventCatalog;
  /** enabled_events-style entries; `[*]` for all. */
  events: string[];
  /** Replay from the event after this one; null: from now on. */
  since: string | null;
  secret: string;
  signal: AbortSignal;
  pollMs?: number;
}

export interface StreamedEvent {
  id: string;
  type: string;
  /** The delivery body, exactly as an endpoint of the session's catalog receives it. */
  body: string;
  /** The Service-Signature header value, signed with the session's secret when streamed. */
  signature: string;
}

/** The event as the session's catalog names and renders it; null when the catalog has no such event. */
function inCatalog(doc: EventDoc, catalog: EventCatalog): EventDoc | null {
  if (catalog === CURRENT_CATALOG) return doc;
  const legacyType = doc.legacy_type !== undefined ? doc.legacy_type : legacyNameOf(doc.type);
  return legacyType ? { ...doc, type: legacyType, api_version: LEGACY_CATALOG } : null;
}

function toStreamed(doc: EventDoc, secret: string): StreamedEvent {
  const body = renderEventBody(doc);
  return { id: doc._id, type: doc.type, body, signature: generateSignatureHeader(body, [secret], Math.floor(Date.now() / 1000)) };
}

/**
 * Yields the session's events until its signal aborts: first those after `since`, then each new one
 * within a poll. The read floor trails the clock by LATE_WRITE_WINDOW_MS and ids already sent are
 * remembered for that long, so a late write is sent once and nothing is sent twice.
 */
export async function* streamEvents(db: Database, session: ListenSession): AsyncGenerator<StreamedEvent> {
  const pollMs = session.pollMs ?? 250;
  const sent = new Set<string>();
  let floor = session.since ?? idFloorAt('evt', Date.now());
  while (!session.signal.aborted) {
    const startedAt = Date.now();
    const docs = await findEventsAfter(db, session.storeId, floor, PAGE);
    for (const doc of docs) {
      if (sent.has(doc._id)) continue;
      sent.add(doc._id);
      const shown = inCatalog(doc, session.catalog);
      if (shown && endpointReceives(session.events, shown.type)) yield toStreamed(shown, session.secret);
    }
    if (docs.length === PAGE) {
      floor = docs[docs.length - 1]._id; // still replaying: read on at once
      forgetUpTo(sent, floor);
      continue;
    }
    floor = maxId(floor, idFloorAt('evt', startedAt - LATE_WRITE_WINDOW_MS));
    forgetUpTo(sent, floor);
    await sleep(pollMs, session.signal);
  }
}

// Ids sort by the time they encode (domain/ids.ts).
const maxId = (a: string, b: string) => (a > b ? a : b);

/** Ids at or under the floor are never read again: `sent` holds only the late-write window's (and one page's). */
function forgetUpTo(sent: Set<string>, floor: string): void {
  for (const id of sent) if (id <= floor) sent.delete(id);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
