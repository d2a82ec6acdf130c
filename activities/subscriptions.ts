// The subscription workflow's activities: each one a call into services/subscriptions/life.ts.
import { providerCall } from './provider-call';
import type { ProviderNotice } from '../adapters/provider/types';
import type { SubscriptionWorkflowInput } from '../workflows/subscription/messages';
import {
  applySubscriptionChange,
  chargeSubscriptionCycle,
  closeRenewalAuthentication,
  loadSubscriptionState,
  lookupCycleCharge,
  offerTerms,
  payConfirmedRenewal,
  refundSubscriptionCycle,
  settleSubscriptionCycleOrder,
  type CycleChargeInput,
  type CycleChargeRef,
  type CycleChargeResult,
  type LoadedSubscription,
  type OfferTermsResult,
  type RenewalAuthenticationRef,
  type SubscriptionChangeInput,
  type SubscriptionLifeDeps,
} from '../services/subscriptions/life';

export type { CycleChargeInput, CycleChargeResult, LoadedSubscription, OfferTermsResult } from '../services/subscriptions/life';

export function createSubscriptionActivities(deps: SubscriptionLifeDeps) {
  return {
    async loadSubscription(input: SubscriptionWorkflowInput): Promise<LoadedSubscription | null> {
      return loadSubscriptionState(deps.db, input);
    },
    /** Writes a lifecycle change (compare-and-set on version) and emits its events, each once. */
    async applySubscriptionChange(input: SubscriptionChangeInput): Promise<LoadedSubscription> {
      return applySubscriptionChange(deps, input);
    },
    /** Charges one cycle on the saved card and records its renewal order with its event. */
    async chargeSubscriptionCycle(input: CycleChargeInput): Promise<CycleChargeResult> {
      return chargeSubscriptionCycle(deps, input, providerCall());
    },
    /** A cycle charge in review was settled by the provider's notice: the order becomes paid or failed. */
    async settleSubscriptionCycleOrder(input: { storeId: string; orderId: string; notice: ProviderNotice }): Promise<'paid' | 'failed'> {
      return settleSubscriptionCycleOrder(deps, input);
    },
    /** What the provider holds under a cycle charge's key (before a new attempt at the cycle). */
    async lookupCycleCharge(input: CycleChargeRef): Promise<'refused' | 'taken' | null> {
      return lookupCycleCharge(deps, input);
    },
    /** A renewal paid after the subscription ended: refunded at the provider, order refunded, order.refunded. */
    async refundSubscriptionCycle(input: {
      storeId: string;
      subscriptionId: string;
      orderId: string;
      key: string;
      testClock?: string | null;
    }): Promise<void> {
      return refundSubscriptionCycle(deps, input);
    },
    /** Fences the renewal attempt the buyer was asked to confirm (3-D Secure): closed, or succeeded (the buyer paid it). */
    async closeRenewalAuthentication(input: RenewalAuthenticationRef): Promise<'closed' | 'succeeded'> {
      return closeRenewalAuthentication(deps, input);
    },
    /** The order of the renewal attempt the buyer confirmed becomes paid (invoice.paid once). */
    async payConfirmedRenewal(input: { storeId: string; orderId: string; transactionId: string; paidAt: number }): Promise<boolean> {
      return payConfirmedRenewal(deps, input);
    },
    /** The terms a subscription in `currency` would get from an offer (change_offer, reactivate). */
    async offerTerms(input: { storeId: string; offerId: string; currency: string }): Promise<OfferTermsResult> {
      return offerTerms(deps.db, input);
    },
  };
}
