// What this tests: POST /providers/stripe/events over real HTTP with FerretDB, Temporal and a worker:
// the signature over the raw body is required (missing, foreign, tampered or stale: 400, nothing
// recorded), a signed payment_intent.succeeded reaches the waiting checkout session as its provider
// notice (a PIX pending at the test connection is paid by it), a repeated event id is recorded and
// delivered once, unhandled types are acknowledged, an unreadable intent answers 503 and records nothing,
// and a process without a Stripe connection answers 404. Where an event comes from: one of the other mode
// (live on this test connection) is 200 and ignored, even when its intent cannot be read here (it was
// 503 on every retry); one from another connected account than the one the payment's charge key is
// pinned to is 200 and ignored (the session stays pending), whatever the store's account is now; so is a
// foreign account's dispute of another store's payment (the order stays paid; from its own account, charged back).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import Stripe from 'stripe';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../../api/app';
import { createTestConnection } from '../../../adapters/provider/test-connection';
import type { IntentReader } from '../../../adapters/provider/stripe/events';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { findProviderEvent } from '../../../store/provider-events';
import { pinChargeAccount } from '../../../store/charge-accounts';
import { collections } from '../../../store/collections';
import { checkoutAttemptKey, checkoutSessionWorkflowId } from '../../../workflows/checkout-session/messages';
import { freePort } from '../../../temporal-dev/servers';
import type { TestStore } from '../../support/api';
import {
  buyerForm,
  createSession,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';
import { waitFor } from '../../support/env';
import { messagesTo } from '../../support/mailpit';
import { findOrder } from '../../../store/orders';
import { giveBackWorkflowId } from '../../../workflows/give-back/messages';

const SECRET = 'whsec_test_events_endpoint';
let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;
let stripeApp: FastifyInstance;
let stripeUrl: string;
/** What the endpoint's intent reader does: tests swap it (a Stripe that cannot be reached). */
let readIntent: IntentReader = async () => {
  throw new Error('no intent reads expected');
};

beforeAll(async () => {
  stack = await startCheckoutStack('stripe-events', { ipRateLimit: 100_000 });
  store = await createTestStore(stack.mongo.db);
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
  const port = await freePort();
  stripeApp = await buildApp(
    {
      db: stack.mongo.db,
      config: { ...stack.api.config, port },
      temporal: stack.temporal.client,
      provider: createTestConnection({ db: stack.mongo.db }),
      stripe: {
        webhookSecret: SECRET,
        publishableKey: 'pk_test_events',
        jsUrl: 'https://js.stripe.com/v3/',
        readIntent: (...args) => readIntent(...args),
        readPagePayment: async () => null,
      },
    },
    { logger: false },
  );
  await stripeApp.listen({ port, host: '127.0.0.1' });
  stripeUrl = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await stripeApp?.close();
  await stack?.close();
});

let counter = 0;
function stripeEvent(type: string, object: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  counter += 1;
  return {
    id: `evt_test_${Date.now()}_${counter}`,
    object: 'event',
    type,
    api_version: '2025-01-27',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object },
    ...extra,
  };
}

async function send(payload: string, header: string | null, base = stripeUrl) {
  const res = await fetch(`${base}/providers/stripe/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(header === null ? {} : { 'stripe-signature': header }) },
    body: payload,
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const signed = (payload: string, secret = SECRET, timestamp?: number) => Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });

async function sendSigned(event: object) {
  const payload = JSON.stringify(event);
  return send(payload, signed(payload));
}

const recorded = (eventId: string) => findProviderEvent(stack.mongo.db, `stripe:${eventId}`);

/** A PIX left pending at the test connection: the session waits for its provider's notice. */
async function pendingPix() {
  const created = await createSession(stack.api, store, { offer: catalog.oneOff._id });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  const res = await fetch(`${stack.api.url}/c/${id}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(buyerForm({ method: 'pix' })).toString(),
  });
  expect(res.headers.get('location')).toBe(`/c/${id}?done=1`);
  const session = (await findCheckoutSession(stack.mongo.db, store.store._id, id))!;
  expect(session.payment_status).toBe('pending');
  return { id, transactionId: session.payment!.transaction_id! };
}

