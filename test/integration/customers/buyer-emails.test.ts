// What this tests: the buyer e-mails and the plan quota through real HTTP, FerretDB, Temporal, a
// worker and Mailpit (the global setup's SMTP_URL). A checkout purchase, a subscription's paid cycle,
// a one-off and a usage charge each send one purchase confirmation, and DELETE one cancellation
// e-mail, to the buyer, in the buyer's language (session, then customer, then the store's country),
// from the store's name, naming product, amount and period. A retried buyer e-mail activity sends nothing
// twice, and a store that turned the confirmation off sends none. The quota counts the checkout, the
// cycle, the one-off and the usage charge as one order each, and usage events not at all.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { runAdmin } from '../../../admin/cli';
import { createBuyerEmailActivities } from '../../../activities/buyer-emails';
import { mailFromEnv, smtpMailer, type Mailer } from '../../../adapters/email/smtp';
import { formatMoney as emailMoney } from '../../../i18n/format';
import { collections, type CustomerDoc } from '../../../store/collections';
import { createMeter } from '../../../store/meters';
import { insertCustomer, newCustomerDoc } from '../../../store/customers';
import { ordersCollection, type OrderDoc } from '../../../store/orders';
import { sentMailAbout, sentMailCollection } from '../../../store/sent-mail';
import { findSubscription, type SubscriptionDoc } from '../../../store/subscriptions';
import { usagePeriodsCollection } from '../../../store/usage';
import { buyerEmailMessageId } from '../../../services/buyer-emails';
import { usageClient } from '../../../services/usage/client';
import { checkoutSessionWorkflowId } from '../../../workflows/checkout-session/messages';
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
import { mailpitMessage, messagesTo, type MailpitSummary } from '../../support/mailpit';
import { seedUsageOffer, seedUsageSubscription } from '../../support/usage';

const STORE_NAME = 'Loja Aurora';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;

beforeAll(async () => {
  stack = await startCheckoutStack('buyer-emails');
  store = await createTestStore(stack.mongo.db, { name: STORE_NAME, country: 'BR' });
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
  // Its buyers type their addresses on test purchases: the store opts in to mailing them.
  await optInTestBuyerEmails(store);
});

async function optInTestBuyerEmails(s: TestStore): Promise<void> {
  const on = await runAdmin(['stores', 'set', s.store._id, '--test-buyer-emails', 'true'], {
    MONGODB_URI: inject('mongoUri'),
    MONGODB_DB: db().databaseName,
  });
  expect(on.code, on.output).toBe(0);
  expect(on.output).toContain('buyer e-mails of test purchases to visitor-typed addresses true');
}

afterAll(async () => {
  await stack?.close();
});

const db = () => stack.mongo.db;

async function quota(): Promise<{ orders: number; by_type: Record<string, number> }> {
  const { code, output } = await runAdmin(['stores', 'quota', store.store._id, '--json'], {
    MONGODB_URI: inject('mongoUri'),
    MONGODB_DB: db().databaseName,
  });
  expect(code, output).toBe(0);
  return JSON.parse(output);
}

