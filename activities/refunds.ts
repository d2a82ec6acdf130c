// The refund workflow's activities: the provider refund (keyed, looked up by its key on a retry) and its
// lookups through the order's connection, the order's counting and event, the subscription's cancellation.
import type { Client } from '@temporalio/client';
import { connectionFor, type PaymentConnections } from '../adapters/provider';
import type { RefundOutcome } from '../adapters/provider/types';
import type { Database } from '../store/database';
import { lookupRefundByKey, refundOnce } from '../services/refunds/provider';
import { cancelSubscriptionOfRefund, recordRefund, type RecordedRefund } from '../services/refunds/record';
import type { RefundWorkflowInput } from '../workflows/refund/messages';
import { providerCall } from './provider-call';

export function createRefundActivities(deps: PaymentConnections & { db: Database; temporal: Client; taskQueue: string }) {
  const connectionOf = (input: RefundWorkflowInput) => connectionFor(deps, Boolean(input.testClock));
  return {
    /** The refund at the provider under its key; a retry asks the provider by the key first. */
    async refundAtProvider(input: RefundWorkflowInput): Promise<RefundOutcome> {
      return refundOnce(connectionOf(input), input, providerCall());
    },
    /** The refund as the provider holds it now (a pending one asked again); null when none reached it. */
    async lookupRefundByKey(input: RefundWorkflowInput): Promise<RefundOutcome | null> {
      return lookupRefundByKey(connectionOf(input), input);
    },
    /** The refund counted on its order and its event emitted, each once. */
    async recordRefund(input: { input: RefundWorkflowInput; providerRefundId: string | null }): Promise<RecordedRefund> {
      return recordRefund(deps, input);
    },
    /** The subscription the merchant asked to cancel with the refund. */
    async cancelSubscriptionOfRefund(input: RefundWorkflowInput): Promise<boolean> {
      return cancelSubscriptionOfRefund(deps, input);
    },
  };
}
