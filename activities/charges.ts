// The charge workflow's activities: each one a call into services/charges/settlement.ts, the provider's
// review lookups (services/provider/reviews.ts) or the subscription's workflow (one-off charges).
import { providerCall } from './provider-call';
import type { ProviderNotice, RefundResult } from '../adapters/provider/types';
import { connectionFor } from '../adapters/provider';
import { noticeByLookup, voidReview, type ReviewLookupInput } from '../services/provider/reviews';
import { subscriptionClient } from '../services/subscriptions/client';
import { findSubscription } from '../store/subscriptions';
import type { Client } from '@temporalio/client';
import type { ChargeDecision, ChargeWorkflowInput } from '../workflows/charge/messages';
import {
  emitChargeEvents,
  executeSubscriptionCharge,
  recordUndecidedCharge,
  refuseUndecidedCharge,
  settleSubscriptionCharge,
  type ChargeSettlementDeps,
} from '../services/charges/settlement';

export function createChargeActivities(deps: ChargeSettlementDeps & { temporal: Client; taskQueue: string }) {
  return {
    /** The provider charge, its order and the charge document; every step keyed, so retries complete the same charge. */
    async executeSubscriptionCharge(input: ChargeWorkflowInput): Promise<ChargeDecision> {
      return executeSubscriptionCharge(deps, input, providerCall(input.createdAt));
    },
    /** The charge shown pending to a request answered before the provider decided; a decision already written wins. */
    async recordUndecidedCharge(input: ChargeWorkflowInput): Promise<ChargeDecision> {
      return recordUndecidedCharge(deps, input);
    },
    /** A charge shown pending, then refused by its subscription: failed with the refusal's code. */
    async refuseUndecidedCharge(input: { charge: ChargeWorkflowInput; code: string; message: string }): Promise<ChargeDecision> {
      return refuseUndecidedCharge(deps, input);
    },
    /** The provider's notice for a charge in review: charge and order become succeeded/paid or failed. */
    async settleSubscriptionCharge(input: { storeId: string; chargeId: string; notice: ProviderNotice }): Promise<ChargeDecision> {
      return settleSubscriptionCharge(deps, input);
    },
    /** A one-off charge through the subscription's workflow, which refuses it or charges it under its mutex. */
    async chargeThroughSubscription(input: ChargeWorkflowInput): Promise<ChargeDecision> {
      // A retry after a dead worker attaches to the same update (its id is the key).
      const ref = { _id: input.subscriptionId, store_id: input.storeId, customer: input.customerId };
      // A lost workflow is restarted from the document: a subscription on a test clock keeps its clock.
      return subscriptionClient(deps.temporal, deps.taskQueue).charge(
        input,
        async () => (await findSubscription(deps.db, input.storeId, input.subscriptionId)) ?? ref,
      );
    },
    /** A review's notice as the provider's record under its key says (null: still in review). */
    async lookupReview(input: ReviewLookupInput): Promise<ProviderNotice | null> {
      return noticeByLookup(connectionFor(deps, Boolean(input.testClock)), input);
    },
    /** The review window ran out: void the payment at the provider. */
    async voidReview(input: { storeId: string; idempotencyKey: string; testClock?: string | null }): Promise<RefundResult> {
      return voidReview(connectionFor(deps, Boolean(input.testClock)), input);
    },
    /** The events of a settled charge, each once; nothing while pending. */
    async emitChargeEvents(input: { storeId: string; chargeId: string }): Promise<void> {
      return emitChargeEvents(deps, input);
    },
  };
}
