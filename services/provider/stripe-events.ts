// Stripe's events in: a verified event is recorded once by its id, read as a provider notice, and signaled
// to the workflow its PaymentIntent names (the same providerSettled signal the test connection's notices
// use). Delivery is bounded in time: past it (or when Temporal refuses) the caller answers 503 and Stripe
// sends the event again, which delivers the recorded notice; a payment whose workflow already ended is
// handed to the give-back workflow (services/provider/give-back.ts), never dropped.
// A refund made at Stripe of a settled payment (whole or partial) is counted on its order once per refund
// through a refund workflow (services/refunds/provider-made.ts), signalling nothing; a chargeback marks
// its order charged_back (services/provider/disputes.ts).
// An event is believed only from where the payment was made: an event of the other mode (test on a live
// connection, or live on a test one) and an event from another account than the one the payment's charge
// key is pinned to (store/charge-accounts.ts; absent `account`: the platform's) are acknowledged, recorded
// as ignored with why, and change nothing.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type Stripe from 'stripe';
import type { Database } from '../../store/database';
import { findProviderEvent, markProviderEventDelivered, recordProviderEvent, type ProviderEventDoc } from '../../store/provider-events';
import {
  isHandledStripeEvent,
  readStripeEvent,
  type ChargeRefund,
  type ChargeRefundsReader,
  type EventReading,
  type IntentReader,
} from '../../adapters/provider/stripe/events';
import type { ProviderNotice } from '../../adapters/provider/types';
import { CAPTURED_ORDER_STATUSES, findOrderByTransaction } from '../../store/orders';
import { countProviderRefunds } from '../refunds/provider-made';
import { findChargeAccount } from '../../store/charge-accounts';
import { findStoreStripeAccount } from '../../store/stores';
import { deliverProviderNotice } from './notices';
import { recordDispute } from './disputes';
import { startGiveBack } from './give-back';

/** How long the endpoint waits for the signal before answering 503 (Stripe expects an answer within seconds). */
export const EVENT_DELIVERY_WAIT_MS = 800;

export interface StripeEventDeps {
  db: Database;
  temporal: Client;
  /** Reads a PaymentIntent's routing at Stripe (charge.refunded, review.closed carry no intent metadata). */
  readIntent: IntentReader;
  /** The connection's mode: an event of the other mode is not ours to act on. */
  livemode: boolean;
  /** Reads a charge's refunds when charge.refunded does not carry them whole. */
  readChargeRefunds?: ChargeRefundsReader;
  deliveryWaitMs?: number;
  /** The task queue refund workflows and order events' deliveries start on. */
  config?: { taskQueue?: string };
}

/**
 * repeat: received before and already settled here; ignored: nothing to deliver (`foreign`: not from where
 * the payment was made, worth a log line); delivered: signaled now.
 */
export type StripeEventResult =
  { status: 'repeat' | 'ignored' | 'delivered'; note: string | null; foreign?: 'livemode' | 'account' } | { status: 'unavailable'; note: string };

const modeOf = (livemode: boolean) => (livemode ? 'live' : 'test');
const accountName = (account: string | null) => account ?? 'the platform account';

/** Why an event of the other mode is ignored; null when its mode is the connection's. */
function modeMismatch(deps: StripeEventDeps, event: Stripe.Event): string | null {
  if (event.livemode === deps.livemode) return null;
  return `a ${modeOf(event.livemode)}-mode event on a ${modeOf(deps.livemode)}-mode connection`;
}

/**
 * Why a notice or a dispute is not believed from the event's account; null when the account is the one the payment's
 * charge key is pinned to (a key charged before pins existed: the store's account now).
 */
async function accountMismatch(db: Database, event: Stripe.Event, reading: EventReading | null): Promise<string | null> {
  if (reading?.kind !== 'notice' && reading?.kind !== 'dispute') return null;
  const from = event.account ?? null;
  if (!reading.storeId || !reading.chargeKey) return `the payment names no store or charge key of ours (event from ${accountName(from)})`;
  const pin = await findChargeAccount(db, reading.storeId, reading.chargeKey);
  const expected = pin ? pin.account : await findStoreStripeAccount(db, reading.storeId);
  if (expected === from) return null;
  return `the event comes from ${accountName(from)}, not from ${accountName(expected)} where the payment was made`;
}

