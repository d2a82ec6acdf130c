// The metadata rules shared by every resource that accepts it, and its storage form.
// Stored as a list of {k, v} pairs because MongoDB before 5.0 refuses field names containing '.' or
// starting with '$'; the pairs round-trip any key exactly as sent.
import { ApiError, invalid } from './errors';

export const METADATA_MAX_KEYS = 50;
export const METADATA_MAX_KEY_LENGTH = 40;
export const METADATA_MAX_VALUE_LENGTH = 500;

export type Metadata = Record<string, string>;
export type StoredMetadata = { k: string; v: string }[];
export type MetadataInput = Record<string, string | number | boolean | null> | null | undefined;

/**
 * Validates a metadata map as sent and returns the map to keep: numbers and booleans become text,
 * null (or an empty form value) removes the key. `base` is merged under the input when given.
 */
export function normalizeMetadata(input: unknown, param = 'metadata', base: Metadata = {}): Metadata {
  if (input === null || input === undefined || input === '') return { ...base };
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw invalid(param, 'Invalid metadata: must be an object of keys and text values.');
  }
  const out: Metadata = { ...base };
  for (const [key, value] of Object.entries(input as Record<string, unknown>)) {
    const keyParam = `${param}.${key}`;
    if (key.length === 0) throw invalid(param, 'Metadata keys must not be empty.');
    if (key.length > METADATA_MAX_KEY_LENGTH) {
      throw invalid(keyParam, `Metadata keys can be up to ${METADATA_MAX_KEY_LENGTH} characters long.`);
    }
    if (value === null || value === '') {
      delete out[key];
      continue;
    }
    let text: string;
    if (typeof value === 'string') text = value;
    else if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
    else if (typeof value === 'boolean') text = String(value);
    else throw invalid(keyParam, 'Metadata values must be text, numbers or booleans.');
    if (text.length > METADATA_MAX_VALUE_LENGTH) {
      throw invalid(keyParam, `Metadata values can be up to ${METADATA_MAX_VALUE_LENGTH} characters long.`);
    }
    out[key] = text;
  }
  if (Object.keys(out).length > METADATA_MAX_KEYS) {
    throw new ApiError('parameter_invalid', `Metadata can have up to ${METADATA_MAX_KEYS} keys.`, { param });
  }
  return out;
}

export function encodeMetadata(metadata: Metadata): StoredMetadata {
  return Object.entries(metadata).map(([k, v]) => ({ k, v }));
}

export function decodeMetadata(stored: StoredMetadata | undefined | null): Metadata {
  const out: Metadata = {};
  for (const { k, v } of stored ?? []) out[k] = v;
  return out;
}
