// The subscription workflow's operator interface: its id, its updates (every action on a
// subscription is one, so concurrent actions are serialized and the caller gets the updated object),
// the provider notice signal and the `state` query. Imported by the API, the admin CLI and the workflow.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ProviderNotice } from '../../adapters/provider/types';
import type { SubscriptionObject } from '../../resources/subscription';
import type { EventRequest } from '../../store/events';
import type { ChargeDecision, ChargeWorkflowInput } from '../charge/messages';
import type { CancellationReason, CancellationSource, NextStep, SubscriptionLife, SubscriptionPaymentMethod } from '../../domain/subscriptions';

export const subscriptionWorkflowId = (subscriptionId: string) => `subscription/${subscriptionId}`;

export interface SubscriptionWorkflowInput {
  storeId: string;
  subscriptionId: string;
  /** The test clock the subscription's customer is attached to: its time, not the real one. */
  testClock?: string | null;
  /** A cycle charge in review carried from the run that continued as new while waiting for it. */
  review?: CarriedReview | null;
}

/** A renewal or reactivation charge in review, as one run hands it to the next: the next run waits on. */
export interface CarriedReview {
  transactionId: string;
  orderId: string;
  /** Unix seconds: the period the renewal pays for starts here (a reactivation's starts when paid). */
  periodStart: number;
  reactivation: boolean;
  /** The provider key it was charged under: what the provider is asked by. */
  key: string;
  /** Workflow time (ms) the review began: its window counts from here. */
  startedMs: number;
  /** Workflow time (ms) the provider was next to be asked by key. */
  nextCheckMs: number;
  /** Its notice, when the old run received it while draining (a notice arriving later reaches the new run). */
  notice: ProviderNotice | null;
}

/** Who asked (recorded on the events the action emits). */
interface WithRequest {
  request?: EventRequest | null;
}

export interface PauseInput extends WithRequest {
  reason?: string | null;
}
export interface CancelInput extends WithRequest {
  reason?: CancellationReason | null;
  comment?: string | null;
  /** Who cancels: the API and the CLI are the dashboard; the portal says so. */
  source?: CancellationSource;
}
export interface ChangeOfferInput extends WithRequest {
  offer: string;
}

/** Failure type of an action that does not fit the subscription's state: the API answers 400 provider_error. */
export const ACTION_REFUSED = 'provider_error';

export const pauseUpdate = defineUpdate<SubscriptionObject, [PauseInput]>('pause');
export const resumeUpdate = defineUpdate<SubscriptionObject, [WithRequest]>('resume');
/** Cancel now (DELETE /subscriptions/{id}); source dashboard. */
export const cancelUpdate = defineUpdate<SubscriptionObject, [CancelInput]>('cancel');
export const reactivateUpdate = defineUpdate<SubscriptionObject, [WithRequest]>('reactivate');
export const changeOfferUpdate = defineUpdate<SubscriptionObject, [ChangeOfferInput]>('change_offer');
/** cancel_at_period_end true (POST /subscriptions/{id}). */
export const scheduleCancellationUpdate = defineUpdate<SubscriptionObject, [CancelInput]>('schedule_cancellation');

/** A new saved card (customer portal): customer.subscription.updated; a past_due one retries at once. */
export const changePaymentMethodUpdate = defineUpdate<SubscriptionObject, [{ payment_method: SubscriptionPaymentMethod } & WithRequest]>(
  'change_payment_method',
);

/**
 * A one-off charge (API, dashboard), asked by its charge workflow: decided under the subscription's
 * mutex (so a pause and a charge never both win) and charged there; refusals fail with the spec's code.
 */
export const oneOffChargeUpdate = defineUpdate<ChargeDecision, [ChargeWorkflowInput]>('charge');

/** The provider settled a renewal left in review. */
export const subscriptionProviderSettledSignal = defineSignal<[ProviderNotice]>('providerSettled');

export interface SubscriptionWorkflowState {
  /** False until the run has read the document. */
  loaded: boolean;
  life: SubscriptionLife;
  version: number;
  next: NextStep;
  /** A renewal charge waiting for the provider's notice. */
  awaitingSettlement: { transactionId: string; orderId: string } | null;
  object: SubscriptionObject;
}

export const subscriptionStateQuery = defineQuery<SubscriptionWorkflowState>('state');
