// What this tests: request ids and public ids drawn from the pooled CSPRNG bytes (domain/ids.ts) keep
// their shape and never repeat across pool refills, and an API key's secret is matched by its stored
// SHA-256 hex and nothing else (domain/api-keys.ts).
import { describe, expect, test } from 'vitest';
import { hashSecret, secretMatches } from '../../domain/api-keys';
import { idTimeMs, newId, newRequestId } from '../../domain/ids';

// The pool holds 4,096 bytes: 10,000 request ids (10 bytes each) and ids (24 bytes each) cross it many times.
const DRAWS = 10_000;

describe('ids from the pooled random bytes', () => {
  test('request ids are req_ and 20 hex characters, all distinct across pool refills', () => {
    const ids = Array.from({ length: DRAWS }, () => newRequestId());
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{20}$/);
    expect(new Set(ids).size).toBe(DRAWS);
    // Each slice is fresh: no two consecutive ids share their bytes, wherever a refill falls.
    expect(new Set(ids.map((id) => id.slice(4, 14))).size).toBe(DRAWS);
  });

  test('public ids keep prefix, time and 12 base62 characters, distinct within one millisecond, mixed with request ids', () => {
    const ms = Date.UTC(2026, 10, 27);
    const ids = Array.from({ length: DRAWS }, (_, i) => (i % 3 === 0 ? (newRequestId(), newId('cs', ms)) : newId('cs', ms)));
    for (const id of ids) {
      expect(id).toMatch(/^cs_[0-9A-Za-z]{20}$/);
      expect(idTimeMs(id)).toBe(ms);
    }
    expect(new Set(ids).size).toBe(DRAWS);
  });
});

describe('secretMatches', () => {
  const secret = 'abcdefghijklmnopqrstuvwxyz012345';
  const stored = hashSecret(secret);

  test('the secret whose SHA-256 hex is stored matches; any other secret or hash does not', () => {
    expect(stored).toMatch(/^[0-9a-f]{64}$/);
    expect(secretMatches(secret, stored)).toBe(true);
    expect(secretMatches(`${secret.slice(0, -1)}6`, stored)).toBe(false);
    expect(secretMatches(secret, hashSecret('another secret'))).toBe(false);
    expect(secretMatches(secret, stored.toUpperCase())).toBe(true);
    // A stored value that is not a whole SHA-256 never matches (length differs).
    expect(secretMatches(secret, stored.slice(0, 62))).toBe(false);
    expect(secretMatches(secret, '')).toBe(false);
  });
});
