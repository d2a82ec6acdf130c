// The reference verifier for receivers of our webhooks (self-contained: copy this file as is).
//
//   import { verifySignature } from './verify';
//   app.post('/hook', rawBody, (req, res) => {
//     verifySignature(req.rawBody, req.headers['service-signature'], [process.env.WHSEC]); // throws if invalid
//     // a tolerance other than 300 s: verifySignature(body, header, secrets, 600)
//     const event = JSON.parse(req.rawBody); // deduplicate by event.id: the same event may arrive twice
//     res.sendStatus(200);
//   });
//
// Header: `Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>]`; v1 is HMAC-SHA256, keyed with the
// endpoint secret (the whole `whsec_...` text), over `<t>.<raw body>`. During a secret rotation the
// header carries two v1 values; any one matching is enough. The format is Stripe's, so
// `stripe.webhooks.constructEvent(body, header, secret)` verifies our deliveries too. One difference,
// from our spec: we also refuse timestamps more than `tolerance` seconds in the future (Stripe only
// refuses old ones).
import { createHmac, timingSafeEqual } from 'node:crypto';

export const DEFAULT_TOLERANCE_SECONDS = 300;
export const SIGNATURE_SCHEME = 'v1';

export type SignatureFailure = 'missing_header' | 'malformed_header' | 'no_signatures' | 'timestamp_out_of_tolerance' | 'no_match' | 'no_secret';

export class WebhookSignatureError extends Error {
  readonly reason: SignatureFailure;
  constructor(reason: SignatureFailure, message: string) {
    super(message);
    this.name = 'WebhookSignatureError';
    this.reason = reason;
  }
}

export interface ParsedSignatureHeader {
  timestamp: number;
  signatures: string[];
}

/** `t=...,v1=...,v1=...`: the last t, every v1; other schemes are ignored. Null when there is no usable t. */
export function parseSignatureHeader(header: string): ParsedSignatureHeader | null {
  let timestamp = -1;
  const signatures: string[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq === -1) continue;
    const key = item.slice(0, eq);
    const value = item.slice(eq + 1);
    if (key === 't') timestamp = /^\d+$/.test(value) ? Number(value) : -1;
    else if (key === SIGNATURE_SCHEME) signatures.push(value);
  }
  return timestamp < 0 ? null : { timestamp, signatures };
}

/** Hex HMAC-SHA256 of `<t>.<body>` with `secret`. */
export function computeSignature(body: string | Uint8Array, secret: string, timestamp: number): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  // Lengths are public (64 hex characters); contents are compared in constant time.
  return left.length === right.length && timingSafeEqual(left, right);
}

export interface VerifyOptions {
  /** Seconds the timestamp may differ from now, either way; 300 unless stated. */
  tolerance?: number;
  /** Clock in milliseconds, for tests and offline checks. */
  now?: number;
}

/** The 4th argument of verifySignature: the tolerance in seconds, or options. */
function verifyOptions(toleranceOrOptions: number | VerifyOptions | undefined): Required<VerifyOptions> {
  const options = typeof toleranceOrOptions === 'number' ? { tolerance: toleranceOrOptions } : (toleranceOrOptions ?? {});
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE_SECONDS;
  // NaN or a negative number would silently turn the timestamp check off.
  if (!Number.isFinite(tolerance) || tolerance < 0) throw new RangeError(`tolerance must be a number of seconds, 0 or more (got ${tolerance}).`);
  return { tolerance, now: options.now ?? Date.now() };
}

/**
 * Checks a delivery: throws WebhookSignatureError (with `reason`) unless the timestamp is within
 * `tolerance` seconds of now (300 unless given; 0 skips the check) and some v1 value equals the HMAC
 * of `<t>.<body>` under some secret. Pass the raw body exactly as received (not re-serialized JSON).
 * The 4th argument is the tolerance in seconds, or options with it and a clock.
 */
export function verifySignature(
  body: string | Uint8Array,
  header: string | string[] | null | undefined,
  secrets: string | readonly string[],
  toleranceOrOptions?: number | VerifyOptions,
): true {
  const { tolerance, now } = verifyOptions(toleranceOrOptions);
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) throw new WebhookSignatureError('missing_header', 'No Service-Signature header was sent.');
  const keys = (typeof secrets === 'string' ? [secrets] : [...secrets]).filter((s) => s.length > 0);
  if (keys.length === 0) throw new WebhookSignatureError('no_secret', 'No signing secret was given; it starts with whsec_.');
  const parsed = parseSignatureHeader(value);
  if (!parsed) throw new WebhookSignatureError('malformed_header', 'The Service-Signature header has no t=<unix seconds> value.');
  if (parsed.signatures.length === 0) {
    throw new WebhookSignatureError('no_signatures', `The Service-Signature header has no ${SIGNATURE_SCHEME}= value.`);
  }
  const expected = keys.map((secret) => computeSignature(body, secret, parsed.timestamp));
  // Every pair is compared, so the time taken does not tell which (if any) matched.
  let matched = false;
  for (const signature of parsed.signatures) {
    for (const candidate of expected) if (sameText(signature, candidate)) matched = true;
  }
  if (!matched) {
    throw new WebhookSignatureError(
      'no_match',
      'No v1 signature matches the body. Verify the raw request body (not parsed and re-serialized JSON) with the endpoint secret.',
    );
  }
  if (tolerance > 0 && Math.abs(Math.floor(now / 1000) - parsed.timestamp) > tolerance) {
    throw new WebhookSignatureError('timestamp_out_of_tolerance', `The signature timestamp is more than ${tolerance} seconds from now.`);
  }
  return true;
}

/** verifySignature as a boolean, for receivers that only branch on it. */
export function isValidSignature(
  body: string | Uint8Array,
  header: string | string[] | null | undefined,
  secrets: string | readonly string[],
  toleranceOrOptions?: number | VerifyOptions,
): boolean {
  try {
    return verifySignature(body, header, secrets, toleranceOrOptions);
  } catch (error) {
    if (error instanceof WebhookSignatureError) return false;
    throw error;
  }
}

/** A header as we send it: for tests of a receiver (one value per secret). */
export function generateSignatureHeader(body: string | Uint8Array, secrets: readonly string[], timestamp: number): string {
  return [`t=${timestamp}`, ...secrets.map((secret) => `${SIGNATURE_SCHEME}=${computeSignature(body, secret, timestamp)}`)].join(',');
}
