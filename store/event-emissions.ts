// Once-only event claims: the first claim of a fact's key fixes the fact's time (its `created` Date,
// which a TTL index drops after 30 days, far past any retry), and records the event once written.
import type { Database } from './database';
import { collections, type EventDoc } from './collections';

export interface EmissionClaimDoc {
  _id: string;
  store_id: string;
  state: 'emitting' | 'done';
  event_id: string | null;
  created: Date;
}

const claimsOf = (db: Database) => db.collection<EmissionClaimDoc>('event_emissions');

/** The claim of `id`, made now unless it exists (one upsert: concurrent claimers all get the first). */
export function claimEmission(db: Database, id: string, storeId: string, now = new Date()): Promise<EmissionClaimDoc | null> {
  const fresh = { store_id: storeId, state: 'emitting' as const, event_id: null, created: now };
  return claimsOf(db).findOneAndUpdate({ _id: id }, { $setOnInsert: fresh }, { upsert: true, returnDocument: 'after' });
}

/** The claim's event is written: later claimers emit nothing. */
export async function completeEmission(db: Database, id: string, eventId: string): Promise<void> {
  await claimsOf(db).updateOne({ _id: id }, { $set: { state: 'done', event_id: eventId } });
}

/** Events of a type written since `sinceSeconds` (at most 500, for a retry looking for its own). */
export function recentEventsOfType(db: Database, storeId: string, type: string, sinceSeconds: number): Promise<EventDoc[]> {
  return collections(db)
    .events.find({ store_id: storeId, type, created: { $gte: sinceSeconds } })
    .limit(500)
    .toArray();
}