/** An event recorded as ignored for `why` (a repeat answers the same). */
async function ignoreForeign(
  deps: StripeEventDeps,
  event: Stripe.Event,
  why: string,
  intentId: string | null,
  foreign: 'livemode' | 'account',
): Promise<StripeEventResult> {
  const record = await recordProviderEvent(deps.db, eventRecord(event, { kind: 'none', why, intentId }));
  return { status: 'ignored', note: record.note, foreign };
}

function eventRecord(event: Stripe.Event, reading: EventReading | null): ProviderEventDoc {
  const deliver = reading?.kind === 'notice' || reading?.kind === 'dispute';
  return {
    _id: `stripe:${event.id}`,
    provider: 'stripe',
    type: event.type,
    store_id: reading?.kind === 'notice' || reading?.kind === 'dispute' ? reading.storeId : null,
    account: event.account ?? null,
    livemode: event.livemode,
    transaction_id: reading?.kind === 'notice' ? reading.notice.transactionId : (reading?.intentId ?? null),
    notify_ref: reading?.kind === 'notice' ? reading.notice.notifyRef : null,
    status: deliver ? 'delivering' : 'ignored',
    note: reading?.kind === 'none' ? reading.why : reading ? null : `${event.type} is not handled`,
    received_at: new Date(),
    delivered_at: null,
  };
}

/** The notice a recorded event carries (rebuilt from the record, so a repeat delivers what was first read). */
function noticeOf(record: ProviderEventDoc, reading: EventReading | null): ProviderNotice | null {
  return reading?.kind === 'notice' && reading.notice.notifyRef === record.notify_ref ? reading.notice : null;
}

/** Handles one verified event: see the module header. */
export async function receiveStripeEvent(deps: StripeEventDeps, event: Stripe.Event): Promise<StripeEventResult> {
  const id = `stripe:${event.id}`;
  const known = await findProviderEvent(deps.db, id);
  if (known && known.status !== 'delivering') return { status: 'repeat', note: known.note };
  // Before any read: the other mode's intents cannot be read with this connection's key (that read's failure was a 503 forever).
  const otherMode = modeMismatch(deps, event);
  if (otherMode) return ignoreForeign(deps, event, otherMode, null, 'livemode');
  let reading: EventReading | null;
  let otherAccount: string | null;
  try {
    reading = isHandledStripeEvent(event.type) ? await readStripeEvent(event, deps.readIntent) : null;
    otherAccount = await accountMismatch(deps.db, event, reading);
  } catch (error) {
    // The intent could not be read at Stripe (or its pin here): nothing is recorded, so the event's next delivery reads it again.
    return { status: 'unavailable', note: `the payment could not be read: ${(error as Error).message}` };
  }
  if (otherAccount && reading?.kind === 'notice') return ignoreForeign(deps, event, otherAccount, reading.notice.transactionId, 'account');
  if (otherAccount && reading?.kind === 'dispute') return ignoreForeign(deps, event, otherAccount, reading.intentId, 'account');
  const record = known ?? (await recordProviderEvent(deps.db, eventRecord(event, reading)));
  if (record.status !== 'delivering') return { status: 'ignored', note: record.note };
  if (reading?.kind === 'dispute') return disputeOfOrder(deps, record, reading);
  const notice = noticeOf(record, reading);
  if (!notice) return { status: 'ignored', note: 'the event no longer reads as a notice' };
  if (reading?.kind === 'notice' && reading.refund) {
    const recorded = await refundOfSettledOrder(deps, record, reading.storeId, notice.transactionId, reading.refund);
    if (recorded) return recorded;
  }
  return deliverWithin(deps, record, notice);
}

const taskQueueOf = (deps: StripeEventDeps) => deps.config?.taskQueue ?? 'billing';

/** The charge's refunds: as the event carries them, else read from Stripe (a reader that cannot read throws). */
async function refundsOfCharge(deps: StripeEventDeps, refund: ChargeRefund) {
  if (refund.refunds) return refund.refunds;
  if (!deps.readChargeRefunds) throw new Error(`the refunds of ${refund.chargeId} are not in the event and cannot be read here`);
  return deps.readChargeRefunds(refund.chargeId, refund.account);
}

