// The charge workflow's operator interface: its id (`charge/<store>/<key>`), the `outcome` update
// every request under the key waits on, the provider's notice signal and the `state` query.
import type { VersionedInput } from '../lib/input-version';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ProviderNotice } from '../../adapters/provider/types';
import type { ChargeOutcomeKind, ChargeSource } from '../../store/subscription-charges';
import type { SubscriptionChargeObject } from '../../resources/subscription-charge';
import type { ChargeLine } from '../../domain/charges';
import type { Metadata } from '../../domain/metadata';
import type { OneOffRefusalCode } from '../../domain/subscriptions';

export const chargeWorkflowId = (storeId: string, key: string) => `charge/${storeId}/${key}`;

export interface ChargeWorkflowInput extends VersionedInput {
  /** sch_ id chosen by whoever started the run (later requests under the key attach to it). */
  chargeId: string;
  storeId: string;
  subscriptionId: string;
  customerId: string | null;
  /** What the charge and its order need from the subscription, as it was when the charge was asked for. */
  subscription: {
    paymentMethodId: string | null;
    customerEmail: string | null;
    offerId: string;
    productId: string;
    clientReferenceId: string | null;
  };
  key: string;
  /** Request (method, path, body) hash: a different request under the key is refused. */
  fingerprint: string;
  amount: number;
  currency: string;
  description: string | null;
  lines: ChargeLine[];
  metadata: Metadata;
  source: ChargeSource;
  billingReason: string;
  /** Milliseconds: the charge's `created` and the base of its derived order id. */
  createdAt: number;
  requestId: string | null;
  idempotencyKey: string | null;
  /**
   * The bound of this charge (minor units: the store's or the currency's default, within the connection's
   * maximum when the starter knew it); the charge's activity refuses an amount above it, or above its
   * connection's maximum, before any provider request. Absent in runs started before it existed.
   */
  maxAmount?: number;
  /**
   * The test clock of the subscription's customer, kept here because the subscription may be deleted
   * with its clock before a review settles: the charge and its lookups go only to a test connection.
   */
  testClock?: string | null;
  /** Rounds whose outcome stayed unknown in earlier runs of this charge (a run continued as new); absent otherwise. */
  unknownRounds?: number;
  /** An earlier run of this charge answered a request with the charge pending (recordUndecidedCharge). */
  answeredUndecided?: boolean;
}

export interface ChargeDecision {
  charge: SubscriptionChargeObject;
  outcome: ChargeOutcomeKind;
}

export type ChargeAnswer =
  | { kind: 'charge'; charge: SubscriptionChargeObject; outcome: ChargeOutcomeKind; replayed: boolean; originalRequestId: string | null }
  | { kind: 'reused' }
  /** The subscription's own workflow refused before the provider (e.g. paused): the API answers 400 with this code. */
  | { kind: 'refused'; code: OneOffRefusalCode; message: string };

export interface ChargeOutcomeRequest {
  fingerprint: string;
  requestId: string | null;
  /** Past this wait the answer is the charge as it stands (pending, outcome `undecided`); no limit when absent. */
  answerUndecidedAfterMs?: number;
}

/** Waits for the provider's answer (approved, declined, refused, or left in review), up to the caller's wait, and returns the charge. */
export const chargeOutcomeUpdate = defineUpdate<ChargeAnswer, [ChargeOutcomeRequest]>('outcome');

/** The provider settled a charge left in review. */
export const chargeProviderSettledSignal = defineSignal<[ProviderNotice]>('providerSettled');

export interface ChargeWorkflowState {
  phase: 'charging' | 'awaiting_settlement' | 'settled';
  charge: SubscriptionChargeObject | null;
  outcome: ChargeOutcomeKind | null;
  /** The provider step's outcome is still unknown: rounds tried, the last failure, when it is asked again (ms). */
  problem?: { rounds: number; message: string; retry_at: number } | null;
}

export const chargeStateQuery = defineQuery<ChargeWorkflowState>('state');
