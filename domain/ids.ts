// The one place ids are minted: public ids (the spec's prefix, then 8 base62 characters of
// milliseconds and 12 random ones, so sorting ids sorts by creation and `_id` serves lookup,
// uniqueness and cursors alike), ids derived from a seed (a retry mints the same id), and UUIDs.
import { createHash, randomBytes, randomUUID } from 'node:crypto';

// Ordered by ASCII so that string comparison of ids follows the numbers they encode.
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const TIME_CHARS = 8;

export type IdPrefix =
  | 'cust'
  | 'sub'
  | 'ord'
  | 'ofr'
  | 'prd'
  | 'cs'
  | 'bps'
  | 'ak'
  | 'sch'
  | 'mtr'
  | 'mev'
  | 'usi'
  | 'usp'
  | 'evt'
  | 'pm'
  | 'tok'
  | 'tx'
  | 'acct'
  | 'cpn'
  | 'bpt'
  | 'clock'
  | 'rf'
  | 're';

function encodeTime(ms: number): string {
  let out = '';
  let n = ms;
  for (let i = 0; i < TIME_CHARS; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** Milliseconds encoded in a time-ordered id (the 8 base62 characters after the prefix). */
export function idTimeMs(id: string): number {
  const part = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 1 + TIME_CHARS);
  let ms = 0;
  for (const char of part) ms = ms * 62 + Math.max(0, BASE62.indexOf(char));
  return ms;
}

/** Random base62 text straight from the CSPRNG (secrets too). */
export function randomBase62(length: number): string {
  return base62From(length, randomBytes);
}

function base62From(length: number, random: (size: number) => Uint8Array): string {
  // Rejection sampling keeps every character equally likely.
  let out = '';
  while (out.length < length) {
    for (const byte of random(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/** Bytes of the CSPRNG drawn 4 KiB at a time (as randomUUID does): a sync randomBytes call per request costs more than its bytes. */
const ID_ENTROPY_POOL_BYTES = 4096;
let idEntropy = Buffer.alloc(0);
let idEntropyOffset = 0;

/** `size` fresh random bytes for ids, never handed out twice; not for secrets (the pool stays in memory). */
function idRandomBytes(size: number): Buffer {
  if (idEntropyOffset + size > idEntropy.length) {
    idEntropy = randomBytes(Math.max(ID_ENTROPY_POOL_BYTES, size));
    idEntropyOffset = 0;
  }
  idEntropyOffset += size;
  return idEntropy.subarray(idEntropyOffset - size, idEntropyOffset);
}

/** `length` base62 characters of SHA-256 over `seed`: the same seed, the same characters. */
function seededBase62(seed: string, length: number): string {
  const digest = createHash('sha256').update(seed).digest();
  let out = '';
  for (let i = 0; out.length < length; i++) out += BASE62[digest[i] % 62];
  return out;
}

/** The smallest id minted at `ms` (every id minted then or later sorts at or after it). */
export function idFloorAt(prefix: IdPrefix, ms: number): string {
  return `${prefix}_${encodeTime(ms)}`;
}

export function newId(prefix: IdPrefix, now = Date.now()): string {
  return `${prefix}_${encodeTime(now)}${base62From(12, idRandomBytes)}`;
}

/**
 * An id that is the same every time it is derived from the same seed (a charge key, a renewal
 * attempt): retried side effects insert the same id and a unique index turns the retry into a no-op.
 */
export function derivedId(prefix: IdPrefix, ms: number, seed: string): string {
  return `${prefix}_${encodeTime(ms)}${seededBase62(seed, 12)}`;
}

/** `<prefix>_` and 22 base62 characters of SHA-256 over `seed`, no time: an id found from what identifies it. */
export function hashedId(prefix: string, seed: string): string {
  return `${prefix}_${seededBase62(seed, 22)}`;
}

export function newUuid(): string {
  return randomUUID();
}

/** A UUID in the v7 layout: 48 bits of Unix milliseconds, then version, variant and 74 given bits. */
function uuidV7(ms: number, bits: Buffer): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0').slice(-12);
  const rand = bits.toString('hex');
  const variant = ((parseInt(rand[3], 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${rand.slice(0, 3)}-${variant}${rand.slice(4, 7)}-${rand.slice(7, 19)}`;
}

/** A random UUID ordered by its creation time. */
export function newTimeOrderedUuid(now = Date.now()): string {
  return uuidV7(now, randomBytes(10));
}

/** The same UUID for the same seed, ordered by `ms`. */
export function derivedTimeOrderedUuid(ms: number, seed: string): string {
  return uuidV7(ms, createHash('sha256').update(seed).digest().subarray(0, 10));
}

/** A request's id (Request-Id header, request log): `req_` and 20 hex characters. */
export function newRequestId(): string {
  return `req_${idRandomBytes(10).toString('hex')}`;
}

export function hasPrefix(id: unknown, prefix: IdPrefix): id is string {
  return typeof id === 'string' && id.startsWith(`${prefix}_`);
}
