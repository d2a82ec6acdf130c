// The one way a provider's notice reaches the workflow waiting for it (a charge, a subscription's
// renewal in review, a checkout session): the `providerSettled` signal to the notice's notifyRef,
// the workflow id the payment was made under.
import type { Client } from '@temporalio/client';
import type { ProviderNotice } from '../../adapters/provider/types';
import { providerSettledSignal } from '../../workflows/checkout-session/messages';

/** Signals the waiting workflow; false when the notice names none. */
export async function deliverProviderNotice(deps: { temporal: Client }, notice: ProviderNotice): Promise<boolean> {
  if (!notice.notifyRef) return false;
  await deps.temporal.workflow.getHandle(notice.notifyRef).signal(providerSettledSignal, notice);
  return true;
}
