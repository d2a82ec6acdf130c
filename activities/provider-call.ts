// What a money-moving activity hands its provider call: its cancellation (a try given up stops) and
// whether an earlier try of it may have reached the provider (then the key is looked up first).
import { Context } from '@temporalio/activity';
import type { ProviderCall } from '../services/provider/charge-once';

/**
 * A local try that starts this long after its charge was asked for looks the key up first. A worker
 * dying mid-charge loses the workflow task, and the survivor's local attempt starts again at 1: a
 * repeat within this bound is safe under the key alone (providers keep keys for hours: Stripe 24 h),
 * a later one may follow a capture the provider has forgotten the key of.
 */
export const LOCAL_TRY_LOOKS_UP_AFTER_MS = 60_000;

/** `askedAtMs`: when the charge was asked for (real time), for a local try's "may be a repeat". */
export function providerCall(askedAtMs?: number): ProviderCall {
  const { cancellationSignal, info } = Context.current();
  const late = info.isLocal && askedAtMs !== undefined && Date.now() - askedAtMs > LOCAL_TRY_LOOKS_UP_AFTER_MS;
  return { signal: cancellationSignal, retry: info.attempt > 1 || late };
}
