// Whether an open session has a payment attempt in flight, as the hosted page's status polls ask it,
// without a Temporal query per poll: one query per session per ATTEMPT_PROBE_FRESH_MS in this process,
// shared by every poll in that time; a settled session never gets here (its document answers).
import type { UnsettledAttempt } from './client';
import { attemptInFlight } from './payments';
import type { CheckoutDeps } from './sessions';

/** Under the page's 2 s poll interval: one buyer's page never sees an answer older than its last poll. */
export const ATTEMPT_PROBE_FRESH_MS = 1_000;
/** Sessions whose answer this process remembers; the oldest are forgotten beyond it. */
export const ATTEMPT_PROBE_MAX_SESSIONS = 10_000;

type Probe = Promise<UnsettledAttempt | false | null>;
const probes = new Map<string, { at: number; answer: Probe }>();

/** attemptInFlight, asked of the workflow at most once per ATTEMPT_PROBE_FRESH_MS per session. */
export function attemptInFlightRecently(deps: CheckoutDeps, sessionId: string, now = Date.now()): Probe {
  const known = probes.get(sessionId);
  if (known && now - known.at < ATTEMPT_PROBE_FRESH_MS) return known.answer;
  probes.delete(sessionId);
  const answer = attemptInFlight(deps, sessionId);
  probes.set(sessionId, { at: now, answer });
  if (probes.size > ATTEMPT_PROBE_MAX_SESSIONS) forgetOldest(now);
  return answer;
}

/** Stale answers go, then the oldest (the map is in insertion order), down to 90% of the bound. */
function forgetOldest(now: number): void {
  for (const [id, probe] of probes) if (now - probe.at >= ATTEMPT_PROBE_FRESH_MS) probes.delete(id);
  for (const id of probes.keys()) {
    if (probes.size <= ATTEMPT_PROBE_MAX_SESSIONS * 0.9) break;
    probes.delete(id);
  }
}

/** Sessions remembered now (tests). */
export function attemptProbesHeld(): number {
  return probes.size;
}
