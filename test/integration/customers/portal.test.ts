// What this tests: POST /v1/billing_portal/sessions (object, portal address by slug or custom
// domain, portal_disabled, portal_unavailable, resource_missing) and the portal pages over real HTTP:
// the sign-in link shows whose account it opens, signs in on one click from the portal itself (not from
// another site), works once within 15 minutes and sets an HttpOnly (Secure behind https) session cookie; the account
// page lists subscriptions and orders; cancel at period end, reactivate and card replacement go
// through the subscription workflow; forged forms and other customers' subscriptions change nothing;
// a store that turns its portal off closes sign-in, the account and its actions at once.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { collections } from '../../../store/collections';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { hashToken, portalLinksCollection } from '../../../store/portal-sessions';
import { subscriptionsCollection, type SubscriptionDoc } from '../../../store/subscriptions';
import { startTestApi, type TestStore } from '../../support/api';
import {
  call,
  createSession,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  startLoggedApi,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';
import { waitFor } from '../../support/env';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;
let customerId: string;
let subscriptionId: string;
let orderId: string;
const slug = `portal-${Math.random().toString(36).slice(2, 8)}`;

async function get(path: string, cookie?: string) {
  const res = await fetch(path.startsWith('http') ? path : `${stack.api.url}${path}`, { redirect: 'manual', headers: cookie ? { cookie } : {} });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function post(path: string, form: Record<string, string>, cookie?: string, headers: Record<string, string> = {}) {
  const res = await fetch(path.startsWith('http') ? path : `${stack.api.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}), ...headers },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, headers: res.headers, location: res.headers.get('location'), text: await res.text() };
}

/** The link's page, then its "Continue as ..." button (a form posted back to the link from the portal's own origin). */
async function openAndContinue(url: string) {
  const page = await get(url);
  const local = url.startsWith('http') ? `${stack.api.url}${new URL(url).pathname}` : url;
  return { page, signedIn: await post(local, {}, undefined, { origin: stack.api.url }) };
}

/** A customer with a subscription bought through the hosted checkout (card 4242). */
async function subscribeThroughCheckout(email: string) {
  const s = (await createSession(stack.api, store, { offer: catalog.monthly._id, customer_email: email })).body;
  const paid = await post(`/c/${s.id}/pay`, {
    method: 'card',
    card_number: '4242424242424242',
    name: 'Portal Customer',
    phone: '+5511987654321',
    document_type: 'cpf',
    document_number: '52998224725',
  });
  expect(paid.status).toBe(303);
  return waitFor(async () => {
    const doc = await findCheckoutSession(stack.mongo.db, store.store._id, s.id);
    return doc?.subscription ? doc : null;
  });
}

async function portalLink(customer = customerId, key = store.key) {
  const res = await call(stack.api, key, 'POST', '/v1/billing_portal/sessions', {
    json: { customer, return_url: 'https://shop.example.com/account' },
  });
  expect(res.status).toBe(200);
  return res.body;
}

async function signIn(): Promise<string> {
  const link = await portalLink();
  const { signedIn } = await openAndContinue(link.url);
  expect(signedIn.status).toBe(303);
  return signedIn.headers.get('set-cookie')!.split(';')[0];
}

function csrfOf(html: string): string {
  return /name="csrf" value="([^"]+)"/.exec(html)![1];
}

const subscription = async (): Promise<SubscriptionDoc> => (await subscriptionsCollection(stack.mongo.db).findOne({ _id: subscriptionId }))!;

beforeAll(async () => {
  stack = await startCheckoutStack('checkout-portal', { ipRateLimit: 100_000 });
  store = await createTestStore(stack.mongo.db, { slug });
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
  const session = await subscribeThroughCheckout(`portal-${Date.now()}@example.com`);
  customerId = session.customer!;
  subscriptionId = session.subscription!;
  orderId = session.order!;
});

afterAll(async () => {
  await stack?.close();
});

function expectError(res: { status: number; body: any }, status: number, code: string, param: string | null) {
  expect({ status: res.status, type: res.body?.error?.type, code: res.body?.error?.code, param: res.body?.error?.param }).toEqual({
    status,
    type: 'invalid_request_error',
    code,
    param,
  });
}

describe('POST /v1/billing_portal/sessions', () => {
  test('returns a billing_portal.session with a sign-in link at {portal_url}/{slug}, valid 15 minutes, return_url echoed', async () => {
    const link = await portalLink();
    expect(link).toMatchObject({
      object: 'billing_portal.session',
      customer: customerId,
      return_url: 'https://shop.example.com/account',
      livemode: true,
    });
    expect(link.id).toMatch(/^bps_/);
    expect(link.url).toMatch(new RegExp(`^${stack.api.config.portalUrl}/${slug}/session/[A-Za-z0-9_-]{20,}$`));
    expect(link.expires_at - link.created).toBe(15 * 60);
  });

  test('a store with an active custom domain gets links on that domain', async () => {
    const other = await createTestStore(stack.mongo.db, { slug: `dom-${Date.now()}` });
    await collections(stack.mongo.db).stores.updateOne({ _id: other.store._id }, { $set: { custom_domain: 'billing.shop.example' } });
    const customer = await call(stack.api, other.key, 'POST', '/v1/customers', {
      json: { email: `d${Date.now()}@example.com`, name: 'Dom Customer', phone: '+5511987654321', document: { type: 'cpf', number: '52998224725' } },
    });
    const link = await portalLink(customer.body.id, other.key);
    expect(link.url).toMatch(/^https:\/\/billing\.shop\.example\/session\/[A-Za-z0-9_-]{20,}$/);
  });

  test('errors: unknown or foreign customer 404 resource_missing customer; missing customer parameter_missing', async () => {
    expectError(
      await call(stack.api, store.key, 'POST', '/v1/billing_portal/sessions', { json: { customer: 'cust_nope' } }),
      404,
      'resource_missing',
      'customer',
    );
    const other = await createTestStore(stack.mongo.db);
    expectError(
      await call(stack.api, other.key, 'POST', '/v1/billing_portal/sessions', { json: { customer: customerId } }),
      404,
      'resource_missing',
      'customer',
    );
    expectError(await call(stack.api, store.key, 'POST', '/v1/billing_portal/sessions', { json: {} }), 400, 'parameter_missing', 'customer');
  });

  test('a store with the portal turned off: 400 portal_disabled; with neither slug nor custom domain: 400 portal_unavailable', async () => {
    const off = await createTestStore(stack.mongo.db);
    const none = await createTestStore(stack.mongo.db, { slug: null });
    const c = collections(stack.mongo.db);
    await c.stores.updateOne({ _id: off.store._id }, { $set: { portal_enabled: false } });
    for (const s of [off, none]) {
      const customer = await call(stack.api, s.key, 'POST', '/v1/customers', {
        json: {
          email: `p${Math.random()}@example.com`,
          name: 'Some Customer',
          phone: '+5511987654321',
          document: { type: 'cpf', number: '52998224725' },
        },
      });
      const res = await call(stack.api, s.key, 'POST', '/v1/billing_portal/sessions', { json: { customer: customer.body.id } });
      expectError(res, 400, s === off ? 'portal_disabled' : 'portal_unavailable', null);
    }
  });
});

describe('sign-in link', () => {
  test('opening it shows whose account it opens and sets nothing; one click signs in with an HttpOnly cookie and goes to the account; it works once', async () => {
    const link = await portalLink();
    const { page, signedIn } = await openAndContinue(link.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('set-cookie')).toBeNull();
    expect(page.text).toContain('data-testid="signin-confirm"');
    expect(page.text).toMatch(/Continue as p\*\*\*@example\.com/);
    expect(signedIn.status).toBe(303);
    expect(signedIn.location).toBe(`/portal/${slug}/account`);
    expect(signedIn.headers.get('set-cookie')!).toMatch(/^portal_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    const again = await openAndContinue(link.url);
    expect([again.page.status, again.signedIn.status]).toEqual([410, 410]);
    expect(again.page.text).toContain('data-testid="signin-invalid"');
    expect(again.signedIn.headers.get('set-cookie')).toBeNull();
  });

  test("only the token's hash is stored: no document in the database holds the token or the URL, and the returned URL still signs in", async () => {
    const link = await portalLink();
    const token = link.url.split('/session/')[1];
    const doc = await portalLinksCollection(stack.mongo.db).findOne({ _id: link.id });
    expect(doc).toMatchObject({ token_hash: hashToken(token), customer: customerId });
    expect(JSON.stringify(doc)).not.toContain(token);
    for (const info of await stack.mongo.db.listCollections().toArray()) {
      const docs = await stack.mongo.db.collection(info.name).find({}).limit(5000).toArray();
      expect(docs.filter((d) => JSON.stringify(d).includes(token)).map(() => info.name)).toEqual([]);
    }
    expect((await openAndContinue(link.url)).signedIn.status).toBe(303);
  });

  test('a sign-in posted from another site (login CSRF) is refused and the link stays usable by its customer', async () => {
    const link = await portalLink();
    const path = new URL(link.url).pathname;
    const forged = await post(path, {}, undefined, { origin: 'https://attacker.example' });
    expect([forged.status, forged.headers.get('set-cookie')]).toEqual([410, null]);
    const crossSite = await post(path, {}, undefined, { 'sec-fetch-site': 'cross-site' });
    expect(crossSite.status).toBe(410);
    expect((await openAndContinue(link.url)).signedIn.status).toBe(303);
  });

  test('stops working after 15 minutes', async () => {
    const link = await portalLink();
    await portalLinksCollection(stack.mongo.db).updateOne({ _id: link.id }, { $set: { expires_at: Math.floor(Date.now() / 1000) - 1 } });
    expect((await get(link.url)).status).toBe(410);
    expect((await openAndContinue(link.url)).signedIn.status).toBe(410);
  });

  test("opened at another store's portal address it is refused and stays usable at its own", async () => {
    const other = await createTestStore(stack.mongo.db, { slug: `other-${Date.now()}` });
    const link = await portalLink();
    const wrong = link.url.replace(`/portal/${slug}/`, `/portal/${other.store.slug}/`);
    expect((await openAndContinue(wrong)).signedIn.status).toBe(410);
    expect((await openAndContinue(link.url)).signedIn.status).toBe(303);
  });
});

describe('sign-in tokens in logs', () => {
  test('the server log writes a sign-in path as /session/[redacted], never the token', async () => {
    const logged = await startLoggedApi(stack);
    try {
      const link = await portalLink();
      const path = new URL(link.url).pathname;
      await fetch(`${logged.url}${path}`, { redirect: 'manual' });
      await fetch(`${logged.url}${path}`, { method: 'POST', redirect: 'manual', headers: { origin: logged.url } });
      expect(logged.logged()).toContain('/session/[redacted]');
      expect(logged.logged()).not.toContain(path.split('/').pop()!);
    } finally {
      await logged.close();
    }
  });
});

describe('portal address', () => {
  test('a PORTAL_URL with another path (/customers/portal) gets its sign-in link, entry and account pages served under that path', async () => {
    const custom = await startTestApi({
      db: stack.mongo.db,
      temporal: stack.temporal.client,
      taskQueue: stack.taskQueue,
      config: { portalUrl: 'https://billing.example.com/customers/portal', ipRateLimit: 100_000 },
    });
    try {
      const res = await call(custom, store.key, 'POST', '/v1/billing_portal/sessions', { json: { customer: customerId } });
      expect(res.body.url).toMatch(new RegExp(`^https://billing\\.example\\.com/customers/portal/${slug}/session/[A-Za-z0-9_-]{20,}$`));
      const base = `/customers/portal/${slug}`;
      const signedIn = await fetch(`${custom.url}${new URL(res.body.url).pathname}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { origin: custom.url },
      });
      expect({ status: signedIn.status, location: signedIn.headers.get('location') }).toEqual({ status: 303, location: `${base}/account` });
      // The portal is served over https (a TLS proxy in front of this http hop): the cookie is Secure.
      expect(signedIn.headers.get('set-cookie')).toMatch(/; Secure$/);
      const cookie = signedIn.headers.get('set-cookie')!.split(';')[0];
      const account = await fetch(`${custom.url}${base}/account`, { headers: { cookie } });
      const text = await account.text();
      expect(account.status).toBe(200);
      expect(text).toContain(`data-subscription="${subscriptionId}"`);
      expect(text).toContain(`action="${base}/account/subscriptions/${subscriptionId}/cancel"`);
      const entry = await fetch(`${custom.url}${base}`, { redirect: 'manual' });
      expect(entry.headers.get('location')).toBe(`${base}/account`);
    } finally {
      await custom.close();
    }
  });
});

describe('the portal', () => {
  test('without a portal session the account page asks for a new link (401)', async () => {
    const res = await get(`/portal/${slug}/account`);
    expect(res.status).toBe(401);
    expect(res.text).toContain('data-testid="signin-needed"');
  });

  test("lists the customer's subscriptions and orders with the strict CSP", async () => {
    const cookie = await signIn();
    const res = await get(`/portal/${slug}/account`, cookie);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.text).toContain(`data-subscription="${subscriptionId}"`);
    expect(res.text).toContain(orderId);
    expect(res.text).toContain(catalog.monthly.name);
  });

  test('an unknown ?done= (even a name every object inherits, like constructor) shows the account without an outcome line', async () => {
    const cookie = await signIn();
    for (const done of ['constructor', 'toString', 'nothing']) {
      const res = await get(`/portal/${slug}/account?done=${done}`, cookie);
      expect([res.status, res.text.includes('data-testid="done"')], done).toEqual([200, false]);
    }
  });

  test('cancel at period end (source customer portal), then reactivate, through the subscription workflow', async () => {
    const cookie = await signIn();
    const csrf = csrfOf((await get(`/portal/${slug}/account`, cookie)).text);

    const canceled = await post(`/portal/${slug}/account/subscriptions/${subscriptionId}/cancel`, { csrf }, cookie);
    expect(canceled.location).toBe(`/portal/${slug}/account?done=canceled`);
    const scheduled = await subscription();
    expect(scheduled.status).toBe('active');
    expect(scheduled.cancel_at_period_end).toBe(true);
    expect(scheduled.cancellation_details?.source).toBe('customer portal');
    const page = await get(`/portal/${slug}/account?done=canceled`, cookie);
    expect(page.text).toContain('data-testid="cancels-on"');
    expect(page.text).toContain('data-testid="reactivate"');

    const kept = await post(`/portal/${slug}/account/subscriptions/${subscriptionId}/reactivate`, { csrf }, cookie);
    expect(kept.location).toBe(`/portal/${slug}/account?done=reactivated`);
    expect((await subscription()).cancel_at_period_end).toBe(false);
  });

  test('replaces the saved card with a test card through the subscription workflow', async () => {
    const cookie = await signIn();
    const csrf = csrfOf((await get(`/portal/${slug}/account`, cookie)).text);
    const res = await post(`/portal/${slug}/account/subscriptions/${subscriptionId}/card`, { csrf, card_number: '5555 5555 5555 4444' }, cookie);
    expect(res.location).toBe(`/portal/${slug}/account?done=card`);
    const sub = await subscription();
    expect(sub.default_payment_method?.last4).toBe('4444');
    const page = await get(`/portal/${slug}/account`, cookie);
    expect(page.text).toContain('4444');
  });

  test('card changes count in the page payment limit per address, an encoded path too: past it, 429 and the card stays', async () => {
    const limited = await startTestApi({
      db: stack.mongo.db,
      temporal: stack.temporal.client,
      taskQueue: stack.taskQueue,
      config: { pagePostRateLimit: 2, pagePostRateWindowMs: 60_000, ipRateLimit: 100_000 },
    });
    try {
      const cookie = await signIn();
      const csrf = csrfOf((await get(`/portal/${slug}/account`, cookie)).text);
      const change = (action: string, number: string) =>
        post(`${limited.url}/portal/${slug}/account/subscriptions/${subscriptionId}/${action}`, { csrf, card_number: number }, cookie, {
          'x-forwarded-for': '203.0.113.21',
        });
      expect((await change('card', '4242 4242 4242 4242')).status).toBe(303);
      expect((await change('card', '5555 5555 5555 4444')).status).toBe(303);
      const refused = await change('c%61rd', '4000 0000 0000 0002');
      expect(refused.status).toBe(429);
      expect(refused.text).toContain('data-testid="too-many-attempts"');
      expect((await subscription()).default_payment_method?.last4).toBe('4444');
    } finally {
      await limited.close();
    }
  });

  test("a forged form (wrong token) and another customer's subscription change nothing", async () => {
    const cookie = await signIn();
    const before = await subscription();
    const forged = await post(`/portal/${slug}/account/subscriptions/${subscriptionId}/cancel`, { csrf: 'f'.repeat(64) }, cookie);
    expect(forged.location).toBe(`/portal/${slug}/account`);
    expect((await subscription()).version).toBe(before.version);

    const stranger = await subscribeThroughCheckout(`stranger-${Date.now()}@example.com`);
    const csrf = csrfOf((await get(`/portal/${slug}/account`, cookie)).text);
    const foreign = await post(`/portal/${slug}/account/subscriptions/${stranger.subscription}/cancel`, { csrf }, cookie);
    expect(foreign.location).toContain('failed=');
    expect((await subscriptionsCollection(stack.mongo.db).findOne({ _id: stranger.subscription! }))!.cancel_at_period_end).toBe(false);
  });

  test('a store that turns its portal off closes it at once: sign-in, the account and actions answer the unavailable page and change nothing', async () => {
    const link = await portalLink();
    const cookie = await signIn();
    const csrf = csrfOf((await get(`/portal/${slug}/account`, cookie)).text);
    const before = await subscription();
    await collections(stack.mongo.db).stores.updateOne({ _id: store.store._id }, { $set: { portal_enabled: false } });
    try {
      const opened = await openAndContinue(link.url);
      expect([opened.page.status, opened.signedIn.status, opened.signedIn.headers.get('set-cookie')]).toEqual([403, 403, null]);
      const account = await get(`/portal/${slug}/account`, cookie);
      expect([account.status, account.text.includes('data-testid="portal-unavailable"')]).toEqual([403, true]);
      const canceled = await post(`/portal/${slug}/account/subscriptions/${subscriptionId}/cancel`, { csrf }, cookie);
      expect(canceled.status).toBe(403);
      expect((await subscription()).version).toBe(before.version);
    } finally {
      await collections(stack.mongo.db).stores.updateOne({ _id: store.store._id }, { $set: { portal_enabled: true } });
    }
    expect((await openAndContinue(link.url)).signedIn.status).toBe(303);
  });

  test('sign out ends the portal session', async () => {
    const cookie = await signIn();
    const csrf = csrfOf((await get(`/portal/${slug}/account`, cookie)).text);
    const out = await post(`/portal/${slug}/account/sign-out`, { csrf }, cookie);
    expect(out.status).toBe(200);
    expect((await get(`/portal/${slug}/account`, cookie)).status).toBe(401);
  });
});
