// What this tests: refunds a merchant starts (`npm run admin -- orders refund`) through the real servers
// (FerretDB, Temporal, a worker, the API, Mailpit) and the built-in test connection: a partial refund then
// the rest (the order's amount_refunded and status, the test connection's ledger), an amount over what
// remains refused with a typed error and nothing moved (by our check, and by the provider when a refund
// was made there meanwhile), order.partially_refunded and order.refunded each
// emitted once, one refund e-mail per refund at Mailpit, and a subscription's purchase refunded without
// canceling the subscription unless --cancel asks.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { runAdmin } from '../../../admin/cli';
import { createTestConnection, TEST_CHARGES_COLLECTION, type TestChargeDoc } from '../../../adapters/provider/test-connection';
import { ordersCollection, type OrderDoc } from '../../../store/orders';
import { checkoutSessionWorkflowId } from '../../../workflows/checkout-session/messages';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import type { TestStore } from '../../support/api';
import {
  buyerForm,
  call,
  createSession,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';
import { waitFor } from '../../support/env';
import { mailpitMessage, messagesTo } from '../../support/mailpit';
import { formatMoney as emailMoney } from '../../../i18n/format';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;

beforeAll(async () => {
  stack = await startCheckoutStack('merchant-refunds');
  store = await createTestStore(stack.mongo.db, { name: 'Loja Reembolso', country: 'BR' });
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
  const on = await admin(['stores', 'set', store.store._id, '--test-buyer-emails', 'true']);
  expect(on.code, on.output).toBe(0);
});

afterAll(async () => {
  await stack?.close();
});

function admin(args: string[]) {
  return runAdmin(args, {
    MONGODB_URI: inject('mongoUri'),
    MONGODB_DB: stack.mongo.db.databaseName,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: stack.temporal.namespace,
    TEMPORAL_TASK_QUEUE: stack.taskQueue,
  });
}

async function refund(orderId: string, ...options: string[]) {
  const { code, output } = await admin(['orders', 'refund', orderId, ...options, '--json']);
  return { code, body: JSON.parse(output) as Record<string, any> };
}

/** A paid checkout of `offer` by card through the test connection: the buyer's e-mail and the order. */
async function purchase(offer = catalog.oneOff._id): Promise<{ email: string; order: OrderDoc; sessionId: string }> {
  const session = await createSession(stack.api, store, { offer });
  expect(session.status).toBe(201);
  const form = buyerForm({ method: 'card', card_number: '4242424242424242' });
  const res = await fetch(`${stack.api.url}/c/${session.body.id}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  expect(res.status).toBe(303);
  await stack.temporal.client.workflow.getHandle(checkoutSessionWorkflowId(session.body.id)).result();
  const order = (await ordersCollection(stack.mongo.db).findOne({ store_id: store.store._id, checkout_session: session.body.id }))!;
  expect(order.status).toBe('paid');
  return { email: form.email, order, sessionId: session.body.id };
}

const getOrder = async (id: string) => (await call(stack.api, store.key, 'GET', `/v1/orders/${id}`)).body as Record<string, any>;

async function eventsAbout(orderId: string, type: string) {
  const listed = await call(stack.api, store.key, 'GET', `/v1/events?type=${type}&limit=100`);
  return (listed.body.data as Array<{ id: string; data: { object: Record<string, any> } }>).filter((event) => event.data.object.id === orderId);
}

async function ledgerCharge(transactionId: string) {
  return stack.mongo.db.collection<TestChargeDoc>(TEST_CHARGES_COLLECTION).findOne({ store_id: store.store._id, transaction_id: transactionId });
}

describe('a refund the merchant starts, through the test connection', () => {
  test('a partial refund then the rest: amount_refunded and the status follow; an over-refund is refused typed; each event and e-mail once', async () => {
    const { email, order } = await purchase();
    const transactionId = order.external_order_id!;

    const partial = await refund(order._id, '--amount', '5000', '--reason', 'damaged item');
    expect(partial.code, JSON.stringify(partial.body)).toBe(0);
    expect(partial.body).toMatchObject({
      object: 'refund',
      status: 'succeeded',
      amount: 5000,
      currency: 'brl',
      order: order._id,
      reason: 'damaged item',
      order_status: 'partially_refunded',
      order_amount_refunded: 5000,
      subscription_canceled: false,
    });
    expect(partial.body.id).toMatch(/^rf_/);
    expect(partial.body.provider_refund).toMatch(/^re_/);
    expect(await getOrder(order._id)).toMatchObject({ status: 'partially_refunded', amount_refunded: 5000, amount_total: 19700 });

    const tooMuch = await refund(order._id, '--amount', '14701');
    expect(tooMuch.code).toBe(1);
    expect(tooMuch.body).toMatchObject({ code: 'refund_amount_too_large', type: 'invalid_request_error', param: 'amount' });
    expect((await ledgerCharge(transactionId))!.amount_refunded).toBe(5000);

    const rest = await refund(order._id);
    expect(rest.code, JSON.stringify(rest.body)).toBe(0);
    expect(rest.body).toMatchObject({ status: 'succeeded', amount: 14700, order_status: 'refunded', order_amount_refunded: 19700 });
    expect(await getOrder(order._id)).toMatchObject({ status: 'refunded', amount_refunded: 19700, paid: false });
    expect(await ledgerCharge(transactionId)).toMatchObject({ state: 'refunded', amount_refunded: 19700 });

    const again = await refund(order._id, '--amount', '1');
    expect(again.body).toMatchObject({ code: 'order_not_refundable' });

    const partialEvents = await waitFor(async () =>
      (await eventsAbout(order._id, 'order.partially_refunded')).length ? eventsAbout(order._id, 'order.partially_refunded') : null,
    );
    const wholeEvents = await waitFor(async () =>
      (await eventsAbout(order._id, 'order.refunded')).length ? eventsAbout(order._id, 'order.refunded') : null,
    );
    expect(partialEvents).toHaveLength(1);
    expect(partialEvents[0].data.object).toMatchObject({ status: 'partially_refunded', amount_refunded: 5000 });
    expect(wholeEvents).toHaveLength(1);
    expect(wholeEvents[0].data.object).toMatchObject({ status: 'refunded', amount_refunded: 19700 });

    // The store is in Brazil and the buyer chose no language: Portuguese.
    const mails = await waitFor(
      async () => {
        const found = (await messagesTo(email)).filter((message) => message.Subject.startsWith('Reembolso: '));
        return found.length >= 2 ? found : null;
      },
      { description: `two refund e-mails to ${email}` },
    );
    expect(mails).toHaveLength(2);
    const texts = await Promise.all(mails.map(async (mail) => (await mailpitMessage(mail.ID)).Text));
    for (const amount of [5_000, 14_700]) expect(texts.some((text) => text.includes(`Reembolsado: ${emailMoney(amount, 'brl', 'pt')}`))).toBe(true);
    expect(texts.every((text) => text.includes(`Pedido: ${order._id}`) && text.includes('Photography Course'))).toBe(true);
  });

  test('an amount that is not a positive integer, and an unknown order, are refused typed before anything starts', async () => {
    const { order } = await purchase();
    expect((await refund(order._id, '--amount', '0')).body).toMatchObject({ code: 'parameter_invalid', param: 'amount' });
    expect((await refund(order._id, '--amount', '12.5')).body).toMatchObject({ code: 'parameter_invalid', param: 'amount' });
    expect((await refund('ord_doesnotexist')).body).toMatchObject({ code: 'resource_missing' });
    expect(await getOrder(order._id)).toMatchObject({ status: 'paid', amount_refunded: 0 });
  });
  test('a refund the provider refuses (more than it has left, after a refund made there meanwhile) is refund_amount_too_large; the order is unchanged', async () => {
    const { order } = await purchase();
    const transactionId = order.external_order_id!;
    // Given back at the provider behind our back: our order still shows 19,700 to refund, the provider 4,700.
    const meanwhile = await createTestConnection({ db: stack.mongo.db }).refund({
      storeId: store.store._id,
      transactionId,
      amount: 15_000,
      refundKey: 'outside/1',
      reason: null,
    });
    expect(meanwhile).toMatchObject({ status: 'refunded' });
    const refused = await refund(order._id, '--amount', '5000');
    expect(refused.code).toBe(1);
    expect(refused.body).toMatchObject({ code: 'refund_amount_too_large', param: 'amount' });
    expect(refused.body.error).toContain('The provider refused the refund');
    expect(await getOrder(order._id)).toMatchObject({ status: 'paid', amount_refunded: 0 });
    expect((await ledgerCharge(transactionId))!.amount_refunded).toBe(15_000);
  });
});

describe("a subscription's purchase refunded", () => {
  test('a refund leaves the subscription active; --cancel cancels it with the rest', async () => {
    const { order, sessionId } = await purchase(catalog.monthly._id);
    const subscription = await waitFor(async () => (await findCheckoutSession(stack.mongo.db, store.store._id, sessionId))?.subscription ?? null, {
      description: 'the subscription of the purchase',
    });
    await waitFor(async () => ((await ordersCollection(stack.mongo.db).findOne({ _id: order._id }))?.subscription === subscription ? true : null), {
      description: 'the order linked to its subscription',
    });

    const first = await refund(order._id, '--amount', '990');
    expect(first.body).toMatchObject({ status: 'succeeded', order_status: 'partially_refunded', subscription_canceled: false });
    expect((await call(stack.api, store.key, 'GET', `/v1/subscriptions/${subscription}`)).body.status).toBe('active');

    const rest = await refund(order._id, '--cancel');
    expect(rest.body).toMatchObject({ status: 'succeeded', amount: 4000, order_status: 'refunded', subscription_canceled: true });
    expect((await call(stack.api, store.key, 'GET', `/v1/subscriptions/${subscription}`)).body.status).toBe('canceled');
  });
});
