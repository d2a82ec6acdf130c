// What this tests: the hosted checkout over real HTTP (no browser) with FerretDB, Temporal and a
// worker: the page (locale, currency switch, CSP, not rate limited like the API), the card paths of
// the test table (approved, declined then approved, review settled), the order the payment fills
// (metadata, client_reference_id, coupon, installments, pack), events exactly once and order.paid
// for a 2026-09-01 endpoint, buyer-field errors, and that card numbers reach no log and no stored
// document. PIX, expiry and subscriptions are in checkout-settlement.test.ts.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { collections } from '../../../store/collections';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { findOrder } from '../../../store/orders';
import { insertEndpoint } from '../../../store/webhook-endpoints';
import { CONTENT_SECURITY_POLICY } from '../../../api/pages';
import { startTestApi, type TestStore } from '../../support/api';
import {
  call,
  createSession,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  buyerForm,
  startLoggedApi,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';
import { waitFor } from '../../support/env';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;

const CARD_OK = '4242 4242 4242 4242';
const CARD_DECLINED = '4000 0000 0000 0002';
const CARD_REVIEW = '4000000000004954';

beforeAll(async () => {
  // The unauthenticated-API limit is covered by its own test below with the default limits.
  stack = await startCheckoutStack('checkout-pages', { ipRateLimit: 100_000 });
  store = await createTestStore(stack.mongo.db);
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
});

afterAll(async () => {
  await stack?.close();
});

const buyer = buyerForm;

async function page(path: string, base = stack.api.url) {
  const res = await fetch(`${base}${path}`, { redirect: 'manual' });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function post(path: string, form: Record<string, string>, base = stack.api.url) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, location: res.headers.get('location'), text: await res.text() };
}

async function newSession(body: Record<string, unknown>) {
  const res = await createSession(stack.api, store, body);
  expect(res.status).toBe(201);
  return res.body;
}

const session = async (id: string) => (await findCheckoutSession(stack.mongo.db, store.store._id, id))!;
const eventsOf = async (type: string, objectId: string) =>
  collections(stack.mongo.db).events.countDocuments({ store_id: store.store._id, type, data_json: { $regex: objectId } });
