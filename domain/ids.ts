// Public ids: the spec's prefix, then a time-ordered random part (milliseconds first, then randomness,
// base62), so sorting ids sorts by creation and `_id` serves lookup, uniqueness and cursors alike.
import { createHash, randomBytes, randomUUID } from 'node:crypto';

// Ordered by ASCII so that string comparison of ids follows the numbers they encode.
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export type IdPrefix =
  | 'cust' | 'sub' | 'ord' | 'ofr' | 'prd' | 'cs' | 'bps' | 'ak' | 'sch' | 'mtr' | 'mev'
  | 'usi' | 'usp' | 'evt' | 'pm' | 'tx' | 'acct' | 'cpn' | 'bpt';

function encodeTime(ms: number): string {
  let out = '';
  let n = ms;
  for (let i = 0; i < 8; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export function randomBase62(length: number): string {
  // Rejection sampling keeps every character equally likely.
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

export function newId(prefix: IdPrefix, now = Date.now()): string {
  return `${prefix}_${encodeTime(now)}${randomBase62(12)}`;
}

/**
 * An id that is the same every time it is derived from the same seed (a charge key, a renewal
 * attempt): retried side effects insert the same id and a unique index turns the retry into a no-op.
 */
export function derivedId(prefix: IdPrefix, ms: number, seed: string): string {
  const digest = createHash('sha256').update(seed).digest();
  let tail = '';
  for (let i = 0; tail.length < 12; i++) tail += BASE62[digest[i] % 62];
  return `${prefix}_${encodeTime(ms)}${tail}`;
}

export function newUuid(): string {
  return randomUUID();
}

export function hasPrefix(id: unknown, prefix: IdPrefix): id is string {
  return typeof id === 'string' && id.startsWith(`${prefix}_`);
}
