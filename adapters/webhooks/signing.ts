// Signing a delivery: which secrets sign at a given moment (the current one, plus the previous one for
// 24 hours after a rotation) and the Service-Signature header they produce.
import { generateSignatureHeader } from './verify';

/** The secrets an endpoint signs with (a rotated-out one until it expires, in ms); adapters/ name no store document. */
export interface SigningSecrets {
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
}

export const SIGNATURE_HEADER = 'Service-Signature';

/** The secrets that sign at `nowMs`: current first, then the rotated-out one while its overlap lasts. */
export function signingSecretsAt(endpoint: SigningSecrets, nowMs: number): string[] {
  const secrets = [endpoint.secret];
  if (endpoint.previous_secret && endpoint.previous_secret_expires_at !== null && nowMs < endpoint.previous_secret_expires_at) {
    secrets.push(endpoint.previous_secret);
  }
  return secrets;
}

/** `t=<unix seconds>,v1=<hex>` with one v1 per signing secret. */
export function signDelivery(body: string, endpoint: SigningSecrets, nowMs: number): string {
  return generateSignatureHeader(body, signingSecretsAt(endpoint, nowMs), Math.floor(nowMs / 1000));
}
