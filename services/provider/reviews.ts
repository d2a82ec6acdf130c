// What became of a payment left in review when its notice does not come: the provider is asked by
// the payment's key, and its record is read as the notice it would have sent; past the review window
// the payment is voided so it can never be captured later. Used by the charge and subscription workflows.
import type { PaymentProvider, ProviderNotice, RefundResult, TransactionState } from '../../adapters/provider/types';

export interface ReviewLookupInput {
  storeId: string;
  /** The key the payment was charged under. */
  idempotencyKey: string;
  transactionId: string;
  notifyRef: string | null;
  /** The test clock of the payment's customer: it was made through the test connection, so it is asked there. */
  testClock?: string | null;
}

/** Paid or refused once the provider has decided; null while it still reviews (or does not know the key). */
function decidedStatus(state: TransactionState | null): 'paid' | 'refused' | null {
  if (state === 'paid' || state === 'approved') return 'paid';
  if (state === 'refused' || state === 'declined' || state === 'voided' || state === 'expired' || state === 'refunded') return 'refused';
  return null;
}

export async function noticeByLookup(provider: PaymentProvider, input: ReviewLookupInput): Promise<ProviderNotice | null> {
  const found = await provider.lookupCharge({ storeId: input.storeId, idempotencyKey: input.idempotencyKey });
  const status = decidedStatus(found?.state ?? null);
  if (!found || !status) return null;
  return {
    transactionId: input.transactionId,
    status,
    code: status === 'refused' ? 'card_declined' : null,
    message: status === 'refused' ? 'The provider refused the payment after review.' : null,
    notifyRef: input.notifyRef,
    settledAt: found.settledAt ?? Math.floor(Date.now() / 1000),
  };
}

/** The review window ran out: the payment is voided at the provider (a second call answers the same). */
export function voidReview(provider: PaymentProvider, input: { storeId: string; idempotencyKey: string }): Promise<RefundResult> {
  return provider.refundCharge({ storeId: input.storeId, chargeKey: input.idempotencyKey });
}
