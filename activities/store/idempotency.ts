// Idempotency keys of ordinary POST/DELETE calls: valid 24 hours within a store. A running request
// holds a lease, so a request whose process died mid-way frees its key when the lease runs out.
// Every decision is a unique-key insert, the one write FerretDB v1 applies atomically (its updates are a
// read then a write, so a compare-and-set filter can let two writers through): the first request
// inserts the key's document, and each run's fate (its owner completing or releasing it, or one taker
// replacing it after its lease ran out) is decided by whoever first inserts the marker named after that
// exact run. The winner then writes the key's document by {_id} alone: FerretDB v1 only uses an index
// for an exact {_id} filter, and any other filter reads every stored key and response.
import type { Db } from 'mongodb';
import { collections, type IdempotencyDoc } from './collections';

interface RunMarker {
  _id: string;
  created: number;
  outcome: 'done' | 'released' | 'taken_over';
}

const runMarkers = (db: Db) => db.collection<RunMarker>('idempotency_takeovers');

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
export const IDEMPOTENCY_LEASE_MS = 60 * 1000;

/** The key a request holds: the key's document id and the marker id of this very run. */
export interface IdempotencyClaim {
  id: string;
  run: string;
}

export type ClaimResult =
  | ({ kind: 'claimed' } & IdempotencyClaim)
  | { kind: 'replay'; doc: IdempotencyDoc }
  | { kind: 'in_use' }
  | { kind: 'reused' };

function isDuplicateKey(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: number }).code === 11000;
}

function runMarkerId(doc: Pick<IdempotencyDoc, '_id' | 'request_id' | 'locked_until'>): string {
  return `${doc._id}|${doc.request_id}|${doc.locked_until}`;
}

/** True when this caller inserted the marker first and so alone decides what happens to that run. */
async function decideRun(db: Db, marker: string, outcome: RunMarker['outcome'], now: number): Promise<boolean> {
  try {
    await runMarkers(db).insertOne({ _id: marker, created: now, outcome });
    return true;
  } catch (error) {
    if (!isDuplicateKey(error)) throw error;
    return false;
  }
}

export async function claimIdempotencyKey(
  db: Db,
  input: { storeId: string; key: string; fingerprint: string; requestId: string },
  now = Date.now(),
): Promise<ClaimResult> {
  const { idempotency } = collections(db);
  const id = `${input.storeId}:${input.key}`;
  const fresh: IdempotencyDoc = {
    _id: id,
    store_id: input.storeId,
    key: input.key,
    fingerprint: input.fingerprint,
    state: 'running',
    locked_until: now + IDEMPOTENCY_LEASE_MS,
    request_id: input.requestId,
    response: null,
    created: now,
  };
  const claimed = { kind: 'claimed' as const, id, run: runMarkerId(fresh) };
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await idempotency.insertOne(fresh);
      return claimed;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    const existing = await idempotency.findOne({ _id: id });
    if (!existing) continue;
    const expired = existing.created + IDEMPOTENCY_TTL_MS <= now;
    const takeOver = async (marker: string): Promise<'won' | 'lost' | 'gone'> => {
      if (!(await decideRun(db, marker, 'taken_over', now))) return 'lost';
      const replaced = await idempotency.replaceOne({ _id: id }, expired ? fresh : { ...fresh, created: existing.created });
      return replaced.matchedCount === 1 ? 'won' : 'gone';
    };
    if (!expired && existing.fingerprint !== input.fingerprint) return { kind: 'reused' };
    let taken: 'won' | 'lost' | 'gone';
    if (existing.state === 'done') {
      if (!expired) return { kind: 'replay', doc: existing };
      // The run's own marker already says done, so expiry takers race on a marker of their own.
      taken = await takeOver(`${runMarkerId(existing)}|expired`);
    } else {
      if (!expired && existing.locked_until > now) return { kind: 'in_use' };
      // The lease (or the key) ran out: the taker races the late owner for the run's marker.
      taken = await takeOver(runMarkerId(existing));
      if (taken === 'lost') {
        const fate = await runMarkers(db).findOne({ _id: runMarkerId(existing) });
        // The marker's winner writes the key right after; if it died in between, one more taker may go.
        if (fate && fate.created + IDEMPOTENCY_LEASE_MS <= now) taken = await takeOver(`${runMarkerId(existing)}|stale`);
      }
    }
    if (taken === 'won') return claimed;
    if (taken === 'lost') return { kind: 'in_use' };
    // 'gone': the sweeper removed the key meanwhile, so the next attempt inserts it afresh.
  }
  return { kind: 'in_use' };
}

/** Stores the response, unless the run was taken over after its lease ran out (then it is not ours). */
export async function completeIdempotencyKey(
  db: Db,
  claim: IdempotencyClaim,
  response: { status: number; body: string; headers: Record<string, string> },
  now = Date.now(),
): Promise<boolean> {
  if (!(await decideRun(db, claim.run, 'done', now))) return false;
  await collections(db).idempotency.updateOne({ _id: claim.id }, { $set: { state: 'done', response } });
  return true;
}

/** 5xx responses are not kept: the key is released so a retry runs again. */
export async function releaseIdempotencyKey(db: Db, claim: IdempotencyClaim, now = Date.now()): Promise<boolean> {
  if (!(await decideRun(db, claim.run, 'released', now))) return false;
  await collections(db).idempotency.deleteOne({ _id: claim.id });
  return true;
}

export async function sweepExpiredIdempotencyKeys(db: Db, now = Date.now()): Promise<number> {
  const result = await collections(db).idempotency.deleteMany({ created: { $lt: now - IDEMPOTENCY_TTL_MS } });
  await runMarkers(db).deleteMany({ created: { $lt: now - IDEMPOTENCY_TTL_MS } });
  return result.deletedCount;
}
