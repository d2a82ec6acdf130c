// One subscription charge (`charge/<store>/<key>`): the provider charge, its order and the charge
// document in one keyed activity, then its events; a charge left in review waits for the provider's
// notice (or asks the provider by key daily, and is voided as refused at the window's end) and settles. Every request under the key attaches to this run through the `outcome` update.
import { allHandlersFinished, condition, patched, proxyActivities, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import { settledReview } from './lib/reviews';
import type { Activities } from '../activities';
import type { ProviderNotice } from '../adapters/provider/types';
import {
  chargeOutcomeUpdate,
  chargeProviderSettledSignal,
  chargeStateQuery,
  type ChargeDecision,
  type ChargeWorkflowInput,
  type ChargeWorkflowState,
} from './charge-messages';

// The charge itself is a local activity: it runs inside the workflow task, so the outcome reaches
// the waiting request without activity-task round trips through the server. It is keyed, so a
// worker dying mid-charge only means the workflow task is retried by another worker and the charge
// runs again: the provider returns the first result for the key, and the derived order id and the
// charge's unique key turn the writes into no-ops.
const payments = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '30 seconds' },
});
// Events and settlement are regular activities: their attempt count survives a dead worker, which is
// what lets a retry look for an event the dead attempt may have written (emitEventOnce). Generous
// timeout, so an overloaded database is waited for rather than raced by a second attempt.
const records = proxyActivities<Activities>({
  startToCloseTimeout: '60 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function chargeWorkflow(input: ChargeWorkflowInput): Promise<ChargeDecision> {
  let decision: ChargeDecision | null = null;
  let notice: ProviderNotice | null = null;
  let phase: ChargeWorkflowState['phase'] = 'charging';

  setHandler(chargeOutcomeUpdate, async ({ fingerprint, requestId }) => {
    if (fingerprint !== input.fingerprint) return { kind: 'reused' as const };
    await condition(() => decision !== null);
    return {
      kind: 'charge' as const,
      charge: decision!.charge,
      outcome: decision!.outcome,
      replayed: requestId !== input.requestId,
      originalRequestId: input.requestId,
    };
  });
  setHandler(chargeProviderSettledSignal, (settled) => {
    notice = settled;
  });
  setHandler(chargeStateQuery, () => ({ phase, charge: decision?.charge ?? null, outcome: decision?.outcome ?? null }));

  decision = await payments.executeSubscriptionCharge(input);
  await records.emitChargeEvents({ storeId: input.storeId, chargeId: decision.charge.id });

  if (decision.outcome === 'review') {
    phase = 'awaiting_settlement';
    const transaction = decision.charge.transaction!;
    const noticed = () => (notice !== null && notice.transactionId === transaction ? notice : null);
    let settled: ProviderNotice;
    // Runs that began before lookups waited for the notice alone; their replay must keep doing so.
    if (patched('review-lookups')) {
      const reviewWait = { storeId: input.storeId, idempotencyKey: input.key, transactionId: transaction, notifyRef: workflowInfo().workflowId, startedMs: Date.now(), noticed };
      settled = await settledReview(reviewWait);
    } else {
      await condition(() => noticed() !== null);
      settled = noticed()!;
    }
    decision = await records.settleSubscriptionCharge({ storeId: input.storeId, chargeId: decision.charge.id, notice: settled });
    await records.emitChargeEvents({ storeId: input.storeId, chargeId: decision.charge.id });
  }
  phase = 'settled';
  await condition(allHandlersFinished);
  return decision;
}