function intent(transactionId: string, notifyRef: string, extra: Record<string, unknown> = {}) {
  return {
    id: transactionId,
    object: 'payment_intent',
    amount: 19700,
    currency: 'brl',
    status: 'succeeded',
    payment_method_types: ['pix'],
    metadata: { notify_ref: notifyRef, store_id: store.store._id, charge_key: 'checkout/x/1' },
    ...extra,
  };
}

describe('signature', () => {
  test('a missing Stripe-Signature is 400 parameter_missing and records nothing', async () => {
    const event = stripeEvent('payment_intent.succeeded', intent('pi_nosig', 'checkout-session/cs_none'));
    const res = await send(JSON.stringify(event), null);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_missing', param: 'Stripe-Signature' });
    expect(await recorded(event.id)).toBeNull();
  });

  test('a signature under another secret, a tampered body or a stale timestamp is 400 parameter_invalid and records nothing', async () => {
    const event = stripeEvent('payment_intent.succeeded', intent('pi_badsig', 'checkout-session/cs_none'));
    const payload = JSON.stringify(event);
    const foreign = await send(payload, signed(payload, 'whsec_someone_else'));
    const tampered = await send(payload.replace('19700', '1'), signed(payload));
    const stale = await send(payload, signed(payload, SECRET, Math.floor(Date.now() / 1000) - 3600));
    for (const res of [foreign, tampered, stale]) {
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_invalid', param: 'Stripe-Signature' });
    }
    expect(await recorded(event.id)).toBeNull();
  });

  test('without a Stripe connection the endpoint answers 404 resource_missing naming the configuration', async () => {
    const payload = JSON.stringify(stripeEvent('payment_intent.succeeded', intent('pi_unconfigured', 'x')));
    const res = await send(payload, signed(payload), stack.api.url);
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: 'resource_missing' });
    expect(res.body.error.message).toContain('STRIPE_WEBHOOK_SECRET');
  });
});

