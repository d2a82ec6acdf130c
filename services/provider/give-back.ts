// Giving back a capture that arrived after its session, order or subscription had closed (issue 38, 1):
// run only by the give-back workflow (workflows/give-back), started by whoever received the late notice
// (the Stripe events endpoint, the test connection's buttons and admin CLI) when the waiting workflow had
// ended. An order here that counts the transaction as paid keeps it (a repeated notice of a payment we
// hold); anything else captured is refunded at the provider under the charge's own refund key
// (`<charge key>#refund` at Stripe), and its order, if there is one, becomes refunded with order.refunded once.
import type { Client } from '@temporalio/client';
import { connectionFor, type PaymentConnections } from '../../adapters/provider';
import type { ProviderNotice } from '../../adapters/provider/types';
import type { Database } from '../../store/database';
import { findOrderByTransaction, markLateCaptureRefunded, type OrderDoc } from '../../store/orders';
import { findStore } from '../../store/stores';
import { orderObject } from '../../resources/order';
import { emitEventOnce } from '../events/emit-once';
import type { EventDeps } from '../events/events';
import { giveBackWorkflowId, type GiveBackOutcome, type GiveBackWorkflowInput } from '../../workflows/give-back/messages';
import { attemptOfKey } from '../../workflows/checkout-session/messages';

export interface GiveBackDeps extends PaymentConnections, EventDeps {
  db: Database;
}

/** Orders that hold their payment: the money is the merchant's (or was given back already). */
const HOLDS_PAYMENT: readonly OrderDoc['status'][] = ['paid', 'refunded', 'partially_refunded', 'charged_back'];

/** What the provider holds captured under the transaction, and its charge key; null when nothing is captured. */
async function capturedKey(
  deps: GiveBackDeps,
  input: GiveBackWorkflowInput,
): Promise<{ key: string; amount: number; currency: string } | { none: string }> {
  const provider = connectionFor(deps, input.testObject);
  const found = await provider.getTransaction({ storeId: input.storeId, transactionId: input.transactionId });
  if (!found) return { none: 'the provider has no such transaction for this store' };
  if (found.state !== 'paid' && found.state !== 'approved' && found.state !== 'refunded') return { none: `the transaction is ${found.state}` };
  return { key: found.idempotencyKey, amount: found.amount, currency: found.currency };
}

/** The give-back workflow's one keyed step (see the module header); a provider that does not answer throws (retried). */
export async function giveBackLateCapture(deps: GiveBackDeps, input: GiveBackWorkflowInput): Promise<GiveBackOutcome> {
  const order = await findOrderByTransaction(deps.db, input.storeId, input.transactionId);
  if (order && HOLDS_PAYMENT.includes(order.status)) return { status: 'kept', orderId: order._id, note: `order ${order._id} is ${order.status}` };
  // A notice naming a store that is not ours (another deployment on the same account) moves nothing here.
  if (!(await findStore(deps.db, input.storeId))) return { status: 'nothing_to_give_back', orderId: null, note: 'no such store here' };
  const captured = await capturedKey(deps, input);
  if ('none' in captured) return { status: 'nothing_to_give_back', orderId: order?._id ?? null, note: captured.none };
  const back = await connectionFor(deps, input.testObject).refundCharge({ storeId: input.storeId, chargeKey: captured.key });
  // Not given back yet (the provider changing it now): the activity asks again after its backoff.
  if (!back.ok) throw new Error(`the late payment ${input.transactionId} could not be given back yet: ${back.reason}`);
  if (order) {
    await recordGivenBack(deps, input.storeId, order._id);
    return { status: 'given_back', orderId: order._id, refund: back.status };
  }
  // No order: a checkout attempt that never completed its session (its buyer is told from the session).
  const attempt = attemptOfKey(captured.key);
  return {
    status: 'given_back',
    orderId: null,
    refund: back.status,
    attempt: attempt && { ...attempt, amount: captured.amount, currency: captured.currency },
  };
}

/** The closed order becomes refunded; order.refunded once per order (the key the dashboard refund mirror uses too). */
async function recordGivenBack(deps: GiveBackDeps, storeId: string, orderId: string): Promise<void> {
  const order = await markLateCaptureRefunded(deps.db, storeId, orderId);
  if (order?.status !== 'refunded') return;
  await emitEventOnce(deps, `${order._id}:order.refunded`, { storeId, type: 'order.refunded', object: orderObject(order), request: null });
}

/**
 * A paid notice whose waiting workflow had ended: the give-back workflow is started for its transaction
 * (one per transaction, an existing run reused). Notices that take no money (refused, expired) need nothing.
 */
export async function startGiveBack(
  deps: { temporal: Client; taskQueue: string },
  notice: ProviderNotice,
  storeId: string,
  testObject: boolean,
): Promise<string | null> {
  if (notice.status !== 'paid') return null;
  const workflowId = giveBackWorkflowId(storeId, notice.transactionId);
  const input: GiveBackWorkflowInput = { storeId, transactionId: notice.transactionId, testObject };
  await deps.temporal.workflow.start('giveBackWorkflow', {
    workflowId,
    taskQueue: deps.taskQueue,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  return workflowId;
}
