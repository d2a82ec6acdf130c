// Idempotency keys of ordinary POST/DELETE calls: valid 24 hours within a store. A running request
// holds a lease, so a request whose process died mid-way frees its key when the lease runs out.
// Every claim is a unique-key insert, the one write FerretDB v1 applies atomically (its updates are a
// read then a write, so a compare-and-set filter can let two writers through): the first request
// inserts the key's document, and taking over an expired or abandoned one first inserts a marker
// named after the exact run it replaces, so only one taker wins.
import type { Db } from 'mongodb';
import { collections, type IdempotencyDoc } from './collections';

interface TakeoverMarker {
  _id: string;
  created: number;
}

const takeovers = (db: Db) => db.collection<TakeoverMarker>('idempotency_takeovers');

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
export const IDEMPOTENCY_LEASE_MS = 60 * 1000;

export type ClaimResult =
  | { kind: 'claimed'; id: string }
  | { kind: 'replay'; doc: IdempotencyDoc }
  | { kind: 'in_use' }
  | { kind: 'reused' };

function isDuplicateKey(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: number }).code === 11000;
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
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await idempotency.insertOne(fresh);
      return { kind: 'claimed', id };
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    const existing = await idempotency.findOne({ _id: id });
    if (!existing) continue;
    // An expired key, or a lease whose holder died, is taken over by whoever inserts the marker of
    // that exact run first; the others see the key in use.
    const expired = existing.created + IDEMPOTENCY_TTL_MS <= now;
    const abandoned = existing.state === 'running' && existing.locked_until <= now;
    if (expired || (abandoned && existing.fingerprint === input.fingerprint)) {
      try {
        await takeovers(db).insertOne({ _id: `${id}|${existing.request_id}|${existing.locked_until}`, created: now });
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        return { kind: 'in_use' };
      }
      const replaced = await idempotency.replaceOne({ _id: id }, expired ? fresh : { ...fresh, created: existing.created });
      if (replaced.matchedCount === 1) return { kind: 'claimed', id };
      continue;
    }
    if (existing.fingerprint !== input.fingerprint) return { kind: 'reused' };
    if (existing.state === 'done') return { kind: 'replay', doc: existing };
    return { kind: 'in_use' };
  }
  return { kind: 'in_use' };
}

export async function completeIdempotencyKey(
  db: Db,
  id: string,
  requestId: string,
  response: { status: number; body: string; headers: Record<string, string> },
): Promise<void> {
  await collections(db).idempotency.updateOne(
    { _id: id, request_id: requestId },
    { $set: { state: 'done', response } },
  );
}

/** 5xx responses are not kept: the key is released so a retry runs again. */
export async function releaseIdempotencyKey(db: Db, id: string, requestId: string): Promise<void> {
  await collections(db).idempotency.deleteOne({ _id: id, request_id: requestId, state: 'running' });
}

export async function sweepExpiredIdempotencyKeys(db: Db, now = Date.now()): Promise<number> {
  const result = await collections(db).idempotency.deleteMany({ created: { $lt: now - IDEMPOTENCY_TTL_MS } });
  await takeovers(db).deleteMany({ created: { $lt: now - IDEMPOTENCY_TTL_MS } });
  return result.deletedCount;
}
