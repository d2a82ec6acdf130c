// The checkout session workflow's activities: each one a call into services/checkout-completion.ts,
// services/checkout-subscriptions.ts or the provider.
import type { TransactionState } from '../adapters/provider/types';
import type { CheckoutSessionObject } from '../api/schemas/checkout-session';
import {
  completeCheckoutSession,
  emitCheckoutOrderEvent,
  emitCheckoutSessionEvent,
  markCheckoutSessionExpired,
  recordCheckoutDecline,
  sessionOrFail,
  settleCheckoutSession,
  type CompleteSessionInput,
  type SettleSessionInput,
} from '../services/checkout-completion';
import { createSubscriptionForCheckout } from '../services/checkout-subscriptions';
import type { SubscriptionDeps } from '../services/subscriptions';

export function createCheckoutActivities(deps: SubscriptionDeps) {
  return {
    /** open -> complete with its order (pending for PIX and review); repeatable. */
    async completeCheckoutSession(input: CompleteSessionInput): Promise<{ order: string | null; session: CheckoutSessionObject }> {
      return completeCheckoutSession(deps, input);
    },
    /** open -> expired; repeatable. */
    async markCheckoutSessionExpired(input: { storeId: string; sessionId: string }): Promise<CheckoutSessionObject> {
      return markCheckoutSessionExpired(deps, input);
    },
    /** A declined attempt: shown on the page, the session stays open. */
    async recordCheckoutDecline(input: { storeId: string; sessionId: string; error: { code: string; message: string } }): Promise<void> {
      return recordCheckoutDecline(deps, input);
    },
    /** complete/pending -> paid or unpaid, and its order with it; repeatable. */
    async settleCheckoutSession(input: SettleSessionInput): Promise<CheckoutSessionObject> {
      return settleCheckoutSession(deps, input);
    },
    /** One event per session move, once however often this is retried. */
    async emitCheckoutSessionEvent(input: { storeId: string; sessionId: string; type: string; legacyType: string | null }): Promise<void> {
      return emitCheckoutSessionEvent(deps, input);
    },
    /** invoice.paid / invoice.payment_failed for the checkout's order, once. */
    async emitCheckoutOrderEvent(input: { storeId: string; orderId: string }): Promise<void> {
      return emitCheckoutOrderEvent(deps, input);
    },
    /** The provider's view of a pending transaction (a lost notice, or a PIX past its validity). */
    async checkCheckoutTransaction(input: { storeId: string; transactionId: string }): Promise<TransactionState | null> {
      return (await deps.provider.getTransaction(input))?.state ?? null;
    },
    /** The paid recurring purchase becomes a subscription (its own workflow starts); returns sub_. */
    async createCheckoutSubscription(input: { storeId: string; sessionId: string }): Promise<string | null> {
      return createSubscriptionForCheckout(deps, await sessionOrFail(deps, input.storeId, input.sessionId));
    },
  };
}
