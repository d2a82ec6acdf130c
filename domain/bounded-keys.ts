// Identifiers built from a merchant's text (an Idempotency-Key of up to 255 characters) kept within the
// limits of what stores them: Temporal's ids on a production cluster (limit.maxIDLength 255, the SQL
// workflow_id column) and a provider's idempotency keys (Stripe: 255). Text that fits is kept as is; longer
// text keeps a readable head and ends in a digest of the whole, under a marker of its own, so two texts
// never share one identifier. The full text stays in the document and the workflow's details.
import { createHash } from 'node:crypto';

/** Temporal's recommended limit.maxIDLength and Stripe's idempotency key limit alike. */
export const ID_LENGTH_MAX = 255;

const DIGEST_LENGTH = 43;

const digestOf = (text: string) => createHash('sha256').update(text).digest('base64url');

/**
 * `${namespace}/${text}` when it fits in `max` characters, else `${namespace}#/${head}~${digest}`: the
 * marker `#/` never follows a namespace in a kept form, so a digest form never equals a kept one.
 */
export function boundedKey(namespace: string, text: string, max: number): string {
  const kept = `${namespace}/${text}`;
  if (kept.length <= max) return kept;
  const head = text.slice(0, max - namespace.length - 3 - DIGEST_LENGTH);
  return `${namespace}#/${head}~${digestOf(text)}`;
}