/**
 * A refund made at Stripe (its dashboard, whole or partial) of a payment settled here: each refund not yet on
 * the store's order of that intent is counted by its own refund workflow (order refunded when whole, partially
 * refunded otherwise, its event once per refund, the buyer's e-mail); refunds we made are counted by ours.
 * False when no settled order has the intent: the payment is still pending here, and the refund reaches its
 * workflow as the payment refused.
 */
async function mirrorRefund(deps: StripeEventDeps, storeId: string | null, transactionId: string, refund: ChargeRefund): Promise<boolean> {
  if (!storeId) return false;
  const found = await findOrderByTransaction(deps.db, storeId, transactionId);
  if (!found || !CAPTURED_ORDER_STATUSES.includes(found.status)) return false;
  await countProviderRefunds({ temporal: deps.temporal, taskQueue: taskQueueOf(deps) }, found, transactionId, await refundsOfCharge(deps, refund));
  return true;
}

/** A chargeback opened or closed on a payment of the store: recorded on its order (see services/provider/disputes.ts). */
async function disputeOfOrder(
  deps: StripeEventDeps,
  record: ProviderEventDoc,
  reading: Extract<EventReading, { kind: 'dispute' }>,
): Promise<StripeEventResult> {
  try {
    const order = reading.storeId
      ? await recordDispute({ ...deps, taskQueue: taskQueueOf(deps) }, reading.storeId, reading.intentId, reading.dispute)
      : null;
    await markProviderEventDelivered(deps.db, record._id);
    if (!order) return { status: 'ignored', note: 'no order of the store has the disputed payment' };
    return { status: 'delivered', note: `order ${order._id} ${order.status}, dispute ${reading.dispute.status}` };
  } catch (error) {
    return { status: 'unavailable', note: `the dispute could not be recorded: ${(error as Error).message}` };
  }
}

/**
 * A refund of a settled payment is money given back, not a settlement: it is recorded on the order and never
 * signalled, so no workflow still running (the subscription a renewal belongs to) reads it as its payment refused.
 * Null when the payment is not settled here (the notice is delivered as before).
 */
async function refundOfSettledOrder(
  deps: StripeEventDeps,
  record: ProviderEventDoc,
  storeId: string | null,
  transactionId: string,
  refund: ChargeRefund,
): Promise<StripeEventResult | null> {
  try {
    if (!(await mirrorRefund(deps, storeId, transactionId, refund))) return null;
    await markProviderEventDelivered(deps.db, record._id);
    return { status: 'delivered', note: 'the refunds are counted on the order' };
  } catch (error) {
    return { status: 'unavailable', note: `the refund could not be recorded: ${(error as Error).message}` };
  }
}

async function deliverWithin(deps: StripeEventDeps, record: ProviderEventDoc, notice: ProviderNotice): Promise<StripeEventResult> {
  const wait = deps.deliveryWaitMs ?? EVENT_DELIVERY_WAIT_MS;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), wait)));
  try {
    const outcome = await Promise.race([signalNotice(deps, notice, record.store_id), late]);
    if (outcome === 'late') return { status: 'unavailable', note: `the workflow was not reached within ${wait} ms` };
    await markProviderEventDelivered(deps.db, record._id);
    return { status: 'delivered', note: outcome };
  } catch (error) {
    return { status: 'unavailable', note: `the workflow could not be signaled: ${(error as Error).message}` };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Signals the notice. A workflow that is gone (ended, or never existed) waits for nothing: a paid notice
 * then starts the give-back workflow for its transaction (money moves only there), which keeps it if an
 * order here holds it and refunds it otherwise. Never acknowledged and dropped.
 */
async function signalNotice(deps: StripeEventDeps, notice: ProviderNotice, storeId: string | null): Promise<string | null> {
  try {
    await deliverProviderNotice(deps, notice);
    return null;
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    if (notice.status !== 'paid' || !storeId) return 'the workflow has ended: nothing waits for the notice, and it took no money';
    const taskQueue = deps.config?.taskQueue;
    if (!taskQueue) throw new Error('no task queue to start the give-back of a late payment on', { cause: error });
    const started = await startGiveBack({ temporal: deps.temporal, taskQueue }, notice, storeId, false);
    return `the workflow has ended: the payment is given back unless an order holds it (${started})`;
  }
}
