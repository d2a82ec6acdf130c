// How long a payment left in review may wait for the provider: its notice usually settles it; the
// workflow asks the provider by key on a timer in case the notice was lost, and past the window the
// payment counts as refused (and is voided at the provider so it can never be captured later).
export const REVIEW_RECHECK_MS = 24 * 60 * 60 * 1000;
export const REVIEW_WINDOW_MS = 7 * REVIEW_RECHECK_MS;

/** The next time to ask the provider about a review begun at `startedMs`: daily, and at the window's end. */
export function nextReviewCheckMs(startedMs: number, nowMs: number): number {
  const windowEnd = startedMs + REVIEW_WINDOW_MS;
  return Math.min(nowMs + REVIEW_RECHECK_MS, windowEnd);
}

/** True once the review window has run out: the payment counts as refused. */
export function reviewWindowOver(startedMs: number, nowMs: number): boolean {
  return nowMs >= startedMs + REVIEW_WINDOW_MS;
}
