// Refunds through Stripe, whole or partial, each under our own refund key: POST /v1/refunds with the
// amount, Stripe's Idempotency-Key from the key (scoped by store) and metadata.refund_key/store_id, so
// a refund whose answer was lost is found again by listing the intent's refunds (never assumed).
import Stripe from 'stripe';
import type { RefundInput, RefundOutcome } from '../types';
import { isRefusal, requestOptions, stripeIdempotencyKey, type StripeContext } from './context';

/** Refunds listed per page when looking one up by key. */
export const REFUND_LOOKUP_PAGE_SIZE = 100;
/** The listing's bound: past it, a key not found is unknown (thrown), never "no refund". */
export const REFUND_LOOKUP_PAGES = 3;

/** Stripe's own reasons; any other reason travels in metadata only. */
const STRIPE_REASONS = ['duplicate', 'fraudulent', 'requested_by_customer'] as const;
type StripeReason = (typeof STRIPE_REASONS)[number];
const stripeReasonOf = (reason: string | null): StripeReason | null =>
  (STRIPE_REASONS as readonly string[]).includes(reason ?? '') ? (reason as StripeReason) : null;

/** Stripe's metadata values are at most 500 characters. */
const METADATA_VALUE_MAX = 500;

/** A Stripe refund as the provider interface's outcome. */
export function refundOutcomeOf(refund: Stripe.Refund): RefundOutcome {
  if (refund.status === 'succeeded') return { status: 'refunded', refundId: refund.id, amount: refund.amount };
  if (refund.status === 'failed' || refund.status === 'canceled') {
    const code = refund.failure_reason ?? refund.status;
    return {
      status: 'failed',
      refundId: refund.id,
      amount: refund.amount,
      code,
      message: `Stripe's refund ${refund.id} ${refund.status} (${code}).`,
    };
  }
  // pending, requires_action: on its way; asked again by key.
  return { status: 'pending', refundId: refund.id, amount: refund.amount };
}

export async function createRefund(ctx: StripeContext, input: RefundInput): Promise<RefundOutcome> {
  const reason = stripeReasonOf(input.reason);
  const metadata: Record<string, string> = { refund_key: input.refundKey, store_id: input.storeId };
  if (input.reason) metadata.reason = input.reason.slice(0, METADATA_VALUE_MAX);
  const params: Stripe.RefundCreateParams = { payment_intent: input.transactionId, amount: input.amount, ...(reason ? { reason } : {}), metadata };
  try {
    const options = await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, input.refundKey));
    return refundOutcomeOf(await ctx.stripe.refunds.create(params, options));
  } catch (error) {
    // Stripe refused the request itself (over the amount left, a charge disputed): nothing went back.
    if (isRefusal(error))
      return { status: 'failed', refundId: null, amount: input.amount, code: error.code || 'provider_error', message: error.message };
    throw error;
  }
}

const ours = (refund: Stripe.Refund, storeId: string, key: string) => refund.metadata?.refund_key === key && refund.metadata?.store_id === storeId;

/** The refund made under `refundKey`, read from the intent's refunds (bounded pages); a listing that cannot be complete throws. */
export async function findRefundByKey(
  ctx: StripeContext,
  input: { storeId: string; transactionId: string; refundKey: string },
): Promise<RefundOutcome | null> {
  const options = await requestOptions(ctx, input.storeId);
  let after: string | undefined;
  for (let page = 0; page < REFUND_LOOKUP_PAGES; page++) {
    const params: Stripe.RefundListParams = {
      payment_intent: input.transactionId,
      limit: REFUND_LOOKUP_PAGE_SIZE,
      ...(after ? { starting_after: after } : {}),
    };
    let listed: Stripe.ApiList<Stripe.Refund>;
    try {
      listed = await ctx.stripe.refunds.list(params, options);
    } catch (error) {
      // No such intent on this account: nothing was ever refunded under the key there.
      if (error instanceof Stripe.errors.StripeInvalidRequestError && error.code === 'resource_missing') return null;
      throw error;
    }
    const found = listed.data.find((refund) => ours(refund, input.storeId, input.refundKey));
    if (found) return refundOutcomeOf(found);
    if (!listed.has_more || listed.data.length === 0) return null;
    after = listed.data[listed.data.length - 1].id;
  }
  throw new Error(
    `the refunds of ${input.transactionId} are more than ${REFUND_LOOKUP_PAGES * REFUND_LOOKUP_PAGE_SIZE}: refund ${input.refundKey} cannot be told`,
  );
}
