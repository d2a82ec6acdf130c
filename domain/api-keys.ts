// API key shape: `vk_live_` + 12-character public identifier + 32-character secret, letters and digits.
// Only a SHA-256 of the secret is stored; comparison is constant-time.
import { createHash, hash, timingSafeEqual } from 'node:crypto';
import { randomBase62 } from './ids';

export const KEY_PREFIX = 'vk_live_';
const KEY_SHAPE = /^vk_live_([A-Za-z0-9]{12})([A-Za-z0-9]{32})$/;

export const API_VERSIONS = ['2026-11-01'] as const;
export const CURRENT_API_VERSION = API_VERSIONS[API_VERSIONS.length - 1];

export interface ParsedKey {
  keyId: string;
  secret: string;
}

/** Returns null for any string that is not exactly the key shape: no lookup happens for those. */
export function parseApiKey(raw: string): ParsedKey | null {
  const match = KEY_SHAPE.exec(raw);
  return match ? { keyId: match[1], secret: match[2] } : null;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function secretMatches(secret: string, storedHash: string): boolean {
  // One-shot digest as bytes: no Hash object and no hex round trip on every request.
  const a = hash('sha256', secret, 'buffer');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export function generateApiKey(): { full: string; keyId: string; secret: string } {
  const keyId = randomBase62(12);
  const secret = randomBase62(32);
  return { full: `${KEY_PREFIX}${keyId}${secret}`, keyId, secret };
}
