// The give-back workflow's activity: services/provider/give-back.ts (refunded under the charge's own key,
// so a retry never refunds twice).
import { giveBackLateCapture, type GiveBackDeps } from '../services/provider/give-back';
import type { GiveBackOutcome, GiveBackWorkflowInput } from '../workflows/give-back/messages';

export function createGiveBackActivities(deps: GiveBackDeps) {
  return {
    /** Keeps a payment an order here holds; else refunds the capture at the provider and records its order refunded (order.refunded once). */
    async giveBackLateCapture(input: GiveBackWorkflowInput): Promise<GiveBackOutcome> {
      return giveBackLateCapture(deps, input);
    },
  };
}
