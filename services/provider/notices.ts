// The one way a provider's notice reaches the workflow waiting for it (a charge, a subscription's
// renewal in review, a checkout session): the `providerSettled` signal to the notice's notifyRef,
// the workflow id the payment was made under.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { ProviderNotice } from '../../adapters/provider/types';
import { providerSettledSignal } from '../../workflows/checkout-session/messages';
import { startGiveBack } from './give-back';

/** Signals the waiting workflow; false when the notice names none. */
export async function deliverProviderNotice(deps: { temporal: Client }, notice: ProviderNotice): Promise<boolean> {
  if (!notice.notifyRef) return false;
  await deps.temporal.workflow.getHandle(notice.notifyRef).signal(providerSettledSignal, notice);
  return true;
}

/**
 * The test connection's notices (the hosted page's buttons, the admin CLI's `provider settle`): signaled to
 * the waiting workflow; when it has ended, a paid notice starts the give-back workflow instead of being dropped.
 */
export async function deliverOrGiveBack(
  deps: { temporal: Client; taskQueue: string },
  notice: ProviderNotice,
  storeId: string,
  testObject: boolean,
): Promise<boolean> {
  try {
    return await deliverProviderNotice(deps, notice);
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    return (await startGiveBack(deps, notice, storeId, testObject)) !== null;
  }
}