describe('notices', () => {
  test('a signed payment_intent.succeeded pays the pending PIX of the session its metadata names; the same event again is a repeat', async () => {
    const { id, transactionId } = await pendingPix();
    const event = stripeEvent('payment_intent.succeeded', intent(transactionId, checkoutSessionWorkflowId(id)));
    const first = await sendSigned(event);
    expect(first).toMatchObject({ status: 200, body: { received: true, status: 'delivered' } });
    const paid = await waitFor(
      async () => {
        const s = await findCheckoutSession(stack.mongo.db, store.store._id, id);
        return s?.payment_status === 'paid' ? s : null;
      },
      { timeoutMs: 20_000, description: 'the session paid by the event' },
    );
    expect(paid.status).toBe('complete');
    const again = await sendSigned(event);
    expect(again).toMatchObject({ status: 200, body: { status: 'repeat' } });
    expect(await recorded(event.id)).toMatchObject({ status: 'delivered', transaction_id: transactionId, store_id: store.store._id });
  });

  test('a signed payment_intent.payment_failed on a PIX expires it: the session ends complete and unpaid', async () => {
    const { id, transactionId } = await pendingPix();
    const failed = intent(transactionId, checkoutSessionWorkflowId(id), {
      status: 'requires_payment_method',
      last_payment_error: { message: 'expired' },
    });
    expect((await sendSigned(stripeEvent('payment_intent.payment_failed', failed))).status).toBe(200);
    const ended = await waitFor(
      async () => {
        const s = await findCheckoutSession(stack.mongo.db, store.store._id, id);
        return s?.payment_status === 'unpaid' ? s : null;
      },
      { timeoutMs: 20_000, description: 'the PIX expired by the event' },
    );
    expect(ended.status).toBe('complete');
  });

  test('a PIX captured after its session ended (expired, order canceled) is given back: refunded at the provider, order refunded with order.refunded once, the buyer e-mailed', async () => {
    await stack.mongo.db.collection<{ _id: string }>('stores').updateOne({ _id: store.store._id }, { $set: { test_buyer_emails: true } });
    const { id, transactionId } = await pendingPix();
    const failed = intent(transactionId, checkoutSessionWorkflowId(id), {
      status: 'requires_payment_method',
      last_payment_error: { message: 'expired' },
    });
    expect((await sendSigned(stripeEvent('payment_intent.payment_failed', failed))).status).toBe(200);
    await stack.temporal.client.workflow.getHandle(checkoutSessionWorkflowId(id)).result();
    const session = (await findCheckoutSession(stack.mongo.db, store.store._id, id))!;
    expect((await findOrder(stack.mongo.db, store.store._id, session.order!))!.status).toBe('canceled');
    // The provider took the buyer's money all the same (a capture the fence did not stop: a run from before it).
    await stack.mongo.db
      .collection('provider_test_charges')
      .updateOne({ transaction_id: transactionId }, { $set: { state: 'paid', settled_at: Math.floor(Date.now() / 1000) } });

    const late = await sendSigned(stripeEvent('payment_intent.succeeded', intent(transactionId, checkoutSessionWorkflowId(id))));
    expect(late).toMatchObject({ status: 200, body: { status: 'delivered' } });
    const outcome = await stack.temporal.client.workflow.getHandle(giveBackWorkflowId(store.store._id, transactionId)).result();
    expect(outcome).toEqual({ status: 'given_back', orderId: session.order, refund: 'refunded' });
    expect((await stack.mongo.db.collection('provider_test_charges').findOne({ transaction_id: transactionId }))!.state).toBe('refunded');
    expect((await findOrder(stack.mongo.db, store.store._id, session.order!))!.status).toBe('refunded');
    const refundedEvents = () =>
      stack.mongo.db
        .collection('events')
        .countDocuments({ store_id: store.store._id, type: 'order.refunded', data_json: { $regex: session.order! } });
    expect(await refundedEvents()).toBe(1);
    const sent = await waitFor(
      () => stack.mongo.db.collection('sent_mail').findOne({ store_id: store.store._id, purpose: 'late_payment_refund', subject_id: session.order }),
      {
        timeoutMs: 20_000,
        description: 'the late refund e-mail recorded',
      },
    );
    expect(sent).toMatchObject({ status: 'sent' });
    const mail = await waitFor(async () => (await messagesTo(sent.to as string)).find((m) => m.Subject === sent.subject) ?? null, {
      timeoutMs: 20_000,
      description: 'the late refund e-mail',
    });
    // The store is in Brazil: the buyer reads it in Portuguese.
    expect(mail.Subject).toContain('Seu pagamento foi devolvido');

    // The same event again (Stripe re-sends) gives nothing back twice.
    expect((await sendSigned(stripeEvent('payment_intent.succeeded', intent(transactionId, checkoutSessionWorkflowId(id))))).status).toBe(200);
    const again = await stack.temporal.client.workflow.getHandle(giveBackWorkflowId(store.store._id, transactionId)).result();
    expect(again).toMatchObject({ status: 'kept' });
    expect(await refundedEvents()).toBe(1);
  });

  test('a card paid here whose workflow ended and whose succeeded event arrives late is kept: nothing given back', async () => {
    const created = await createSession(stack.api, store, { offer: catalog.oneOff._id });
    const id = created.body.id as string;
    const res = await fetch(`${stack.api.url}/c/${id}/pay`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(buyerForm({ method: 'card', card_number: '4242 4242 4242 4242' })).toString(),
    });
    expect(res.status).toBe(303);
    await stack.temporal.client.workflow.getHandle(checkoutSessionWorkflowId(id)).result();
    const session = (await findCheckoutSession(stack.mongo.db, store.store._id, id))!;
    expect(session.payment_status).toBe('paid');
    const transactionId = session.payment!.transaction_id!;
    const late = await sendSigned(
      stripeEvent('payment_intent.succeeded', intent(transactionId, checkoutSessionWorkflowId(id), { payment_method_types: ['card'] })),
    );
    expect(late.status).toBe(200);
    expect(await stack.temporal.client.workflow.getHandle(giveBackWorkflowId(store.store._id, transactionId)).result()).toMatchObject({
      status: 'kept',
    });
    expect((await findOrder(stack.mongo.db, store.store._id, session.order!))!.status).toBe('paid');
  });

  test('unhandled types and processing are acknowledged and recorded as ignored', async () => {
    const other = stripeEvent('customer.created', { id: 'cus_1', object: 'customer' });
    expect(await sendSigned(other)).toMatchObject({ status: 200, body: { status: 'ignored' } });
    const processing = stripeEvent('payment_intent.processing', intent('pi_processing', 'checkout-session/cs_x', { status: 'processing' }));
    expect(await sendSigned(processing)).toMatchObject({ status: 200, body: { status: 'ignored' } });
    expect(await recorded(other.id)).toMatchObject({ status: 'ignored', type: 'customer.created' });
    expect(await recorded(processing.id)).toMatchObject({ status: 'ignored', transaction_id: 'pi_processing' });
  });

  test('a notice for a workflow that does not exist is acknowledged (nothing waits for it)', async () => {
    const event = stripeEvent('payment_intent.succeeded', intent('pi_nobody', 'checkout-session/cs_never_made'));
    expect(await sendSigned(event)).toMatchObject({ status: 200, body: { status: 'delivered' } });
  });

  test('review.closed whose intent cannot be read at Stripe answers 503 and records nothing, so its re-send is read again', async () => {
    readIntent = async () => {
      throw new Error('connect ECONNREFUSED');
    };
    const event = stripeEvent('review.closed', { id: 'prv_1', object: 'review', reason: 'approved', payment_intent: 'pi_review' });
    const res = await sendSigned(event);
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: 'service_unavailable' });
    expect(await recorded(event.id)).toBeNull();
  });
});

