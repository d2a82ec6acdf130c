// The usage-period workflow's operator interface: its id (`usage/<sub_id>`), the `recompute` signal
// (ingestion sends it when a batch may have crossed the billing threshold; item changes send it
// too) and the `state` query that shows the open period. Imported by the API, the activities and
// the workflow.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { UsagePeriodObject } from '../../resources/usage-period';
import type { CloseReason } from '../../domain/usage-periods';

export const usageWorkflowId = (subscriptionId: string) => `usage/${subscriptionId}`;

export interface UsageWorkflowInput {
  storeId: string;
  subscriptionId: string;
  /** The subscription's test clock: its time, not the real one. */
  testClock?: string | null;
}

/** Recompute the open period now (and close it if the threshold is reached). */
export const recomputeSignal = defineSignal('recompute');

export interface UsageWorkflowState {
  subscription: string;
  phase: 'opening' | 'waiting' | 'open' | 'closing' | 'charging' | 'finished';
  /** Why no period is open (waiting or finished): not_chargeable, no_items, ended, no_subscription. */
  reason: string | null;
  /** The open period as of the last recompute. */
  open: UsagePeriodObject | null;
  last_closed: { id: string; close_reason: CloseReason; amount_total: number; charge: string | null } | null;
}

export const usageStateQuery = defineQuery<UsageWorkflowState>('state');
