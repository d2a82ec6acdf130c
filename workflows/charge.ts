// One subscription charge (`charge/<store>/<key>`): the provider charge, its order and the charge
// document in one keyed activity, then its events; a charge left in review waits for the provider's
// notice and settles. Every request under the key attaches to this run through the `outcome` update.
import { allHandlersFinished, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ProviderNotice } from '../activities/provider/types';
import {
  chargeOutcomeUpdate,
  chargeProviderSettledSignal,
  chargeStateQuery,
  type ChargeDecision,
  type ChargeWorkflowInput,
  type ChargeWorkflowState,
} from './charge-messages';

// A short heartbeat timeout: if a worker dies mid-charge, another retries within seconds (the
// provider key, the derived order id and the charge's unique key make the retry a replay); a slow
// but live attempt heartbeats and keeps its minute rather than being run twice at once.
const payments = proxyActivities<Activities>({
  startToCloseTimeout: '60 seconds',
  heartbeatTimeout: '8 seconds',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '30 seconds' },
});
const store = proxyActivities<Activities>({
  startToCloseTimeout: '20 seconds',
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
  await store.emitChargeEvents({ storeId: input.storeId, chargeId: decision.charge.id });

  if (decision.outcome === 'review') {
    phase = 'awaiting_settlement';
    const transaction = decision.charge.transaction;
    await condition(() => notice !== null && notice.transactionId === transaction);
    decision = await store.settleSubscriptionCharge({ storeId: input.storeId, chargeId: decision.charge.id, notice: notice! });
    await store.emitChargeEvents({ storeId: input.storeId, chargeId: decision.charge.id });
  }
  phase = 'settled';
  await condition(allHandlersFinished);
  return decision;
}
