// Idempotency keys of POST/DELETE calls: valid 24 hours within a store, or forever for a permanent one
// (subscription charges); one key space for every endpoint. The key's document is its own lock: the
// first request inserts it, a running request holds a lease (so a key whose process died mid-way is
// free again once the lease runs out; a live one renews it), and every later change is a compare-and-set
// on the run that was seen, so of any number of racing processes exactly one wins.
import type { Db, Filter } from 'mongodb';
import { collections, type IdempotencyDoc } from './collections';
import { isDuplicateKeyError } from './insert-once';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** Renewed while its request runs (every third of it), so only a dead process's key is taken over. */
export const IDEMPOTENCY_LEASE_MS = 30 * 1000;

/** The key a request holds: the key's document id and the request id of this very run. */
export interface IdempotencyClaim {
  id: string;
  run: string;
}

/** A claim, with when the key's record began: ids derived from the key are unique to this record (a key past 24 hours is a new one). */
export interface ClaimedKey extends IdempotencyClaim {
  created: number;
}

export type ClaimResult = ({ kind: 'claimed' } & ClaimedKey) | { kind: 'replay'; doc: IdempotencyDoc } | { kind: 'in_use' } | { kind: 'reused' };

/** The answer to a claim, or which run to replace (compare-and-set on it) and the creation to keep. */
type Decision = ClaimResult | { takeover: Filter<IdempotencyDoc>; created: number };

function decide(existing: IdempotencyDoc, fingerprint: string, now: number): Decision {
  const expired = existing.expires_at !== null && existing.created + IDEMPOTENCY_TTL_MS <= now;
  if (!expired && existing.fingerprint !== fingerprint) return { kind: 'reused' };
  if (existing.state === 'done') {
    return expired ? { takeover: { _id: existing._id, created: existing.created }, created: now } : { kind: 'replay', doc: existing };
  }
  if (!expired && existing.locked_until > now) return { kind: 'in_use' };
  // The lease (or the key) ran out: takers race the late owner for this very run.
  const run = { _id: existing._id, state: 'running' as const, request_id: existing.request_id, locked_until: existing.locked_until };
  return { takeover: run, created: expired ? now : existing.created };
}

export async function claimIdempotencyKey(
  db: Db,
  input: { storeId: string; key: string; fingerprint: string; requestId: string; permanent?: boolean; leaseMs?: number },
  now = Date.now(),
): Promise<ClaimResult> {
  const leaseMs = input.leaseMs ?? IDEMPOTENCY_LEASE_MS;
  const { idempotency } = collections(db);
  const id = `${input.storeId}:${input.key}`;
  const run = (created: number): Omit<IdempotencyDoc, '_id'> => ({
    store_id: input.storeId,
    key: input.key,
    fingerprint: input.fingerprint,
    state: 'running',
    locked_until: now + leaseMs,
    request_id: input.requestId,
    response: null,
    created,
    expires_at: input.permanent ? null : new Date(created + IDEMPOTENCY_TTL_MS),
  });
  const claimed = (created: number) => ({ kind: 'claimed' as const, id, run: input.requestId, created });
  // Each lost race changes what is stored, so the next pass decides on the newer state.
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await idempotency.insertOne({ _id: id, ...run(now) });
      return claimed(now);
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
    }
    const existing = await idempotency.findOne({ _id: id });
    if (!existing) continue;
    const decision = decide(existing, input.fingerprint, now);
    if ('kind' in decision) return decision;
    if (await idempotency.findOneAndUpdate(decision.takeover, { $set: run(decision.created) })) return claimed(decision.created);
  }
  return { kind: 'in_use' };
}

/** Extends a running request's lease; false once the run is no longer ours (done, released or taken over). */
export async function renewIdempotencyLease(db: Db, claim: IdempotencyClaim, leaseMs = IDEMPOTENCY_LEASE_MS, now = Date.now()): Promise<boolean> {
  const filter = { _id: claim.id, request_id: claim.run, state: 'running' as const };
  const result = await collections(db).idempotency.updateOne(filter, { $set: { locked_until: now + leaseMs } });
  return result.matchedCount === 1;
}

/** Stores the response, unless the run was taken over after its lease ran out (then it is not ours). */
export async function completeIdempotencyKey(
  db: Db,
  claim: IdempotencyClaim,
  response: { status: number; body: string; headers: Record<string, string> },
): Promise<boolean> {
  const filter = { _id: claim.id, request_id: claim.run, state: 'running' as const };
  const result = await collections(db).idempotency.updateOne(filter, { $set: { state: 'done', response } });
  return result.matchedCount === 1;
}

/** 5xx responses are not kept: the key is released so a retry runs again. */
export async function releaseIdempotencyKey(db: Db, claim: IdempotencyClaim): Promise<boolean> {
  const result = await collections(db).idempotency.deleteOne({ _id: claim.id, request_id: claim.run, state: 'running' });
  return result.deletedCount === 1;
}

/** What the TTL index on `expires_at` deletes, swept as a fallback where that index is unavailable. */
export async function sweepExpiredIdempotencyKeys(db: Db, now = Date.now()): Promise<number> {
  const result = await collections(db).idempotency.deleteMany({ expires_at: { $lte: new Date(now) } });
  return result.deletedCount;
}
