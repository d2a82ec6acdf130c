// What an operator sees of a running workflow in the Web UI: its business status as the BillingStatus
// search attribute (so "which subscriptions are past due" is a query) and its current step as the
// workflow's current details (a line such as "attempt 4 of 8, next at ...").
import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { hasChange, type VersionedInput } from './input-version';
import { BillingStatusKey } from '../search-attributes';

/** Publishes the status (only when it changed: each upsert is a history event) and the step. */
export function showProgress(status: string, step: string, input?: VersionedInput): void {
  setCurrentDetails(step);
  // Histories recorded before the attribute existed have no upsert here.
  if (!hasChange(input, 2, 'billing-status-attribute')) return;
  showStatus(status);
}

function showStatus(status: string): void {
  if (shownStatus() === status) return;
  upsertSearchAttributes([{ key: BillingStatusKey, value: status }]);
}

export function shownStatus(): string | undefined {
  return workflowInfo().typedSearchAttributes.get(BillingStatusKey);
}

/** An ISO time without milliseconds, for step lines. */
export function at(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export { plainMoney as money } from '../../domain/pricing';