/** The hosted page's pay button with a new buyer; returns the buyer's e-mail. */
async function payByCard(sessionId: string): Promise<string> {
  const form = buyerForm({ method: 'card', card_number: '4242424242424242' });
  const res = await fetch(`${stack.api.url}/c/${sessionId}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  expect(res.status).toBe(303);
  return form.email;
}

/** A paid one-off checkout (its workflow finished); the buyer's e-mail and the order. */
async function checkoutPurchase(
  body: Record<string, unknown> = {},
  at: { store: TestStore; catalog: CheckoutCatalog } = { store, catalog },
): Promise<{ email: string; order: OrderDoc; sessionId: string }> {
  const session = await createSession(stack.api, at.store, { offer: at.catalog.oneOff._id, ...body });
  expect(session.status, JSON.stringify(session.body)).toBe(201);
  const email = await payByCard(session.body.id);
  await stack.temporal.client.workflow.getHandle(checkoutSessionWorkflowId(session.body.id)).result();
  const order = await ordersCollection(db()).findOne({ store_id: at.store.store._id, checkout_session: session.body.id });
  expect(order?.status).toBe('paid');
  return { email, order: order!, sessionId: session.body.id };
}

/** Waits until `address` has `count` messages whose subject starts with `prefix`; returns them. */
function mailArrives(address: string, prefix: string, count = 1): Promise<MailpitSummary[]> {
  return waitFor(
    async () => {
      const found = (await messagesTo(address)).filter((message) => message.Subject.startsWith(prefix));
      return found.length >= count ? found : null;
    },
    { timeoutMs: 30_000, intervalMs: 200, description: `${count} message(s) "${prefix}..." to ${address}` },
  );
}

/** Every buyer e-mail about `subjectId` was handed to the SMTP server (so Mailpit holds everything it will). */
function buyerEmailsSent(subjectId: string, count = 1, storeId = store.store._id) {
  return waitFor(
    async () => {
      const docs = await sentMailAbout(db(), storeId, subjectId);
      return docs.length >= count && docs.every((doc) => doc.status === 'sent') ? docs : null;
    },
    { timeoutMs: 30_000, description: `${count} buyer e-mail(s) about ${subjectId} sent` },
  );
}

describe('purchase confirmations', () => {
  test('a checkout purchase sends one confirmation, in the session language, from the store name, with product, amount and date', async () => {
    const { email, order } = await checkoutPurchase({ locale: 'de' });
    const [summary] = await mailArrives(email, 'Zahlung bestätigt: ');
    await buyerEmailsSent(order._id);
    expect(await messagesTo(email)).toHaveLength(1);

    const message = await mailpitMessage(summary.ID);
    expect(message.From).toEqual({ Name: STORE_NAME, Address: mailFromEnv() });
    expect(message.To.map((to) => to.Address)).toEqual([email]);
    const amount = emailMoney(19700, 'brl', 'de');
    expect(message.Subject).toContain('Photography Course');
    expect(message.Subject).toContain(amount);
    expect(message.Subject).toContain('Einmalkauf');
    expect(message.Text).toContain(`Produkt: Photography Course`);
    expect(message.Text).toContain(`Betrag: ${amount}`);
    expect(message.Text).toContain(`Bestellung: ${order._id}`);
    expect(message.HTML).toContain('<html lang="de">');
    expect(`<${message.MessageID}>`).toBe(
      buyerEmailMessageId(`${checkoutSessionWorkflowId(order.checkout_session!)}/payment-confirmation`, mailFromEnv()),
    );
  });

  test('without a session or customer language the e-mail is in the store country language (BR: Portuguese)', async () => {
    const { email, order } = await checkoutPurchase();
    const [summary] = await mailArrives(email, 'Pagamento confirmado: ');
    await buyerEmailsSent(order._id);
    expect((await mailpitMessage(summary.ID)).Text).toContain(`Valor: ${emailMoney(19700, 'brl', 'pt')}`);
    expect(await messagesTo(email)).toHaveLength(1);
  });

  test('a retried buyer e-mail activity sends nothing twice: a failed hand-off is retried once, a repeat after success sends nothing', async () => {
    const { email, order } = await checkoutPurchase();
    await buyerEmailsSent(order._id);
    const real = smtpMailer(process.env.SMTP_URL!);
    let handOffs = 0;
    // The first attempt fails before the server has the message (the server away); later ones go through.
    const flaky: Mailer = {
      target: real.target,
      send: async (mail) => {
        handOffs += 1;
        if (handOffs === 1) throw new Error('connect ECONNREFUSED (first attempt)');
        return real.send(mail);
      },
      close: () => real.close(),
    };
    const activities = createBuyerEmailActivities({ db: db(), mailer: flaky, mailFrom: mailFromEnv() });
    const input = { storeId: store.store._id, orderId: order._id, key: `retried/${order._id}/payment-confirmation` };
    await expect(activities.sendPaymentConfirmation(input)).rejects.toThrow(/ECONNREFUSED/);
    expect(await activities.sendPaymentConfirmation(input)).toBe('sent');
    expect(await activities.sendPaymentConfirmation(input)).toBe('already_sent');
    expect(await activities.sendPaymentConfirmation(input)).toBe('already_sent');
    real.close();

    expect(handOffs).toBe(2);
    const messageId = buyerEmailMessageId(input.key, mailFromEnv()).slice(1, -1);
    expect((await messagesTo(email)).filter((message) => message.MessageID === messageId)).toHaveLength(1);
    expect(await sentMailCollection(db()).findOne({ _id: input.key })).toMatchObject({ status: 'sent', attempts: 2, to: email, language: 'pt' });
  });

  test('a store that turned its purchase confirmation e-mail off sends none (recorded as skipped)', async () => {
    const off = await runAdmin(['stores', 'set', store.store._id, '--purchase-confirmation-email', 'false'], {
      MONGODB_URI: inject('mongoUri'),
      MONGODB_DB: db().databaseName,
    });
    expect(off.code, off.output).toBe(0);
    expect(off.output).toContain('purchase confirmation e-mail false');
    try {
      const { email, order } = await checkoutPurchase();
      const [record] = await waitFor(async () => {
        const docs = await sentMailAbout(db(), store.store._id, order._id);
        return docs.length > 0 ? docs : null;
      });
      expect(record).toMatchObject({ status: 'skipped', skipped_reason: 'store_disabled', to: email });
      expect(await messagesTo(email)).toEqual([]);
    } finally {
      await collections(db()).stores.updateOne({ _id: store.store._id }, { $unset: { purchase_confirmation_email: '' } });
    }
  });
});

describe('a subscription: its paid cycle, a one-off charge, usage, DELETE, and the plan quota', () => {
  let customer: CustomerDoc;
  let sub: SubscriptionDoc;
  const deps = () => ({ db: db(), temporal: stack.temporal.client, taskQueue: stack.taskQueue });

  beforeAll(async () => {
    const email = `buyer-emails-${Math.random().toString(36).slice(2, 10)}@example.com`;
    ({ customer } = await insertCustomer(
      db(),
      newCustomerDoc(store.store._id, { email, name: 'Claire Martin', phone: '+5511999990000', locale: 'fr' }, {}),
    ));
  });

  test('the first cycle charged by the workflow sends one confirmation in the customer language, naming the period paid for', async () => {
    const before = await quota();
    const offer = await seedUsageOffer(db(), store.store._id);
    // Left to the workflow: it charges the first cycle at once (a renewal order).
    ({ subscription: sub } = await seedUsageSubscription(deps(), { store: store.store, offer, customer, firstPeriodPaid: false }));
    const paid = await waitFor(
      async () => {
        const current = await findSubscription(db(), store.store._id, sub._id);
        return current?.status === 'active' && current.current_period_end ? current : null;
      },
      { timeoutMs: 30_000, description: 'the first cycle paid' },
    );
    const order = (await ordersCollection(db()).findOne({ store_id: store.store._id, subscription: sub._id, order_type: 'renewal' }))!;

    const [summary] = await mailArrives(customer.email, 'Paiement confirmé : ');
    await buyerEmailsSent(order._id);
    const message = await mailpitMessage(summary.ID);
    expect(message.From.Name).toBe(STORE_NAME);
    expect(message.Text).toContain('Bonjour Claire Martin,');
    expect(message.Text).toContain(`Montant: ${emailMoney(4990, 'brl', 'fr')}`);
    expect(message.Subject).toContain(emailMoney(4990, 'brl', 'fr'));
    // The period: "du <start> au <end>" of the cycle it paid for.
    expect(message.Text).toMatch(/Période: du .+ au .+/);
    expect(paid.current_period_start).not.toBeNull();
    expect((await quota()).orders).toBe(before.orders + 1);
  });

  test('a one-off charge (POST /v1/subscriptions/{id}/charges) sends one confirmation; its replay sends nothing more', async () => {
    const before = await quota();
    for (let i = 0; i < 2; i++) {
      const charge = await call(stack.api, store.key, 'POST', `/v1/subscriptions/${sub._id}/charges`, {
        json: { amount: 1500, description: 'Extra credits' },
        headers: { 'idempotency-key': `buyer-emails-charge-${sub._id}` },
      });
      // 201 for the charge, 200 for its replay.
      expect(charge.status, JSON.stringify(charge.body)).toBe(i === 0 ? 201 : 200);
    }
    const order = await waitFor(() => ordersCollection(db()).findOne({ store_id: store.store._id, subscription: sub._id, billing_reason: 'manual' }));
    await buyerEmailsSent(order._id);
    const found = await mailArrives(customer.email, `Paiement confirmé : Image API: Extra credits, ${emailMoney(1500, 'brl', 'fr')}`);
    expect(found).toHaveLength(1);
    expect((await quota()).orders).toBe(before.orders + 1);
  });

  test('usage events add nothing to the quota; DELETE sends one cancellation e-mail, and the usage charge it closes counts once and is confirmed', async () => {
    const storeId = store.store._id;
    const meter = await createMeter(db(), { storeId, displayName: 'Images processed', eventName: `image.${sub._id.toLowerCase()}` });
    const item = await call(stack.api, store.key, 'POST', `/v1/subscriptions/${sub._id}/usage_items`, {
      json: { meter: meter._id, unit_amount: 250 },
    });
    expect(item.status, JSON.stringify(item.body)).toBe(201);
    await waitFor(async () => (await usagePeriodsCollection(db()).findOne({ store_id: storeId, subscription: sub._id, status: 'open' })) ?? null, {
      timeoutMs: 20_000,
      description: 'the usage period open',
    });
    const before = await quota();
    const events = await call(stack.api, store.key, 'POST', '/v1/billing/meter_events/batch', {
      json: { events: Array.from({ length: 4 }, () => ({ event_name: meter.event_name, payload: { customer_id: customer._id, value: 1 } })) },
    });
    expect(events.body.accepted, JSON.stringify(events.body)).toBe(4);
    expect(await quota()).toEqual(before);

    const canceled = await call(stack.api, store.key, 'DELETE', `/v1/subscriptions/${sub._id}`);
    expect([canceled.status, canceled.body.status]).toEqual([200, 'canceled']);
    const again = await call(stack.api, store.key, 'DELETE', `/v1/subscriptions/${sub._id}`);
    expect(again.status).toBe(400);
    // The routine's nudge: the usage workflow sees the subscription ended and closes the period now.
    await usageClient(stack.temporal.client, stack.taskQueue).signalRecompute(sub);

    const [cancellationMail] = await mailArrives(customer.email, 'Abonnement résilié : ');
    const cancellation = await mailpitMessage(cancellationMail.ID);
    expect(cancellation.Subject).toBe('Abonnement résilié : Image API');
    expect(cancellation.Text).toContain(`Prix: ${emailMoney(4990, 'brl', 'fr')} par mois`);
    expect(cancellation.Text).toContain(`Abonnement: ${sub._id}`);

    const period = await waitFor(
      async () => {
        const found = await usagePeriodsCollection(db()).findOne({ store_id: storeId, subscription: sub._id });
        return found?.charge_state === 'charged' ? found : null;
      },
      { timeoutMs: 30_000, description: 'the usage period charged' },
    );
    const usageOrder = (await ordersCollection(db()).findOne({ store_id: storeId, subscription: sub._id, billing_reason: 'usage' }))!;
    expect(usageOrder.amount_total).toBe(period.amount_total);
    await buyerEmailsSent(usageOrder._id);
    await buyerEmailsSent(sub._id);
    const usageMail = await mailArrives(customer.email, `Paiement confirmé : Image API`, 3);
    expect(usageMail.filter((message) => message.Subject.includes(emailMoney(period.amount_total, 'brl', 'fr')))).toHaveLength(1);

    const after = await quota();
    expect(after.orders).toBe(before.orders + 1);
    // Everything this customer got: the cycle, the one-off charge, the usage charge, one cancellation.
    const all = await messagesTo(customer.email);
    expect(all.map((message) => message.Subject.split(':')[0].trim()).sort()).toEqual([
      'Abonnement résilié',
      'Paiement confirmé',
      'Paiement confirmé',
      'Paiement confirmé',
    ]);
  });

  test('the quota counts the checkouts, the cycle, the one-off and the usage charge, by type', async () => {
    const { orders, by_type } = await quota();
    const paid = await ordersCollection(db()).countDocuments({ store_id: store.store._id, status: 'paid' });
    expect(orders).toBe(paid);
    expect(by_type).toEqual({ checkout: 4, renewal: 1, api: 2 });
  });
});

describe('who may be mailed, and how much', () => {
  /** A store of its own with the checkout catalog (not opted in unless the test does it). */
  async function newStore(name: string) {
    const s = await createTestStore(db(), { name, country: 'BR' });
    return { store: s, catalog: await seedCheckoutCatalog(db(), s.store._id) };
  }

  const recordOf = (storeId: string, orderId: string) =>
    waitFor(async () => {
      const docs = await sentMailAbout(db(), storeId, orderId);
      return docs.length > 0 && docs.every((doc) => doc.status !== 'sending') ? docs : null;
    });

  test('a test purchase mails no address only its visitor typed unless the store opted in (admin CLI); an address the store gave is mailed', async () => {
    const at = await newStore('Quiet Shop');
    const typed = await checkoutPurchase({}, at);
    expect(await recordOf(at.store.store._id, typed.order._id)).toMatchObject([
      { status: 'skipped', skipped_reason: 'test_visitor_address', to: typed.email },
    ]);
    expect(await messagesTo(typed.email)).toEqual([]);

    const given = `given-${Math.random().toString(36).slice(2, 10)}@example.com`;
    const bought = await checkoutPurchase({ customer_email: given }, at);
    await buyerEmailsSent(bought.order._id, 1, at.store.store._id);
    expect(await mailArrives(given, 'Pagamento confirmado')).toHaveLength(1);

    await optInTestBuyerEmails(at.store);
    const later = await checkoutPurchase({}, at);
    await buyerEmailsSent(later.order._id, 1, at.store.store._id);
    expect(await mailArrives(later.email, 'Pagamento confirmado')).toHaveLength(1);
  });

  test('past the hourly cap per recipient, then per store, an e-mail is skipped and recorded so, and Mailpit gets nothing more', async () => {
    const at = await newStore('Busy Shop');
    await optInTestBuyerEmails(at.store);
    const first = await checkoutPurchase({}, at);
    await buyerEmailsSent(first.order._id, 1, at.store.store._id);
    // Store: 1 sent by the worker so far; recipient: 1.
    const real = smtpMailer(process.env.SMTP_URL!);
    const activities = createBuyerEmailActivities({ db: db(), mailer: real, mailFrom: mailFromEnv(), caps: { perStore: 3, perRecipient: 2 } });
    const send = (order: OrderDoc, n: number) =>
      activities.sendPaymentConfirmation({ storeId: at.store.store._id, orderId: order._id, key: `capped/${n}/${order._id}/payment-confirmation` });
    try {
      expect(await send(first.order, 1)).toBe('sent');
      expect(await send(first.order, 2)).toBe('skipped');
      expect(await sentMailCollection(db()).findOne({ _id: `capped/2/${first.order._id}/payment-confirmation` })).toMatchObject({
        status: 'skipped',
        skipped_reason: 'recipient_hourly_cap',
      });
      const second = await checkoutPurchase({}, at);
      await buyerEmailsSent(second.order._id, 1, at.store.store._id);
      expect(await send(second.order, 1)).toBe('skipped');
      expect(await sentMailCollection(db()).findOne({ _id: `capped/1/${second.order._id}/payment-confirmation` })).toMatchObject({
        skipped_reason: 'store_hourly_cap',
      });
      expect(await messagesTo(first.email)).toHaveLength(2);
      expect(await messagesTo(second.email)).toHaveLength(1);
    } finally {
      real.close();
    }
  });
});
