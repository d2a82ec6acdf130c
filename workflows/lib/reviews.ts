// A payment left in review: its provider notice, or, when the notice is lost, the provider's record
// asked by the payment's key daily; at the review window's end it is voided and counts as refused
// (domain/reviews.ts). Shared by the charge and subscription workflows; the subscription's may stop
// waiting to continue as new and resume in its next run on the same schedule.
import { proxyActivities } from '@temporalio/workflow';
import { clockNow, clockWait, testClockRef } from './clock';
import type { Activities } from '../../activities';
import { WORKER_GONE_AFTER } from './timeouts';
import type { ProviderNotice } from '../../adapters/provider/types';
import { nextReviewCheckMs, REVIEW_RECHECK_MS, reviewWindowOver } from '../../domain/reviews';

// Provider reads and the void: retried until they get through (the provider being away is temporary).
const provider = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '2 seconds', maximumInterval: '10 minutes' },
});

export interface ReviewWait {
  storeId: string;
  /** The key the payment was charged under: what the provider is asked by. */
  idempotencyKey: string;
  transactionId: string;
  notifyRef: string | null;
  /** Workflow time (ms) the review began: the window counts from here. */
  startedMs: number;
  /** The notice, once the workflow's signal handler has it. */
  noticed: () => ProviderNotice | null;
  /** The test clock of the payment's customer: its lookups and void go to the test connection. */
  testClock?: string | null;
  /** Workflow time (ms) of the first check, kept by a run continued as new mid-review (default: a day on, as always). */
  firstCheckMs?: number;
}

/** Where a review wait stands: settled by a notice, or stopped before the check due at `nextCheckMs`. */
export type ReviewProgress = { settled: ProviderNotice } | { stopped: true; nextCheckMs: number };

function windowEnd(wait: ReviewWait): ProviderNotice {
  return {
    transactionId: wait.transactionId,
    status: 'refused',
    code: 'review_expired',
    message: 'The provider did not settle the review within its window; the payment was voided.',
    notifyRef: wait.notifyRef,
    settledAt: Math.floor(clockNow() / 1000),
  };
}

/** The review's outcome as a notice: the provider's own, its record read by key, or the window's end. */
export async function settledReview(wait: ReviewWait): Promise<ProviderNotice> {
  const progress = await reviewUntilStopped(wait, () => false);
  if (!('settled' in progress)) throw new Error('a review wait that cannot stop stopped');
  return progress.settled;
}

/**
 * As settledReview, except that it stops waiting once `stop` comes true (the run is continuing as new),
 * between checks only, saying when the next check was due so the next run keeps the same schedule.
 */
export async function reviewUntilStopped(wait: ReviewWait, stop: () => boolean): Promise<ReviewProgress> {
  const onClock = testClockRef(wait.testClock);
  const ask = {
    storeId: wait.storeId,
    idempotencyKey: wait.idempotencyKey,
    transactionId: wait.transactionId,
    notifyRef: wait.notifyRef,
    ...onClock,
  };
  let pastWindow = false;
  let carriedCheckMs = wait.firstCheckMs;
  for (;;) {
    const checkMs = carriedCheckMs ?? (pastWindow ? clockNow() + REVIEW_RECHECK_MS : nextReviewCheckMs(wait.startedMs, clockNow()));
    carriedCheckMs = undefined;
    if (checkMs > clockNow()) await clockWait(() => wait.noticed() !== null || stop(), checkMs - clockNow());
    const noticed = wait.noticed();
    if (noticed) return { settled: noticed };
    if (stop()) return { stopped: true, nextCheckMs: checkMs };
    const looked = await provider.lookupReview(ask);
    if (looked) return { settled: looked };
    if (!reviewWindowOver(wait.startedMs, clockNow())) continue;
    pastWindow = true;
    // Voided: it can never be captured now. Nothing to void: the provider decided meanwhile, read next round.
    if ((await provider.voidReview({ storeId: wait.storeId, idempotencyKey: wait.idempotencyKey, ...onClock })).ok)
      return { settled: windowEnd(wait) };
  }
}
