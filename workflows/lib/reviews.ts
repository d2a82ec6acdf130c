// A payment left in review: its provider notice, or, when the notice is lost, the provider's record
// asked by the payment's key daily; at the review window's end it is voided and counts as refused
// (domain/reviews.ts). Shared by the charge and subscription workflows.
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
}

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
  const onClock = testClockRef(wait.testClock);
  const ask = { storeId: wait.storeId, idempotencyKey: wait.idempotencyKey, transactionId: wait.transactionId, notifyRef: wait.notifyRef, ...onClock };
  let pastWindow = false;
  for (;;) {
    const untilCheck = pastWindow ? REVIEW_RECHECK_MS : nextReviewCheckMs(wait.startedMs, clockNow()) - clockNow();
    if (untilCheck > 0) await clockWait(() => wait.noticed() !== null, untilCheck);
    const noticed = wait.noticed();
    if (noticed) return noticed;
    const looked = await provider.lookupReview(ask);
    if (looked) return looked;
    if (!reviewWindowOver(wait.startedMs, clockNow())) continue;
    pastWindow = true;
    // Voided: it can never be captured now. Nothing to void: the provider decided meanwhile, read next round.
    if ((await provider.voidReview({ storeId: wait.storeId, idempotencyKey: wait.idempotencyKey, ...onClock })).ok) return windowEnd(wait);
  }
}
