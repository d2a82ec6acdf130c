// What this tests: the refund workflow on the time-skipping server with the real worker and the test
// connection's ledger behind a provider that loses answers: a refund whose answer was lost (the provider
// made it, the call failed as a timeout would) is looked up by its key on the retry and never made twice;
// a refund the provider answers pending is asked again by key on a doubling wait (skipped here) until it
// is refunded, and past its bounded checks fails visibly; a refund the provider refuses leaves the order as it was. Time skipping is global to the
// environment, so these run serially.
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestConnection, TEST_CHARGES_COLLECTION, type TestChargeDoc } from '../../adapters/provider/test-connection';
import type { PaymentProvider, RefundInput, RefundOutcome } from '../../adapters/provider/types';
import { newId } from '../../domain/ids';
import { insertOrderOnce, ordersCollection, type OrderDoc } from '../../store/orders';
import { testServerPath } from '../../temporal-dev/servers';
import { createBillingWorker } from '../../worker/main';
import { PENDING_REFUND_CHECKS } from '../../domain/refunds';
import type { RefundWorkflowInput, RefundWorkflowResult } from '../../workflows/refund/messages';
import { refundWorkflowId } from '../../workflows/refund/messages';
import { INPUT_VERSION } from '../../workflows/lib/input-version';
import { testMongo, uniqueTaskQueue, type TestMongo } from '../support/env';
import { registerSearchAttributes } from '../support/search-attributes';
import { recordHistory } from '../support/histories';

const STORE = 'st_refundwf';
let env: TestWorkflowEnvironment;
let mongo: TestMongo;
let ledger: PaymentProvider;

/** What the provider did and how each call went: a test sets how the next calls behave. */
const calls = { refund: 0, lookup: 0 };
let behaviour: { loseFirstAnswer: boolean; pendingLookups: number } = { loseFirstAnswer: false, pendingLookups: 0 };

/** The test connection, with answers lost (a timeout after the refund was made) or pending, as a network and a bank would. */
function unreliable(provider: PaymentProvider): PaymentProvider {
  return {
    ...provider,
    async refund(input: RefundInput): Promise<RefundOutcome> {
      calls.refund += 1;
      const made = await provider.refund(input);
      if (behaviour.loseFirstAnswer && calls.refund === 1) throw new Error('ETIMEDOUT: the answer was lost on the way back');
      return behaviour.pendingLookups > 0 && made.status === 'refunded' ? { ...made, status: 'pending' } : made;
    },
    async lookupRefund(input) {
      calls.lookup += 1;
      const found = await provider.lookupRefund(input);
      if (found?.status === 'refunded' && calls.lookup <= behaviour.pendingLookups) return { ...found, status: 'pending' };
      return found;
    },
  };
}

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: testServerPath() } } });
  await registerSearchAttributes(env.connection);
  mongo = await testMongo();
  ledger = createTestConnection({ db: mongo.db });
});

afterAll(async () => {
  await env?.teardown();
  await mongo?.close();
});

/** A card charge approved at the test connection and its paid order: what a refund gives back. */
async function paidOrder(amount: number): Promise<{ order: OrderDoc; transactionId: string }> {
  const token = await ledger.tokenizeCard({ storeId: STORE, card: { number: '4242424242424242' } });
  if (!token.ok) throw new Error('tokenize');
  const charged = await ledger.chargeCard({
    storeId: STORE,
    idempotencyKey: `k-${newId('tx')}`,
    cardToken: token.token,
    amount,
    currency: 'brl',
    description: null,
  });
  if (charged.status !== 'approved') throw new Error(`charge ${charged.status}`);
  const now = Math.floor(Date.now() / 1000);
  const order: OrderDoc = {
    _id: newId('ord'),
    store_id: STORE,
    status: 'paid',
    paid_at: now,
    currency: 'brl',
    amount_subtotal: amount,
    amount_discount: 0,
    amount_total: amount,
    billing_reason: 'purchase',
    order_type: 'api',
    recurrence: 'one_off',
    subscription: null,
    customer: null,
    customer_email: null,
    offer: null,
    product: null,
    items: [{ kind: 'charge', description: 'Course', quantity: 1, unit_amount: amount, amount }],
    payment_method_type: 'card',
    installments: null,
    external_order_id: charged.transactionId,
    status_source: 'provider',
    client_reference_id: null,
    checkout_session: null,
    coupon: null,
    metadata: [],
    livemode: false,
    created: now,
    provider_transaction_id: charged.transactionId,
  };
  await insertOrderOnce(mongo.db, order);
  return { order, transactionId: charged.transactionId };
}

