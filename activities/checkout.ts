// The checkout session workflow's activities: each one a call into services/checkout/attempts.ts (the
// provider, under the attempt's key), services/checkout/completion.ts or services/checkout/subscriptions.ts.
import { Context } from '@temporalio/activity';
import type { CancelPendingResult, RefundResult } from '../adapters/provider/types';
import { connectionFor } from '../adapters/provider';
import type { CheckoutSessionObject } from '../resources/checkout-session';
import type { CustomerDoc } from '../store/collections';
import type { AttemptResult } from '../workflows/checkout-session/messages';
import {
  cancelPendingAttempt,
  chargeCheckoutAttempt,
  lookupCheckoutAttempt,
  readCheckoutSetup,
  refundCheckoutAttempt,
  type AttemptLookup,
  type ChargeAttemptInput,
  type LookupAttemptInput,
} from '../services/checkout/attempts';
import {
  completeCheckoutSession,
  emitCheckoutOrderEvent,
  emitCheckoutSessionEvent,
  markCheckoutSessionExpired,
  recordCheckoutAction,
  recordCheckoutDecline,
  sessionOrFail,
  settleCheckoutSession,
  writeCheckoutBuyer,
  type CompleteSessionInput,
  type SettleSessionInput,
} from '../services/checkout/completion';
import { createSubscriptionForCheckout } from '../services/checkout/subscriptions';
import { countCardDecline } from '../services/checkout/card-testing';
import type { SubscriptionDeps } from '../services/subscriptions/subscriptions';

export function createCheckoutActivities(deps: SubscriptionDeps) {
  /** The connection of a session's attempt: a test clock's session only ever the test one. */
  const attemptDeps = (input: { testClock?: string | null }) => ({ provider: connectionFor(deps, Boolean(input.testClock)) });
  return {
    /** One payment attempt at the provider under its key (a retry gets the first answer); a timed-out try is stopped, not left running. */
    async chargeCheckoutAttempt(input: ChargeAttemptInput): Promise<AttemptResult> {
      return chargeCheckoutAttempt(attemptDeps(input), input, Context.current().cancellationSignal);
    },
    /** What the provider holds under the attempt's key; null when it never received it. */
    async lookupCheckoutAttempt(input: LookupAttemptInput): Promise<AttemptLookup | null> {
      return lookupCheckoutAttempt(attemptDeps(input), input);
    },
    /** Voids or refunds the attempt's payment (an approval on a closed session, a review past its window). */
    async refundCheckoutAttempt(input: { storeId: string; key: string; testClock?: string | null }): Promise<RefundResult> {
      return refundCheckoutAttempt(attemptDeps(input), input);
    },
    /**
     * Cancels a 3-D Secure left waiting (keyed), or answers `succeeded` when the provider took it first; throws
     * while unknown. Answers the fence's status alone: the shape its recorded histories hold.
     */
    async cancelCheckoutAction(input: {
      storeId: string;
      key: string;
      transactionId?: string | null;
      testClock?: string | null;
    }): Promise<CancelPendingResult['status']> {
      return (await cancelPendingAttempt(attemptDeps(input), { ...input, transactionId: input.transactionId ?? null })).status;
    },
    /** A trial's card setup after the buyer's 3-D Secure: the card it saved (or its decline); throws while unsettled. */
    async readCheckoutSetup(input: { storeId: string; setupId: string; testClock?: string | null }): Promise<AttemptResult> {
      return readCheckoutSetup(attemptDeps(input), input);
    },
    /** The attempt waits for the buyer's 3-D Secure: shown on the open session's page. */
    async recordCheckoutAction(input: { storeId: string; sessionId: string; transactionId: string; key: string }): Promise<void> {
      return recordCheckoutAction(deps, input);
    },
    /** The fence of a pending PIX at its expiry: canceled at the provider (keyed), or found paid; a provider that did not answer fails it (retried). */
    async cancelPendingCheckoutAttempt(input: {
      storeId: string;
      key: string;
      transactionId: string | null;
      testClock?: string | null;
    }): Promise<CancelPendingResult> {
      return cancelPendingAttempt(attemptDeps(input), input);
    },
    /** The new buyer's customer, written once the payment is taken (customer.created once). */
    async writeCheckoutBuyer(input: { storeId: string; customer: CustomerDoc }): Promise<{ customerId: string; customerEmail: string }> {
      return writeCheckoutBuyer(deps, input);
    },
    /** open -> complete with its order (pending for PIX and review); repeatable. */
    async completeCheckoutSession(input: CompleteSessionInput): Promise<{ order: string | null; session: CheckoutSessionObject }> {
      return completeCheckoutSession(deps, input);
    },
    /** open -> expired; repeatable. */
    async markCheckoutSessionExpired(input: { storeId: string; sessionId: string }): Promise<CheckoutSessionObject> {
      return markCheckoutSessionExpired(deps, input);
    },
    /** A declined attempt: shown on the page, the session stays open. */
    async recordCheckoutDecline(input: {
      storeId: string;
      sessionId: string;
      error: { code: string; message: string };
      cardLocked?: boolean;
    }): Promise<void> {
      await recordCheckoutDecline(deps, input);
      // Counted per offer and store too (card testing through many sessions); a retried activity may count twice, never less.
      await countCardDecline(deps.db, input.storeId, input.sessionId);
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
    /** The paid recurring purchase becomes a subscription (its own workflow starts); returns sub_. */
    async createCheckoutSubscription(input: { storeId: string; sessionId: string }): Promise<string | null> {
      return createSubscriptionForCheckout(deps, await sessionOrFail(deps, input.storeId, input.sessionId));
    },
  };
}