describe('where the event comes from', () => {
  const sessionOf = (id: string) => findCheckoutSession(stack.mongo.db, store.store._id, id);
  const setStoreAccount = (account: string | null) =>
    collections(stack.mongo.db).stores.updateOne({ _id: store.store._id }, { $set: { stripe_account: account } });

  test('a live-mode event on this test-mode connection is 200 and ignored: the pending PIX stays pending, and an unreadable intent is no 503', async () => {
    const { id, transactionId } = await pendingPix();
    const key = checkoutAttemptKey(id, 1);
    const paid = stripeEvent(
      'payment_intent.succeeded',
      intent(transactionId, checkoutSessionWorkflowId(id), {
        metadata: { notify_ref: checkoutSessionWorkflowId(id), store_id: store.store._id, charge_key: key },
      }),
      {
        livemode: true,
      },
    );
    expect(await sendSigned(paid)).toMatchObject({ status: 200, body: { status: 'ignored' } });
    expect(await recorded(paid.id)).toMatchObject({ status: 'ignored', livemode: true });
    expect((await recorded(paid.id))!.note).toContain('live-mode event on a test-mode connection');
    // Stripe answers a read of the other mode's intent with "No such payment_intent": it was 503 on every retry.
    readIntent = async (intentId) => {
      throw new Error(`No such payment_intent: '${intentId}'; a similar object exists in live mode`);
    };
    const review = stripeEvent(
      'review.closed',
      { id: 'prv_live', object: 'review', reason: 'approved', payment_intent: transactionId },
      { livemode: true },
    );
    expect(await sendSigned(review)).toMatchObject({ status: 200, body: { status: 'ignored' } });
    expect(await sendSigned(review)).toMatchObject({ status: 200, body: { status: 'repeat' } });
    expect((await sessionOf(id))!.payment_status).toBe('pending');
  });

  test("another connected account's signed event is 200 and ignored: no state change, the session stays pending", async () => {
    const { id, transactionId } = await pendingPix();
    const metadata = { notify_ref: checkoutSessionWorkflowId(id), store_id: store.store._id, charge_key: checkoutAttemptKey(id, 1) };
    const foreign = stripeEvent('payment_intent.succeeded', intent(transactionId, metadata.notify_ref, { metadata }), {
      account: 'acct_1Foreign0Account',
    });
    expect(await sendSigned(foreign)).toMatchObject({ status: 200, body: { status: 'ignored' } });
    expect(await recorded(foreign.id)).toMatchObject({ status: 'ignored', account: 'acct_1Foreign0Account', notify_ref: null });
    const refunded = stripeEvent(
      'charge.refunded',
      { id: 'ch_foreign', object: 'charge', amount: 19700, amount_refunded: 19700, payment_intent: transactionId, metadata },
      { account: 'acct_1Foreign0Account' },
    );
    expect(await sendSigned(refunded)).toMatchObject({ status: 200, body: { status: 'ignored' } });
    expect((await sessionOf(id))!.payment_status).toBe('pending');
  });

  test("a foreign connected account's signed charge.dispute.created for another store's payment is 200 and ignored: the order stays paid", async () => {
    const other = await createTestStore(stack.mongo.db);
    const otherCatalog = await seedCheckoutCatalog(stack.mongo.db, other.store._id);
    const created = await createSession(stack.api, other, { offer: otherCatalog.oneOff._id });
    const id = created.body.id as string;
    const res = await fetch(`${stack.api.url}/c/${id}/pay`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(buyerForm({ method: 'card', card_number: '4242 4242 4242 4242' })).toString(),
    });
    expect(res.status).toBe(303);
    await stack.temporal.client.workflow.getHandle(checkoutSessionWorkflowId(id)).result();
    const session = (await findCheckoutSession(stack.mongo.db, other.store._id, id))!;
    const transactionId = session.payment!.transaction_id!;
    const chargeKey = checkoutAttemptKey(id, 1);
    await pinChargeAccount(stack.mongo.db, other.store._id, chargeKey, 'acct_1OtherStore0Own');
    // The dispute carries no metadata of ours: the store and key come from its intent, read under the event's account.
    readIntent = async (intentId) => ({ intentId, notifyRef: null, storeId: other.store._id, chargeKey, pix: false });
    const dispute = (eventAccount: string) =>
      stripeEvent(
        'charge.dispute.created',
        {
          id: `dp_${transactionId}`,
          object: 'dispute',
          amount: 19700,
          currency: 'brl',
          charge: `ch_${transactionId}`,
          payment_intent: transactionId,
          reason: 'fraudulent',
          status: 'needs_response',
          created: Math.floor(Date.now() / 1000),
          livemode: false,
        },
        { account: eventAccount },
      );
    try {
      const foreign = dispute('acct_1Foreign0Account');
      expect(await sendSigned(foreign)).toMatchObject({ status: 200, body: { status: 'ignored' } });
      expect(await recorded(foreign.id)).toMatchObject({ status: 'ignored', account: 'acct_1Foreign0Account' });
      expect((await recorded(foreign.id))!.note).toContain('acct_1OtherStore0Own');
      const order = (await findOrder(stack.mongo.db, other.store._id, session.order!))!;
      expect(order.status).toBe('paid');
      expect(order.dispute ?? null).toBeNull();
      // The same dispute from the account the payment was made under is believed: the ignore above was the account's.
      const own = dispute('acct_1OtherStore0Own');
      expect(await sendSigned(own)).toMatchObject({ status: 200, body: { status: 'delivered' } });
      expect((await findOrder(stack.mongo.db, other.store._id, session.order!))!.status).toBe('charged_back');
    } finally {
      readIntent = async () => {
        throw new Error('no intent reads expected');
      };
    }
  });

  test("an event is believed from the account the charge key was pinned to, not the store's account now", async () => {
    const { id, transactionId } = await pendingPix();
    const metadata = { notify_ref: checkoutSessionWorkflowId(id), store_id: store.store._id, charge_key: checkoutAttemptKey(id, 1) };
    await pinChargeAccount(stack.mongo.db, store.store._id, metadata.charge_key, 'acct_1Charged0Here');
    await setStoreAccount('acct_1Moved0Since');
    try {
      const fromNow = stripeEvent('payment_intent.succeeded', intent(transactionId, metadata.notify_ref, { metadata }), {
        account: 'acct_1Moved0Since',
      });
      expect(await sendSigned(fromNow)).toMatchObject({ status: 200, body: { status: 'ignored' } });
      const fromPlatform = stripeEvent('payment_intent.succeeded', intent(transactionId, metadata.notify_ref, { metadata }));
      expect(await sendSigned(fromPlatform)).toMatchObject({ status: 200, body: { status: 'ignored' } });
      expect((await sessionOf(id))!.payment_status).toBe('pending');
      const fromCharged = stripeEvent('payment_intent.succeeded', intent(transactionId, metadata.notify_ref, { metadata }), {
        account: 'acct_1Charged0Here',
      });
      expect(await sendSigned(fromCharged)).toMatchObject({ status: 200, body: { status: 'delivered' } });
      await waitFor(async () => ((await sessionOf(id))?.payment_status === 'paid' ? true : null), {
        timeoutMs: 20_000,
        description: 'the session paid by the event from the pinned account',
      });
    } finally {
      await setStoreAccount(null);
    }
  });
});