const customersWith = (email: string) => collections(stack.mongo.db).customers.find({ store_id: store.store._id, email }).toArray();
const customerCreatedFor = (email: string) =>
  collections(stack.mongo.db).events.countDocuments({
    store_id: store.store._id,
    type: 'customer.created',
    data_json: { $regex: email.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') },
  });

describe('the page', () => {
  test('renders the offer in the session locale with a strict CSP and no inline script; every spec locale has its own words', async () => {
    const pt = await newSession({ offer: catalog.oneOff._id, locale: 'pt', cancel_url: 'https://shop.example.com/back' });
    const res = await page(`/c/${pt.id}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.text).toContain('<html lang="pt">');
    expect(res.text).toContain('Photography Course (lifetime)');
    expect(res.text).toMatch(/R\$\s197,00/);
    expect(res.text).toContain('Pagar');
    expect(res.text).toContain('href="https://shop.example.com/back"');
    expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(res.text).not.toMatch(/\sstyle=/);

    const fr = await newSession({ offer: catalog.oneOff._id, locale: 'fr' });
    const frPage = await page(`/c/${fr.id}`);
    expect(frPage.text).toContain('<html lang="fr">');
    expect(frPage.text).toContain('Payer 197,00');
  });

  test('a session without a fixed currency offers the others and renders in the chosen one; a fixed one offers none', async () => {
    const open = await newSession({ offer: catalog.oneOff._id });
    const brl = await page(`/c/${open.id}`);
    expect(brl.text).toContain(`href="/c/${open.id}?currency=usd"`);
    const usd = await page(`/c/${open.id}?currency=usd`);
    expect(usd.text).toContain('$39.00');
    const fixed = await newSession({ offer: catalog.oneOff._id, currency: 'usd' });
    const fixedPage = await page(`/c/${fixed.id}`);
    expect(fixedPage.text).not.toContain('?currency=');
    expect(fixedPage.text).toContain('$39.00');
  });

  test("/c/{id} answers only on the checkout host or the store's custom domain; any other host gets the unavailable page", async () => {
    const s = await newSession({ offer: catalog.oneOff._id });
    const port = new URL(stack.api.url).port;
    // fetch cannot set Host: a plain request names the host the browser would have asked for.
    const at = (host: string, id = s.id) =>
      new Promise<number>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: `/c/${id}`, headers: { host } }, (res) => {
            res.resume();
            resolve(res.statusCode!);
          })
          .on('error', reject);
      });
    expect(await at(`127.0.0.1:${port}`)).toBe(200);
    expect(await at('look-alike.example')).toBe(404);
    // A store on its own domain: its sessions answer there (and on the checkout host), others' do not.
    const domain = `pay-${Date.now()}.shop.example`;
    const other = await createTestStore(stack.mongo.db);
    await collections(stack.mongo.db).stores.updateOne({ _id: other.store._id }, { $set: { custom_domain: domain } });
    const otherCatalog = await seedCheckoutCatalog(stack.mongo.db, other.store._id);
    const onDomain = (await createSession(stack.api, other, { offer: otherCatalog.oneOff._id })).body;
    expect(onDomain.url).toBe(`https://${domain}/c/${onDomain.id}`);
    expect(await at(domain, onDomain.id)).toBe(200);
    expect(await at(domain, s.id)).toBe(404);
  });

  test('an unknown session id shows the unavailable-link page with 404', async () => {
    const res = await page('/c/cs_doesnotexist');
    expect(res.status).toBe(404);
    expect(res.text).toContain('data-testid="unavailable"');
  });

  test('pages are not held to the unauthenticated API limit (10 a minute per address): a PIX page polls every 2 seconds', async () => {
    const limited = await startTestApi({ db: stack.mongo.db, temporal: stack.temporal.client, taskQueue: stack.taskQueue });
    try {
      const s = await newSession({ offer: catalog.oneOff._id });
      const statuses: number[] = [];
      for (let i = 0; i < 15; i++) statuses.push((await page(`/c/${s.id}/status`, limited.url)).status);
      statuses.push((await page(`/c/${s.id}`, limited.url)).status);
      expect(statuses.every((status) => status === 200)).toBe(true);
    } finally {
      await limited.close();
    }
  });

  test('the assets are served with a long cache and the script has no inline handlers', async () => {
    const js = await page('/assets/pages.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('cache-control')).toContain('max-age');
    expect((await page('/assets/pages.css')).status).toBe(200);
  });
});

describe('card payments', () => {
  test('an approved card completes the session once and fills the order from the session (pack, coupon, metadata, reference, installments)', async () => {
    const s = await newSession({
      offer: catalog.oneOff._id,
      pack: 5,
      discounts: [{ coupon: catalog.coupon.code.toLowerCase() }],
      metadata: { campaign: 'spring' },
      client_reference_id: 'user-7',
      success_url: 'https://shop.example.com/ok?cs={CHECKOUT_SESSION_ID}',
      redirect_delay: 3,
    });
    const form = buyer({ card_number: CARD_OK, card_expiry: '12/30', card_cvc: '123', installments: '3', method: 'card' });
    const paid = await post(`/c/${s.id}/pay`, form);
    expect(paid.status).toBe(303);
    expect(paid.location).toBe(`/c/${s.id}?done=1`);

    const doc = await session(s.id);
    expect({ status: doc.status, payment_status: doc.payment_status }).toEqual({ status: 'complete', payment_status: 'paid' });
    const order = (await findOrder(stack.mongo.db, store.store._id, doc.order!))!;
    expect(order).toMatchObject({
      status: 'paid',
      currency: 'brl',
      amount_subtotal: 98500,
      amount_discount: 9850,
      amount_total: 88650,
      billing_reason: 'purchase',
      order_type: 'checkout',
      recurrence: 'one_off',
      customer: doc.customer,
      customer_email: form.email,
      offer: catalog.oneOff._id,
      product: catalog.product._id,
      items: [{ kind: 'product', description: catalog.oneOff.name, quantity: 5, unit_amount: 19700, amount: 98500 }],
      payment_method_type: 'card',
      installments: 3,
      client_reference_id: 'user-7',
      checkout_session: s.id,
      coupon: catalog.coupon.code,
      metadata: [{ k: 'campaign', v: 'spring' }],
      livemode: false,
    });
    const customer = (await collections(stack.mongo.db).customers.findOne({ _id: doc.customer! }))!;
    expect(customer.email).toBe(form.email);
    expect(customer.metadata).toEqual([]);

    const api = (await call(stack.api, store.key, 'GET', `/v1/checkout/sessions/${s.id}`)).body;
    expect(api).toMatchObject({ status: 'complete', payment_status: 'paid', url: null, customer: doc.customer, order: order._id });
    expect(api.completed_at).toBeGreaterThan(0);
    const byCustomer = (await call(stack.api, store.key, 'GET', `/v1/checkout/sessions?customer=${doc.customer}`)).body;
    expect(byCustomer.data.map((x: { id: string }) => x.id)).toEqual([s.id]);

    const thanks = await page(paid.location!);
    expect(thanks.text).toContain('data-testid="thank-you"');
    expect(thanks.text).toContain(order._id);
    expect(thanks.text).toContain(`<meta http-equiv="refresh" content="3;url=https://shop.example.com/ok?cs=${s.id}">`);
    // Opening the paid link later shows the thank-you page without sending the buyer away again.
    const later = await page(`/c/${s.id}`);
    expect(later.text).toContain('data-testid="thank-you"');
    expect(later.text).not.toContain('http-equiv="refresh"');

    await waitFor(async () => (await eventsOf('invoice.paid', order._id)) === 1);
    expect(await eventsOf('checkout.session.completed', s.id)).toBe(1);
    expect(await eventsOf('customer.created', doc.customer!)).toBe(1);
    const completed = await collections(stack.mongo.db).events.findOne({ type: 'checkout.session.completed', data_json: { $regex: s.id } });
    expect(JSON.parse(completed!.data_json).object).toMatchObject({ id: s.id, status: 'complete', payment_status: 'paid', order: order._id });

    // Paying again is not possible: the session is complete.
    const again = await post(`/c/${s.id}/pay`, form);
    expect(again.location).toBe(`/c/${s.id}`);
  });

  test('a USD card purchase posting installments=3 is refused with the installments page error (nothing charged, no order); the USD page offers no installments, the BRL page does', async () => {
    const s = await newSession({ offer: catalog.oneOff._id });
    expect((await page(`/c/${s.id}`)).text).toContain('id="installments"');
    expect((await page(`/c/${s.id}?currency=usd`)).text).not.toContain('id="installments"');
    const form = buyer({ card_number: CARD_OK, card_expiry: '12/30', card_cvc: '123', installments: '3', method: 'card', currency: 'usd' });
    const refused = await post(`/c/${s.id}/pay`, form);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('data-testid="error"');
    expect(refused.text).toContain('Installments are not available in this currency');
    expect(await stack.mongo.db.collection('provider_test_charges').countDocuments({ key: { $regex: s.id } })).toBe(0);
    expect(await session(s.id)).toMatchObject({ status: 'open', order: null });
    // Paying the same in full goes through, and the order says so.
    const paid = await post(`/c/${s.id}/pay`, { ...form, installments: '1' });
    expect(paid.location).toBe(`/c/${s.id}?done=1`);
    const done = await session(s.id);
    expect((await findOrder(stack.mongo.db, store.store._id, done.order!))!).toMatchObject({ currency: 'usd', installments: 1 });
  });

  test('five declined cards lock card payments on the session (card testing): the sixth card is refused before the provider, the page says so and offers PIX, which still pays', async () => {
    const s = await newSession({ offer: catalog.oneOff._id });
    const form = buyer({ method: 'card' });
    for (let i = 0; i < 5; i++) expect((await post(`/c/${s.id}/pay`, { ...form, card_number: CARD_DECLINED })).status).toBe(402);
    const ledgerBefore = await stack.mongo.db.collection('provider_test_charges').countDocuments({ key: { $regex: s.id } });
    expect(ledgerBefore).toBe(5);
    const sixth = await post(`/c/${s.id}/pay`, { ...form, card_number: CARD_OK });
    expect(sixth.status).toBe(400);
    expect(sixth.text).toContain('card payments are locked');
    expect(await stack.mongo.db.collection('provider_test_charges').countDocuments({ key: { $regex: s.id } })).toBe(5);
    const shown = await page(`/c/${s.id}`);
    expect(shown.text).toContain('data-testid="card-locked"');
    expect(shown.text).toMatch(/value="card"[^>]* disabled/);
    const pix = await post(`/c/${s.id}/pay`, { ...form, method: 'pix' });
    expect(pix.location).toBe(`/c/${s.id}?done=1`);
    expect((await session(s.id)).payment_status).toBe('pending');
  });

  test('payment submits are limited per address across the pages (PAGE_POST_RATE_LIMIT): past it, 429 with Retry-After and nothing reaches the provider', async () => {
    const limited = await startTestApi({
      db: stack.mongo.db,
      temporal: stack.temporal.client,
      taskQueue: stack.taskQueue,
      config: { pagePostRateLimit: 3, pagePostRateWindowMs: 60_000, ipRateLimit: 100_000 },
    });
    try {
      const s = await newSession({ offer: catalog.oneOff._id });
      const form = { ...buyer({ method: 'card' }), card_number: CARD_DECLINED };
      const from = (ip: string, path = `/c/${s.id}/pay`) =>
        fetch(`${limited.url}${path}`, {
          method: 'POST',
          redirect: 'manual',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
          body: new URLSearchParams(form).toString(),
        });
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await from('203.0.113.7')).status);
      expect(statuses).toEqual([402, 402, 402, 429]);
      const refused = await from('203.0.113.7');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await refused.text()).toContain('data-testid="too-many-attempts"');
      // The limit is the route's: a percent-encoded path reaches the same route and counts in the same window.
      for (const encoded of [`/c/${s.id}/p%61y`, `/c/${s.id}/%70ay`]) expect((await from('203.0.113.7', encoded)).status).toBe(429);
      expect(await stack.mongo.db.collection('provider_test_charges').countDocuments({ key: { $regex: s.id } })).toBe(3);
      // Another address is not held back by this one.
      expect((await from('203.0.113.8')).status).toBe(402);
    } finally {
      await limited.close();
    }
  });

  test('a declined card keeps the session open with the message, and a retry with an approved card completes it', async () => {
    const s = await newSession({ offer: catalog.oneOff._id, locale: 'es' });
    const form = buyer({ method: 'card' });
    const declined = await post(`/c/${s.id}/pay`, { ...form, card_number: CARD_DECLINED });
    expect(declined.status).toBe(402);
    expect(declined.text).toContain('Tu tarjeta fue rechazada');
    expect(declined.text).not.toContain('4000 0000 0000 0002');
    const open = await session(s.id);
    expect({ status: open.status, last_error: open.last_error?.code }).toEqual({ status: 'open', last_error: 'card_declined' });
    expect((await page(`/c/${s.id}`)).text).toContain('Tu tarjeta fue rechazada');

    const approved = await post(`/c/${s.id}/pay`, { ...form, card_number: CARD_OK });
    expect(approved.location).toBe(`/c/${s.id}?done=1`);
    expect((await session(s.id)).payment_status).toBe('paid');
    expect(await eventsOf('checkout.session.completed', s.id)).toBe(1);
  });

  test('a declined card by a new e-mail leaves no customer and no customer.created; the approved retry creates exactly one, with metadata {}, named by the session', async () => {
    const s = await newSession({ offer: catalog.oneOff._id });
    const form = buyer({ method: 'card' });
    const declined = await post(`/c/${s.id}/pay`, { ...form, card_number: CARD_DECLINED });
    expect(declined.status).toBe(402);
    expect(await customersWith(form.email)).toEqual([]);
    expect(await customerCreatedFor(form.email)).toBe(0);
    expect((await session(s.id)).customer).toBeNull();

    const approved = await post(`/c/${s.id}/pay`, { ...form, card_number: CARD_OK });
    expect(approved.location).toBe(`/c/${s.id}?done=1`);
    const created = await customersWith(form.email);
    expect(created).toHaveLength(1);
    const done = await session(s.id);
    expect(done.customer).toBe(created[0]._id);
    expect((await findOrder(stack.mongo.db, store.store._id, done.order!))!.customer).toBe(created[0]._id);
    const api = await call(stack.api, store.key, 'GET', `/v1/customers/${created[0]._id}`);
    expect(api.body).toMatchObject({ id: created[0]._id, email: form.email, metadata: {} });
    expect(await customerCreatedFor(form.email)).toBe(1);
    expect(await eventsOf('customer.created', created[0]._id)).toBe(1);
  });

  test('two sessions paid at once by one new e-mail create one customer and one customer.created, named by both', async () => {
    const [a, b] = await Promise.all([newSession({ offer: catalog.oneOff._id }), newSession({ offer: catalog.oneOff._id })]);
    const form = buyer({ method: 'card', card_number: CARD_OK });
    const paid = await Promise.all([post(`/c/${a.id}/pay`, form), post(`/c/${b.id}/pay`, form)]);
    expect(paid.map((res) => res.location)).toEqual([`/c/${a.id}?done=1`, `/c/${b.id}?done=1`]);
    const created = await customersWith(form.email);
    expect(created).toHaveLength(1);
    expect([(await session(a.id)).customer, (await session(b.id)).customer]).toEqual([created[0]._id, created[0]._id]);
    expect(await customerCreatedFor(form.email)).toBe(1);
  });

  test('a card in review completes the session as pending; the test connection button settles it paid (async_payment_succeeded)', async () => {
    const s = await newSession({ offer: catalog.oneOff._id });
    const res = await post(`/c/${s.id}/pay`, buyer({ method: 'card', card_number: CARD_REVIEW }));
    expect(res.location).toBe(`/c/${s.id}?done=1`);
    const pending = await session(s.id);
    expect({ status: pending.status, payment_status: pending.payment_status }).toEqual({ status: 'complete', payment_status: 'pending' });
    expect((await findOrder(stack.mongo.db, store.store._id, pending.order!))!.status).toBe('pending');
    const pendingPage = await page(`/c/${s.id}`);
    expect(pendingPage.text).toContain('data-testid="pending"');
    expect(pendingPage.text).toContain(`data-poll="/c/${s.id}/status"`);
    expect((await page(`/c/${s.id}/status`)).text).toBe(JSON.stringify({ status: 'complete', payment_status: 'pending', next: `/c/${s.id}` }));

    const settled = await post(`/c/${s.id}/test/settle`, { outcome: 'paid' });
    expect(settled.status).toBe(303);
    await waitFor(async () => (await session(s.id)).payment_status === 'paid');
    expect((await findOrder(stack.mongo.db, store.store._id, pending.order!))!.status).toBe('paid');
    await waitFor(async () => (await eventsOf('checkout.session.async_payment_succeeded', s.id)) === 1);
    expect(await eventsOf('checkout.session.completed', s.id)).toBe(1);
    expect(JSON.parse((await page(`/c/${s.id}/status`)).text)).toEqual({ status: 'complete', payment_status: 'paid', next: `/c/${s.id}?done=1` });
  });

  test('a session with a 2-character customer_name ("Jo") prefills a field that accepts it, the buyer pays with it, and the customer record gets it', async () => {
    const s = await newSession({ offer: catalog.oneOff._id, customer_name: 'Jo' });
    const form = await page(`/c/${s.id}`);
    const nameInput = /<input[^>]*id="name"[^>]*>/.exec(form.text)![0];
    expect(nameInput).toContain('value="Jo"');
    expect(Number(/minlength="(\d+)"/.exec(nameInput)![1])).toBeLessThanOrEqual(2);
    const paid = await post(`/c/${s.id}/pay`, buyer({ method: 'card', card_number: CARD_OK, name: 'Jo' }));
    expect({ status: paid.status, location: paid.location }).toEqual({ status: 303, location: `/c/${s.id}?done=1` });
    const done = await session(s.id);
    expect(done.status).toBe('complete');
    expect((await collections(stack.mongo.db).customers.findOne({ _id: done.customer! }))!.name).toBe('Jo');
  });

  test('buyer fields are checked before anything is charged: missing name, invalid document, refused e-mail, invalid card number', async () => {
    const s = await newSession({ offer: catalog.oneOff._id });
    const noName = await post(`/c/${s.id}/pay`, { ...buyer({ method: 'card', card_number: CARD_OK }), name: '' });
    expect(noName.status).toBe(400);
    expect(noName.text).toContain('name');
    const badDoc = await post(`/c/${s.id}/pay`, buyer({ method: 'card', card_number: CARD_OK, document_number: '111.111.111' }));
    expect(badDoc.status).toBe(400);
    expect(badDoc.text).toContain('aria-invalid="true"');
    const rejected = await post(`/c/${s.id}/pay`, buyer({ method: 'card', card_number: CARD_OK, email: `x${Date.now()}@reject.test` }));
    expect(rejected.status).toBe(400);
    expect(rejected.text).toContain('could not register your details');
    const badCard = await post(`/c/${s.id}/pay`, buyer({ method: 'card', card_number: '1234' }));
    expect(badCard.status).toBe(400);
    expect(badCard.text).toContain('card number is not valid');
    expect((await session(s.id)).status).toBe('open');
    expect(await stack.mongo.db.collection('provider_test_charges').countDocuments({ key: { $regex: s.id } })).toBe(0);
  });
});

