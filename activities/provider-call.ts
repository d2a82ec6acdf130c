// What a money-moving activity hands its provider call: its cancellation (a try given up stops) and
// whether an earlier try of it may have reached the provider (then the key is looked up first).
import { Context } from '@temporalio/activity';
import type { ProviderCall } from '../services/provider/charge-once';

export function providerCall(): ProviderCall {
  const { cancellationSignal, info } = Context.current();
  return { signal: cancellationSignal, retry: info.attempt > 1 };
}
