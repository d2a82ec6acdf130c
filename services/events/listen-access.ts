// What a `listen` session may do and for how long: where a replay may start (an event of the store,
// at most replayMaxAgeMs old with at most replayMaxEvents after it), and whether its key and store
// still admit it (re-read while it streams, so revoking the key or switching the store off ends it).
import type { Database } from '../../store/database';
import { ApiError, notFound } from '../../domain/errors';
import { idFloorAt } from '../../domain/ids';
import { countEventsAfter, findEvent } from '../../store/events';
import { findApiKeyByKeyId, findStore } from '../../store/stores';

export interface ReplayBounds {
  replayMaxEvents: number;
  replayMaxAgeMs: number;
}

/** Checks the event a replay starts after; 404 when the store has no such event, 400 when it is too far back. */
export async function checkReplayStart(db: Database, storeId: string, since: string, param: string, bounds: ReplayBounds): Promise<void> {
  if (!(await findEvent(db, storeId, since))) throw notFound('event', since, param);
  const hours = Math.round(bounds.replayMaxAgeMs / 3_600_000);
  // Ids sort by the time they encode (domain/ids.ts): an id under the floor is older than the bound.
  if (since < idFloorAt('evt', Date.now() - bounds.replayMaxAgeMs)) {
    throw new ApiError('parameter_invalid', `A replay starts at most ${hours} hours back; list older events with GET /v1/events.`, { param });
  }
  const after = await countEventsAfter(db, storeId, since, bounds.replayMaxEvents + 1);
  if (after > bounds.replayMaxEvents) {
    throw new ApiError(
      'parameter_invalid',
      `More than ${bounds.replayMaxEvents} events follow ${since}; list them with GET /v1/events and listen from a later one.`,
      { param },
    );
  }
}

/** Why a session must end now (the code its key would be refused with), or null while it is admitted. */
export async function listenRefusal(db: Database, keyId: string, storeId: string, now = Date.now()): Promise<string | null> {
  const [key, store] = await Promise.all([findApiKeyByKeyId(db, keyId), findStore(db, storeId)]);
  if (!key || !store) return 'invalid_api_key';
  if (key.revoked_at !== null) return 'api_key_revoked';
  if (key.expires_at !== null && key.expires_at * 1000 <= now) return 'api_key_expired';
  if (!store.active) return 'project_inactive';
  if (!store.api_enabled) return 'api_not_enabled';
  return null;
}
