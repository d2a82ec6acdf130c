// A refund at the provider, once under its key: a retried activity (its earlier try may have reached the
// provider and lost the answer) asks the provider by the refund key first and returns what it holds,
// so a timeout or a 5xx never refunds twice, and never counts as "nothing refunded" (DESIGN.md, principle 6).
import type { PaymentProvider, RefundOutcome } from '../../adapters/provider/types';
import type { ProviderCall } from '../provider/charge-once';
import { refundKeyOf, type RefundWorkflowInput } from '../../workflows/refund/messages';

const keyedRequest = (input: RefundWorkflowInput) => ({
  storeId: input.storeId,
  transactionId: input.transactionId,
  refundKey: refundKeyOf(input.refundId),
  chargeKey: input.chargeKey ?? null,
});

/** The refund made under the key, as the provider holds it now; null when none reached it. */
export function lookupRefundByKey(provider: PaymentProvider, input: RefundWorkflowInput): Promise<RefundOutcome | null> {
  return provider.lookupRefund(keyedRequest(input));
}

/** Refunds once under the key: a retry returns what an earlier try's request got, if any did. */
export async function refundOnce(provider: PaymentProvider, input: RefundWorkflowInput, call: ProviderCall): Promise<RefundOutcome> {
  if (call.retry) {
    const earlier = await lookupRefundByKey(provider, input);
    if (earlier) return earlier;
  }
  return provider.refund({ ...keyedRequest(input), amount: input.amount, reason: input.reason, signal: call.signal });
}