/** Runs the refund to its end; `record` names its history for test/workflows/histories (RECORD_HISTORIES=1). */
async function runRefund(order: OrderDoc, transactionId: string, amount: number, record?: string): Promise<RefundWorkflowResult> {
  const taskQueue = uniqueTaskQueue('refund-wf');
  const worker: Worker = await createBillingWorker({
    connection: env.nativeConnection,
    taskQueue,
    db: mongo.db,
    temporal: env.client,
    activityDeps: { provider: unreliable(ledger), testProvider: null },
  });
  const input: RefundWorkflowInput = {
    version: INPUT_VERSION,
    refundId: newId('rf'),
    storeId: STORE,
    orderId: order._id,
    transactionId,
    amount,
    currency: 'brl',
    reason: null,
    cancelSubscription: null,
    testClock: null,
    madeAtProvider: null,
    createdAt: Date.now(),
  };
  const workflowId = refundWorkflowId(STORE, input.refundId);
  const result = await worker.runUntil(env.client.workflow.execute('refundWorkflow', { taskQueue, workflowId, args: [input] }));
  if (record) await recordHistory(env.client, workflowId, record);
  return result;
}

const ledgerCharge = (transactionId: string) =>
  mongo.db.collection<TestChargeDoc>(TEST_CHARGES_COLLECTION).findOne({ transaction_id: transactionId });

test('an answer lost after the provider refunded is looked up by the refund key on the retry: refunded once, counted once', async () => {
  const { order, transactionId } = await paidOrder(10_000);
  Object.assign(calls, { refund: 0, lookup: 0 });
  behaviour = { loseFirstAnswer: true, pendingLookups: 0 };
  const result = await runRefund(order, transactionId, 2_500, 'refund-lost-answer-looked-up');
  expect(result).toMatchObject({ status: 'succeeded', amount: 2_500, eventType: 'order.partially_refunded' });
  // One refund request: the retry found it by its key instead of asking again.
  expect(calls).toEqual({ refund: 1, lookup: 1 });
  const charge = (await ledgerCharge(transactionId))!;
  expect(charge.refunds).toHaveLength(1);
  expect(charge.amount_refunded).toBe(2_500);
  expect(await ordersCollection(mongo.db).findOne({ _id: order._id })).toMatchObject({ status: 'partially_refunded', amount_refunded: 2_500 });
});

test('a refund the provider answers pending is asked again by key, waiting longer each time, until it is refunded', async () => {
  const { order, transactionId } = await paidOrder(10_000);
  Object.assign(calls, { refund: 0, lookup: 0 });
  behaviour = { loseFirstAnswer: false, pendingLookups: 2 };
  const result = await runRefund(order, transactionId, 10_000, 'refund-pending-asked-again');
  expect(result).toMatchObject({ status: 'succeeded', eventType: 'order.refunded', orderStatus: 'refunded', amountRefunded: 10_000 });
  expect(calls).toEqual({ refund: 1, lookup: 3 });
  expect((await ledgerCharge(transactionId))!.refunds).toHaveLength(1);
});

test('a refund the provider refuses (more than the charge has left) fails and leaves the order as it was', async () => {
  const { order, transactionId } = await paidOrder(1_000);
  Object.assign(calls, { refund: 0, lookup: 0 });
  behaviour = { loseFirstAnswer: false, pendingLookups: 0 };
  const result = await runRefund(order, transactionId, 1_001, 'refund-refused-by-provider');
  expect(result).toMatchObject({ status: 'failed', code: 'amount_too_large' });
  expect(await ordersCollection(mongo.db).findOne({ _id: order._id })).toMatchObject({ status: 'paid' });
  expect((await ledgerCharge(transactionId))!.refunds ?? []).toHaveLength(0);
});

test(`a refund still pending after ${PENDING_REFUND_CHECKS} checks (about seven weeks) fails its workflow visibly, never left waiting forever`, async () => {
  const { order, transactionId } = await paidOrder(3_000);
  Object.assign(calls, { refund: 0, lookup: 0 });
  behaviour = { loseFirstAnswer: false, pendingLookups: Number.MAX_SAFE_INTEGER };
  const failure = await runRefund(order, transactionId, 3_000).catch((error: unknown) => error);
  expect(String((failure as { cause?: { message?: string } }).cause?.message)).toContain(
    `still pending at the provider after ${PENDING_REFUND_CHECKS} checks`,
  );
  expect(calls).toEqual({ refund: 1, lookup: PENDING_REFUND_CHECKS });
  // Not counted on the order: the refund is not known to have reached the buyer.
  expect(await ordersCollection(mongo.db).findOne({ _id: order._id })).toMatchObject({ status: 'paid' });
});
