// Stripe's events in: a verified event is recorded once by its id, read as a provider notice, and signaled
// to the workflow its PaymentIntent names (the same providerSettled signal the test connection's notices
// use). Delivery is bounded in time: past it (or when Temporal refuses) the caller answers 503 and Stripe
// sends the event again, which delivers the recorded notice; a payment whose workflow already ended is
// handed to the give-back workflow (services/provider/give-back.ts), never dropped.
// A full refund made at Stripe of a settled payment marks its order refunded (order.refunded once), signalling nothing.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type Stripe from 'stripe';
import type { Database } from '../../store/database';
import { findProviderEvent, markProviderEventDelivered, recordProviderEvent, type ProviderEventDoc } from '../../store/provider-events';
import {
  isHandledStripeEvent,
  readStripeEvent,
  type ChargeRefund,
  type EventReading,
  type IntentReader,
} from '../../adapters/provider/stripe/events';
import type { ProviderNotice } from '../../adapters/provider/types';
import { findOrderByTransaction, markOrderRefunded } from '../../store/orders';
import { orderObject } from '../../resources/order';
import { emitEventOnce } from '../events/emit-once';
import { deliverProviderNotice } from './notices';
import { startGiveBack } from './give-back';

/** How long the endpoint waits for the signal before answering 503 (Stripe expects an answer within seconds). */
export const EVENT_DELIVERY_WAIT_MS = 800;

export interface StripeEventDeps {
  db: Database;
  temporal: Client;
  /** Reads a PaymentIntent's routing at Stripe (charge.refunded, review.closed carry no intent metadata). */
  readIntent: IntentReader;
  deliveryWaitMs?: number;
  /** The task queue order.refunded's delivery starts on (without it the sweeper dispatches the event). */
  config?: { taskQueue?: string };
}

/** repeat: received before and already settled here; ignored: nothing to deliver; delivered: signaled now. */
export type StripeEventResult = { status: 'repeat' | 'ignored' | 'delivered'; note: string | null } | { status: 'unavailable'; note: string };

function eventRecord(event: Stripe.Event, reading: EventReading | null): ProviderEventDoc {
  const deliver = reading?.kind === 'notice';
  return {
    _id: `stripe:${event.id}`,
    provider: 'stripe',
    type: event.type,
    store_id: reading?.kind === 'notice' ? reading.storeId : null,
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
  let reading: EventReading | null;
  try {
    reading = isHandledStripeEvent(event.type) ? await readStripeEvent(event, deps.readIntent) : null;
  } catch (error) {
    // The intent could not be read at Stripe: nothing is recorded, so the event's next delivery reads it again.
    return { status: 'unavailable', note: `the payment could not be read at the provider: ${(error as Error).message}` };
  }
  const record = known ?? (await recordProviderEvent(deps.db, eventRecord(event, reading)));
  if (record.status !== 'delivering') return { status: 'ignored', note: record.note };
  const notice = noticeOf(record, reading);
  if (!notice) return { status: 'ignored', note: 'the event no longer reads as a notice' };
  if (reading?.kind === 'notice' && reading.refund) {
    const recorded = await refundOfSettledOrder(deps, record, reading.storeId, notice.transactionId, reading.refund);
    if (recorded) return recorded;
  }
  return deliverWithin(deps, record, notice);
}

/**
 * A refund made at Stripe (its dashboard) of a payment settled here: the store's paid order of that intent
 * becomes refunded and order.refunded is emitted once per order; a partial refund changes nothing here (the
 * order keeps its total; Stripe's dashboard holds it). False when no settled order has the intent: the
 * payment is still pending here, and the refund reaches its workflow as the payment refused.
 */
async function mirrorRefund(deps: StripeEventDeps, storeId: string | null, transactionId: string, refund: ChargeRefund): Promise<boolean> {
  if (!storeId) return false;
  const found = await findOrderByTransaction(deps.db, storeId, transactionId);
  if (!found || (found.status !== 'paid' && found.status !== 'refunded')) return false;
  if (refund.amountRefunded < refund.amount) return true;
  const order = await markOrderRefunded(deps.db, storeId, found._id);
  if (order?.status === 'refunded') {
    await emitEventOnce(deps, `${order._id}:order.refunded`, { storeId, type: 'order.refunded', object: orderObject(order), request: null });
  }
  return true;
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
    return { status: 'delivered', note: 'the refund is recorded on the order' };
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