describe('pix payments', () => {
  test("after a declined card, generating the PIX code creates the new buyer's customer (one customer.created) and fills its order pending", async () => {
    const s = await newSession({ offer: catalog.oneOff._id });
    const form = buyer({ method: 'pix' });
    expect((await post(`/c/${s.id}/pay`, { ...form, method: 'card', card_number: CARD_DECLINED })).status).toBe(402);
    expect(await customersWith(form.email)).toEqual([]);
    const res = await post(`/c/${s.id}/pay`, form);
    expect(res.location).toBe(`/c/${s.id}?done=1`);
    const pending = await session(s.id);
    expect({ status: pending.status, payment_status: pending.payment_status }).toEqual({ status: 'complete', payment_status: 'pending' });
    const created = await customersWith(form.email);
    expect(created).toHaveLength(1);
    expect(created[0].metadata).toEqual([]);
    expect(pending.customer).toBe(created[0]._id);
    expect(await findOrder(stack.mongo.db, store.store._id, pending.order!)).toMatchObject({
      status: 'pending',
      customer: created[0]._id,
      customer_email: form.email,
    });
    expect(await customerCreatedFor(form.email)).toBe(1);
  });
});

describe('original catalog', () => {
  test('a store with a 2026-09-01 endpoint gets order.paid (carrying the order) for a checkout purchase, and no checkout.session events there', async () => {
    const legacyStore = await createTestStore(stack.mongo.db);
    const legacyCatalog = await seedCheckoutCatalog(stack.mongo.db, legacyStore.store._id);
    await insertEndpoint(stack.mongo.db, {
      storeId: legacyStore.store._id,
      url: 'https://hooks.invalid/legacy',
      description: null,
      enabledEvents: ['*'],
      apiVersion: '2026-09-01',
    });
    const s = (await createSession(stack.api, legacyStore, { offer: legacyCatalog.oneOff._id })).body;
    expect((await post(`/c/${s.id}/pay`, buyer({ method: 'card', card_number: CARD_OK }))).location).toBe(`/c/${s.id}?done=1`);
    const orderId = (await findCheckoutSession(stack.mongo.db, legacyStore.store._id, s.id))!.order!;
    const events = collections(stack.mongo.db).events;
    const legacy = await waitFor(async () => {
      const docs = await events.find({ store_id: legacyStore.store._id, api_version: '2026-09-01' }).toArray();
      return docs.some((d) => d.type === 'order.paid') ? docs : null;
    });
    expect(legacy.map((d) => d.type).filter((t) => t === 'order.paid' || t.startsWith('checkout.'))).toEqual(['order.paid']);
    expect(JSON.parse(legacy.find((d) => d.type === 'order.paid')!.data_json).object).toMatchObject({ id: orderId, object: 'order', status: 'paid' });
    expect(await events.countDocuments({ store_id: legacyStore.store._id, api_version: '2026-11-01', type: 'checkout.session.completed' })).toBe(1);
  });
});

describe('card data', () => {
  test('card numbers reach neither the request log nor any stored document', async () => {
    const app = await startLoggedApi(stack);
    const base = app.url;
    try {
      const s = await newSession({ offer: catalog.oneOff._id });
      const form = buyer({ method: 'card', card_cvc: '987' });
      await post(`/c/${s.id}/pay`, { ...form, card_number: '4000000000000002' }, base);
      await post(`/c/${s.id}/pay`, { ...form, card_number: '4242424242424242' }, base);
      expect((await session(s.id)).payment_status).toBe('paid');
    } finally {
      await app.close();
    }
    expect(app.logged().length).toBeGreaterThan(0);
    for (const secret of ['4000000000000002', '4242424242424242', '4242 4242', 'card_cvc']) expect(app.logged()).not.toContain(secret);

    for (const info of await stack.mongo.db.listCollections().toArray()) {
      const docs = await stack.mongo.db.collection(info.name).find({}).toArray();
      const text = JSON.stringify(docs);
      expect(text, info.name).not.toContain('4000000000000002');
      expect(text, info.name).not.toContain('4242424242424242');
    }
  });
});
