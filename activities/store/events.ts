// Events as facts: written once in catalog 2026-11-01 with the request that caused them.
// Delivery (fan-out to webhook endpoints) reads undispatched events from here.
import type { Db } from 'mongodb';
import { newId } from '../../domain/ids';
import { collections, type EventDoc } from './collections';

export const CURRENT_EVENT_CATALOG = '2026-11-01';

export interface EventRequest {
  id: string | null;
  idempotency_key: string | null;
}

export async function recordEvent(
  db: Db,
  input: { storeId: string; type: string; object: Record<string, unknown>; request?: EventRequest | null },
  now = Date.now(),
): Promise<EventDoc> {
  const doc: EventDoc = {
    _id: newId('evt', now),
    store_id: input.storeId,
    type: input.type,
    api_version: CURRENT_EVENT_CATALOG,
    created: Math.floor(now / 1000),
    livemode: true,
    request: input.request ?? { id: null, idempotency_key: null },
    data_json: JSON.stringify({ object: input.object }),
    test: false,
    dispatched: false,
  };
  await collections(db).events.insertOne(doc);
  return doc;
}
