// The webhook retry schedule (DESIGN.md): the delay before attempts 2..8, each stretched by up to 10%
// of jitter so a receiver that was down is not hit by every delivery at the same instant. The jitter
// is derived from the delivery and attempt (no random numbers: workflows use it, DESIGN principle 6).

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Delay before attempt n + 2 (index n): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const RETRY_DELAYS_MS = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
export const MAX_JITTER = 0.1;
/** How long the receiver has to answer 2xx. */
export const RECEIVER_TIMEOUT_MS = 10 * SECOND;

/** The delay after failed attempt `attempt` (1-based), or null after the last; jitter is a fraction in [0, 0.1]. */
export function retryDelayAfter(attempt: number, jitter: number): number | null {
  if (attempt < 1 || attempt >= MAX_ATTEMPTS) return null;
  const fraction = Math.min(Math.max(jitter, 0), MAX_JITTER);
  return Math.round(RETRY_DELAYS_MS[attempt - 1] * (1 + fraction));
}

/**
 * The jitter fraction in [0, 0.1) for an attempt of a delivery: FNV-1a of `<delivery id>#<attempt>`,
 * so it differs between deliveries and attempts but is the same on every replay or retry.
 */
export function jitterFor(deliveryId: string, attempt: number): number {
  const key = `${deliveryId}#${attempt}`;
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return ((hash >>> 0) / 0x1_0000_0000) * MAX_JITTER;
}
