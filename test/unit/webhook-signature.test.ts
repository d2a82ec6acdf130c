// The webhook signature: our verifier and Stripe's constructEvent agree on every header we produce and
// on tampered ones (property-based), rotation signs with two secrets for 24 hours then one, the
// verifier's refusals carry their reason, and its tolerance is a plain 4th argument or an option.
import fc from 'fast-check';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { signDelivery, signingSecretsAt } from '../../adapters/webhooks/signing';
import { computeSignature, generateSignatureHeader, isValidSignature, verifySignature, WebhookSignatureError } from '../../adapters/webhooks/verify';
import { SECRET_ROTATION_OVERLAP_MS } from '../../store/webhook-endpoints';

const stripe = new Stripe('sk_test_unused');
const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const nowSeconds = Math.floor(NOW / 1000);

function stripeAccepts(body: string, header: string, secret: string, now: number): boolean {
  try {
    stripe.webhooks.constructEvent(body, header, secret, 300, undefined, now);
    return true;
  } catch {
    return false;
  }
}

const secretArb = fc
  .string({ minLength: 8, maxLength: 40, unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789') })
  .map((s) => `whsec_${s}`);
const bodyArb = fc.jsonValue().map((value) => JSON.stringify({ id: 'evt_1', data: { object: value } }));
// Within 300 s in the past: where both verifiers' clocks agree (Stripe does not refuse future timestamps).
const ageArb = fc.integer({ min: 0, max: 600 });

describe('verifySignature and stripe.webhooks.constructEvent', () => {
  it('accept and refuse the same headers: ours, Stripe-generated, wrong secret, tampered body, old timestamp', () => {
    fc.assert(
      fc.property(
        secretArb,
        secretArb,
        bodyArb,
        ageArb,
        fc.boolean(),
        fc.constantFrom('none', 'body', 'secret', 'signature'),
        (secret, other, body, age, stripeMade, tamper) => {
          const timestamp = nowSeconds - age;
          let header = stripeMade
            ? stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp })
            : generateSignatureHeader(body, [secret], timestamp);
          let receivedBody = body;
          let verifyWith = secret;
          if (tamper === 'body') receivedBody = `${body} `;
          if (tamper === 'secret') verifyWith = other === secret ? `${other}x` : other;
          if (tamper === 'signature') header = header.replace(/v1=([0-9a-f])/, (_m, c: string) => `v1=${c === '0' ? '1' : '0'}`);
          const ours = isValidSignature(receivedBody, header, [verifyWith], { now: NOW });
          expect(ours).toBe(stripeAccepts(receivedBody, header, verifyWith, NOW));
          expect(ours).toBe(tamper === 'none' && age <= 300);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('accept a rotation header (two v1) with either secret, as Stripe does', () => {
    const body = '{"id":"evt_rot"}';
    const header = generateSignatureHeader(body, ['whsec_new', 'whsec_old'], nowSeconds);
    for (const secret of ['whsec_new', 'whsec_old']) {
      expect(verifySignature(body, header, [secret], { now: NOW })).toBe(true);
      expect(stripeAccepts(body, header, secret, NOW)).toBe(true);
    }
    expect(isValidSignature(body, header, ['whsec_other'], { now: NOW })).toBe(false);
    expect(stripeAccepts(body, header, 'whsec_other', NOW)).toBe(false);
  });
});

describe('verifySignature refusals', () => {
  const body = '{"id":"evt_x"}';
  const reasonOf = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      return error instanceof WebhookSignatureError ? error.reason : 'other';
    }
    return 'accepted';
  };

  it('names the reason: missing header, no t, no v1, no match, timestamp too old or too far ahead', () => {
    const good = generateSignatureHeader(body, ['whsec_a'], nowSeconds);
    expect(reasonOf(() => verifySignature(body, undefined, ['whsec_a'], { now: NOW }))).toBe('missing_header');
    expect(reasonOf(() => verifySignature(body, 'v1=abc', ['whsec_a'], { now: NOW }))).toBe('malformed_header');
    expect(reasonOf(() => verifySignature(body, `t=${nowSeconds},v0=abc`, ['whsec_a'], { now: NOW }))).toBe('no_signatures');
    expect(reasonOf(() => verifySignature(body, good, ['whsec_b'], { now: NOW }))).toBe('no_match');
    expect(reasonOf(() => verifySignature(body, good, ['whsec_a'], { now: NOW + 301_000 }))).toBe('timestamp_out_of_tolerance');
    expect(reasonOf(() => verifySignature(body, good, ['whsec_a'], { now: NOW - 301_000 }))).toBe('timestamp_out_of_tolerance');
    expect(reasonOf(() => verifySignature(body, good, ['whsec_a'], { now: NOW + 300_000 }))).toBe('accepted');
    expect(reasonOf(() => verifySignature(body, good, [], { now: NOW }))).toBe('no_secret');
  });

  it('takes the tolerance in seconds as a plain 4th argument, 300 when omitted, against the real clock', () => {
    const seconds = Math.floor(Date.now() / 1000);
    const aged = (age: number) => generateSignatureHeader(body, ['whsec_a'], seconds - age);
    expect(reasonOf(() => verifySignature(body, aged(200), ['whsec_a']))).toBe('accepted');
    expect(reasonOf(() => verifySignature(body, aged(200), ['whsec_a'], 300))).toBe('accepted');
    expect(reasonOf(() => verifySignature(body, aged(200), ['whsec_a'], 100))).toBe('timestamp_out_of_tolerance');
    expect(reasonOf(() => verifySignature(body, aged(400), ['whsec_a']))).toBe('timestamp_out_of_tolerance');
    expect(reasonOf(() => verifySignature(body, aged(400), ['whsec_a'], 600))).toBe('accepted');
    expect(isValidSignature(body, aged(200), ['whsec_a'], 100)).toBe(false);
    // 0 skips the timestamp check, as Stripe's constructEvent does.
    expect(reasonOf(() => verifySignature(body, aged(86_400), ['whsec_a'], 0))).toBe('accepted');
  });

  it('refuses a tolerance that would silently disable the check (NaN, negative, infinite)', () => {
    const good = generateSignatureHeader(body, ['whsec_a'], nowSeconds);
    for (const tolerance of [Number.NaN, -1, Number.POSITIVE_INFINITY]) {
      expect(() => verifySignature(body, good, ['whsec_a'], tolerance)).toThrow(RangeError);
      expect(() => verifySignature(body, good, ['whsec_a'], { tolerance, now: NOW })).toThrow(RangeError);
    }
  });

  it('signs `<t>.<body>` with HMAC-SHA256 keyed by the whole whsec_ secret', () => {
    expect(computeSignature('{}', 'whsec_k', 1700000000)).toBe(
      stripe.webhooks.generateTestHeaderString({ payload: '{}', secret: 'whsec_k', timestamp: 1700000000 }).split('v1=')[1],
    );
  });
});

describe('secret rotation', () => {
  const endpoint = { secret: 'whsec_new', previous_secret: 'whsec_old', previous_secret_expires_at: NOW + SECRET_ROTATION_OVERLAP_MS };

  it('signs with the new and the old secret until 24 hours after the rotation, then with the new one only', () => {
    expect(signingSecretsAt(endpoint, NOW)).toEqual(['whsec_new', 'whsec_old']);
    expect(signingSecretsAt(endpoint, NOW + SECRET_ROTATION_OVERLAP_MS - 1)).toEqual(['whsec_new', 'whsec_old']);
    expect(signingSecretsAt(endpoint, NOW + SECRET_ROTATION_OVERLAP_MS)).toEqual(['whsec_new']);

    const during = signDelivery('{}', endpoint, NOW + 60_000);
    expect(during.match(/v1=/g)).toHaveLength(2);
    const after = signDelivery('{}', endpoint, NOW + SECRET_ROTATION_OVERLAP_MS + 60_000);
    expect(after.match(/v1=/g)).toHaveLength(1);
    expect(isValidSignature('{}', after, ['whsec_old'], { now: NOW + SECRET_ROTATION_OVERLAP_MS + 60_000 })).toBe(false);
    expect(isValidSignature('{}', after, ['whsec_new'], { now: NOW + SECRET_ROTATION_OVERLAP_MS + 60_000 })).toBe(true);
  });
});
