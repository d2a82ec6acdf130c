// A retried unattended charge asks the provider what its key already did before asking again: a
// provider keeps idempotency keys for a while only (Stripe: 24 hours) while our retries never give up,
// so after that a keyed repeat alone would charge the card a second time (DESIGN.md, principle 6).
import type { ChargeOutcome, ChargeSavedCardInput, PaymentProvider } from '../../adapters/provider/types';

/** How the activity calls: its cancellation, and whether an earlier try of it may have reached the provider. */
export interface ProviderCall {
  signal?: AbortSignal;
  retry?: boolean;
}

/** Charges the saved card under the key once: a retry returns what an earlier try's request got, if any did. */
export async function chargeSavedCardOnce(provider: PaymentProvider, input: ChargeSavedCardInput, call: ProviderCall): Promise<ChargeOutcome> {
  if (call.retry) {
    const earlier = await provider.lookupCharge({ storeId: input.storeId, idempotencyKey: input.idempotencyKey });
    if (earlier) return earlier.outcome;
  }
  return provider.chargeSavedCard({ ...input, signal: call.signal });
}
