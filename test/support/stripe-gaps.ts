// A thin stateful layer before localstripe that fills the gaps measured in it, so the product's requests
// stay as Stripe takes them (never shaped to the fake): it strips the parameters localstripe refuses
// (description, receipt_email, setup_future_usage, automatic_payment_methods, payment_method_data,
// tax_id_data, use_stripe_sdk, cancellation_reason, a refund's reason), renames allowed_payment_method_types to the older
// payment_method_types, echoes setup_future_usage and cancellation_reason back on the intent and attaches
// a kept card to its customer as Stripe does; replays a POST's first answer for a repeated Idempotency-Key
// (localstripe ignores it); answers the Search API for payment_intents by metadata (charge_key,
// store_id); emulates PIX intents whole (next_action with pix_display_qr_code, a QR image, paid or
// expired by the test or the fake bank route); answers an off-session confirm of a card that asks for
// authentication (localstripe leaves it in requires_action, e.g. 4000 0027 6000 3184) as Stripe does: 402
// card_error `authentication_required`, the intent in requires_payment_method with last_payment_error, until
// the buyer's Stripe.js runs the bank's step (_authenticate) or it is cancelled; creates a SetupIntent with
// its card and confirm in one call (localstripe: create, then confirm); attaches a card kept for off-session
// use once its 3-D Secure or setup succeeds, and lets an off-session charge of such a card through without
// asking the bank again (as Stripe does); counts the requests it serves (page views must add none); and
// serves localstripe's fake Stripe.js with createPaymentMethod and handleNextAction added (it has neither; a
// SetupIntent's step too), calling back through this layer. It also echoes a BRL card intent's installment plan
// as payment_method_options.card.installments.plan (localstripe ignores payment_method_options); as at Stripe, a
// canceled PIX takes no payment and cancelling a succeeded or canceled one answers 400
// payment_intent_unexpected_state.
// Bounds: remembered answers and PIX intents are kept for one test file (a few hundred at most).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { FAKE_STRIPE_SECRET_KEY } from './stripe-fakes';

const REFUSED_BY_LOCALSTRIPE = [
  'description',
  'receipt_email',
  'setup_future_usage',
  'automatic_payment_methods',
  'payment_method_data',
  'tax_id_data',
  'use_stripe_sdk',
  'cancellation_reason',
  // A refund's reason (duplicate, fraudulent, requested_by_customer): localstripe's Refund takes none.
  'reason',
];
/** A 1×1 PNG: the QR image the page shows (its content is the copy-paste code's business, not the fake's). */
const QR_PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==', 'base64');

type Json = Record<string, any>;

export interface StripeGaps {
  /** STRIPE_API_URL for the product. */
  url: string;
  /** STRIPE_JS_URL for the page: localstripe's Stripe.js with the missing calls added. */
  jsUrl: string;
  /** Intents made through this layer, by id (PIX ones are held here; card ones are read from localstripe). */
  pix: Map<string, Json>;
  /** A PIX paid (or expired) at the fake bank: its intent as Stripe's event would carry it. */
  settlePix(id: string, outcome: 'paid' | 'expired'): Json;
  /** Reads an intent as Stripe holds it (through this layer; not counted in `requests`). */
  intent(id: string): Promise<Json>;
  /** Requests the product (and the page's Stripe.js) made to this fake so far: what a page view must not add to. */
  requests(): number;
  close(): Promise<void>;
}

const randomId = (prefix: string) => `${prefix}${randomBytes(12).toString('hex')}`;

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk) => (text += chunk));
    request.on('end', () => resolve(text));
    request.on('error', reject);
  });
}

function send(response: ServerResponse, status: number, body: string | Buffer, type = 'application/json') {
  response.writeHead(status, { 'content-type': type, 'access-control-allow-origin': '*', 'access-control-allow-headers': '*' });
  response.end(body);
}

/**
 * Form keys without the refused parameters (and their nested keys, e.g. payment_method_data[type]);
 * allowed_payment_method_types under the older name localstripe knows (payment_method_types).
 */
function stripRefused(form: URLSearchParams): URLSearchParams {
  const kept = new URLSearchParams();
  for (const [key, value] of form) {
    if (REFUSED_BY_LOCALSTRIPE.some((name) => key === name || key.startsWith(`${name}[`))) continue;
    kept.append(key.replace(/^allowed_payment_method_types\[/, 'payment_method_types['), value);
  }
  return kept;
}

/** The installment plan asked for, as Stripe confirms it on a BRL card intent (Brazil's installments; other currencies get none). */
function planOf(form: URLSearchParams): Json | null {
  const count = form.get('payment_method_options[card][installments][plan][count]');
  if (!count || form.get('currency')?.toLowerCase() !== 'brl') return null;
  const type = form.get('payment_method_options[card][installments][plan][type]') ?? 'fixed_count';
  return { count: Number(count), interval: form.get('payment_method_options[card][installments][plan][interval]') ?? 'month', type };
}

const methodTypeOf = (form: URLSearchParams) => form.get('allowed_payment_method_types[0]') ?? form.get('payment_method_types[0]');

function metadataOf(form: URLSearchParams): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const [key, value] of form) {
    const match = /^metadata\[([^\]]+)\]$/.exec(key);
    if (match) metadata[match[1]] = value;
  }
  return metadata;
}

/** localstripe's Stripe.js plus createPaymentMethod (POST /v1/payment_methods) and handleNextAction (a SetupIntent's bank step too). */
function augmentedStripeJs(original: string): string {
  return `${original}
;function gapsSetupAction(key, secret) {
  var seti = secret.match(/^(seti_\\w+)_secret_/)[1];
  return new Promise(function (resolve) {
    var box = document.createElement('div');
    box.setAttribute('role', 'dialog');
    box.setAttribute('aria-label', '3D Secure');
    box.style.cssText = 'position:fixed;inset:0;background:#fff;z-index:9999;padding:2rem';
    var ask = function (label, path) {
      var button = document.createElement('button');
      button.type = 'button';
      button.textContent = label;
      button.addEventListener('click', function () {
        box.remove();
        fetch(LOCALSTRIPE_BASE_API + '/v1/setup_intents/' + seti + path, { method: 'POST', body: JSON.stringify({ key: key, client_secret: secret, use_stripe_sdk: true }) })
          .then(function (r) { return r.json(); })
          .then(function (body) { resolve(body.status === 'succeeded' ? { setupIntent: body } : { error: { message: 'authentication failed' } }); });
      });
      box.appendChild(button);
    };
    ask('Complete authentication', '/confirm');
    ask('Fail authentication', '/cancel');
    document.body.appendChild(box);
  });
}
;(function () {
  var Fake = Stripe;
  Stripe = function (key, options) {
    var stripe = Fake(key, options);
    stripe.createPaymentMethod = async function (data) {
      var card = data.card.value.card;
      var body = new URLSearchParams({ type: 'card', 'card[number]': card.number, 'card[exp_month]': card.exp_month, 'card[exp_year]': card.exp_year, 'card[cvc]': card.cvc, key: key });
      var response = await fetch(LOCALSTRIPE_BASE_API + '/v1/payment_methods', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() });
      var json = await response.json();
      return response.ok ? { paymentMethod: json } : { error: json.error };
    };
    stripe.handleNextAction = function (params) {
      if (params.clientSecret.indexOf('seti_') !== 0) return stripe.confirmCardPayment(params.clientSecret);
      return gapsSetupAction(key, params.clientSecret);
    };
    return stripe;
  };
})();
`;
}

/** Where the layer sends the events of what it emulates (a PIX paid or expired), signed as Stripe signs them. */
export interface GapsWebhook {
  url: string;
  secret: string;
}

async function sendEvent(webhook: GapsWebhook, type: string, object: Json): Promise<number> {
  const payload = JSON.stringify({
    id: randomId('evt_gaps'),
    object: 'event',
    type,
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    data: { object },
  });
  const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: webhook.secret });
  const response = await fetch(webhook.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': signature },
    body: payload,
  });
  return response.status;
}

export async function startStripeGaps(localstripeUrl: string, options: { webhook?: GapsWebhook } = {}): Promise<StripeGaps> {
  const answered = new Map<string, { status: number; body: string }>();
  const futureUsage = new Map<string, string>();
  /** Cards kept for off-session use (setup_future_usage): Stripe charges them off session without asking the bank again. */
  const setUpCards = new Set<string>();
  const cancellations = new Map<string, string>();
  /** Off-session intents localstripe left in requires_action: Stripe declines those `authentication_required`. */
  const offSessionAuthentication = new Set<string>();
  /** The installment plan a card intent was confirmed with, by intent id: localstripe ignores payment_method_options. */
  const plans = new Map<string, Json>();
  const pix = new Map<string, Json>();
  let base = '';
  let requests = 0;

  const forward = async (method: string, path: string, headers: IncomingMessage['headers'], body?: string) => {
    const pass: Record<string, string> = { authorization: String(headers.authorization ?? `Bearer ${FAKE_STRIPE_SECRET_KEY}`) };
    if (headers['stripe-account']) pass['stripe-account'] = String(headers['stripe-account']);
    if (body !== undefined) pass['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(`${localstripeUrl}${path}`, { method, headers: pass, body });
    return { status: response.status, body: await response.text() };
  };

  /** setup_future_usage as Stripe answers it: localstripe refuses the parameter, so it is echoed here. */
  const withFutureUsage = (text: string): string => {
    let json: Json;
    try {
      json = JSON.parse(text);
    } catch {
      return text;
    }
    const fill = (object: Json) => {
      if (object?.object !== 'payment_intent') return;
      if (futureUsage.has(object.id)) object.setup_future_usage = futureUsage.get(object.id);
      if (cancellations.has(object.id)) object.cancellation_reason = cancellations.get(object.id);
      if (offSessionAuthentication.has(object.id) && object.status === 'requires_action') asAuthenticationRequired(object);
      if (plans.has(object.id)) object.payment_method_options = { card: { installments: { enabled: true, plan: plans.get(object.id) } } };
    };
    fill(json);
    if (Array.isArray(json.data)) json.data.forEach(fill);
    return JSON.stringify(json);
  };

  /** What Stripe shows of an off-session intent the bank wants the buyer to authenticate: a decline, the card kept aside. */
  const asAuthenticationRequired = (intent: Json): Json => {
    const method = typeof intent.payment_method === 'string' ? intent.payment_method : intent.payment_method?.id;
    return Object.assign(intent, {
      status: 'requires_payment_method',
      next_action: null,
      payment_method: null,
      last_payment_error: {
        type: 'card_error',
        code: 'authentication_required',
        decline_code: 'authentication_required',
        message: 'Your card was declined. This transaction requires authentication.',
        payment_method: method ? { id: method, object: 'payment_method' } : null,
      },
    });
  };

  /** Stripe's 402 for an off-session confirm the bank wants authenticated (localstripe answers requires_action). */
  const offSessionAnswer = (answer: { status: number; body: string }, form: URLSearchParams) => {
    if (answer.status !== 200 || form.get('off_session') !== 'true') return answer;
    const intent = JSON.parse(answer.body);
    if (intent.status !== 'requires_action') return answer;
    offSessionAuthentication.add(intent.id);
    const error = { ...asAuthenticationRequired(intent).last_payment_error, payment_intent: intent };
    return { status: 402, body: JSON.stringify({ error }) };
  };

  /** What Stripe does with setup_future_usage on a confirmed intent: the card is attached to the customer for later. */
  const keepForLater = async (intent: Json, usage: string, headers: IncomingMessage['headers']) => {
    futureUsage.set(intent.id, usage);
    const method = typeof intent.payment_method === 'string' ? intent.payment_method : intent.payment_method?.id;
    if (intent.status !== 'succeeded' || !method || !intent.customer) return;
    if (usage === 'off_session') setUpCards.add(method);
    await forward('POST', `/v1/payment_methods/${method}/attach`, headers, new URLSearchParams({ customer: intent.customer }).toString());
  };

  /**
   * An off-session charge of a card set up for it: Stripe does not ask the bank again (its 4000002500003155
   * authenticates on session only); localstripe asks every time, so the layer completes that step for it.
   */
  const exemptSetUpCard = async (answer: { status: number; body: string }, headers: IncomingMessage['headers']) => {
    const intent = JSON.parse(answer.body) as Json;
    const method = typeof intent.payment_method === 'string' ? intent.payment_method : intent.payment_method?.id;
    if (intent.status !== 'requires_action' || !setUpCards.has(method)) return null;
    const body = JSON.stringify({ key: 'pk_test_gaps', client_secret: intent.client_secret });
    await fetch(`${localstripeUrl}/v1/payment_intents/${intent.id}/_authenticate?success=true`, { method: 'POST', body });
    const now = await forward('GET', `/v1/payment_intents/${intent.id}`, headers);
    return { ...now, body: withFutureUsage(now.body) };
  };

  const createPix = (form: URLSearchParams): Json => {
    const id = randomId('pi_pix');
    const expiresAfter = Number(form.get('payment_method_options[pix][expires_after_seconds]') ?? 1800);
    const now = Math.floor(Date.now() / 1000);
    const intent: Json = {
      id,
      object: 'payment_intent',
      amount: Number(form.get('amount')),
      currency: form.get('currency'),
      status: 'requires_action',
      payment_method_types: ['pix'],
      metadata: metadataOf(form),
      created: now,
      livemode: false,
      client_secret: `${id}_secret_${randomBytes(8).toString('hex')}`,
      latest_charge: null,
      last_payment_error: null,
      canceled_at: null,
      cancellation_reason: null,
      setup_future_usage: null,
      next_action: {
        type: 'pix_display_qr_code',
        pix_display_qr_code: {
          data: `00020126580014br.gov.bcb.pix0136${id}5204000053039865802BR`,
          expires_at: now + expiresAfter,
          image_url_png: `${base}/_gaps/pix/${id}.png`,
        },
      },
    };
    pix.set(id, intent);
    return intent;
  };

  const settle = (id: string, outcome: 'paid' | 'expired'): Json => {
    const intent = pix.get(id)!;
    // As at Stripe: a PIX that is no longer awaiting payment (canceled by the expiry fence, expired, paid) takes no payment.
    if (intent.status !== 'requires_action') return { ...intent };
    if (outcome === 'paid') Object.assign(intent, { status: 'succeeded', next_action: null });
    else
      Object.assign(intent, {
        status: 'requires_payment_method',
        next_action: null,
        last_payment_error: { code: 'payment_intent_payment_attempt_expired', message: 'The PIX expired.' },
      });
    return { ...intent };
  };

  /** Stripe's refusal to cancel an intent that is past it, with the intent as its error carries it. */
  const unexpectedState = (intent: Json) => ({
    status: 400,
    body: JSON.stringify({
      error: {
        type: 'invalid_request_error',
        code: 'payment_intent_unexpected_state',
        message: `You cannot cancel this PaymentIntent because it has a status of ${intent.status}.`,
        payment_intent: intent,
      },
    }),
  });

  const search = async (query: string, headers: IncomingMessage['headers']) => {
    const wanted = [...query.matchAll(/metadata\['(\w+)'\]:'((?:[^'\\]|\\.)*)'/g)].map(([, field, value]) => [field, value.replace(/\\(.)/g, '$1')]);
    // As Stripe's search honours expand: the card and charge read back with the intent, setup_future_usage echoed.
    const listed = await forward('GET', '/v1/payment_intents?limit=100&expand[]=data.latest_charge&expand[]=data.payment_method', headers);
    const intents: Json[] = [...(JSON.parse(withFutureUsage(listed.body)).data ?? []), ...pix.values()];
    const data = intents.filter((intent) => wanted.every(([field, value]) => intent.metadata?.[field] === value));
    return {
      status: 200,
      body: withFutureUsage(JSON.stringify({ object: 'search_result', data, has_more: false, next_page: null, url: '/v1/payment_intents/search' })),
    };
  };

  const route = async (request: IncomingMessage): Promise<{ status: number; body: string | Buffer; type?: string }> => {
    const url = new URL(request.url ?? '/', 'http://gaps');
    const path = url.pathname;
    if (request.method === 'OPTIONS') return { status: 204, body: '' };
    if (path === '/js.stripe.com/v3/') {
      const original = await (await fetch(`${localstripeUrl}/js.stripe.com/v3/`)).text();
      return { status: 200, body: augmentedStripeJs(original), type: 'application/javascript' };
    }
    // The fake bank (npm start against the fake): pay or expire a PIX, and send its signed event.
    const bank = /^\/_gaps\/pix\/(\w+)\/(paid|expired)$/.exec(path);
    if (bank && request.method === 'POST' && pix.has(bank[1])) {
      const intent = settle(bank[1], bank[2] as 'paid' | 'expired');
      const type = bank[2] === 'paid' ? 'payment_intent.succeeded' : 'payment_intent.payment_failed';
      const delivered = options.webhook ? await sendEvent(options.webhook, type, intent) : null;
      return { status: 200, body: JSON.stringify({ intent, webhook_status: delivered }) };
    }
    const png = /^\/_gaps\/pix\/(\w+)\.png$/.exec(path);
    if (png) return pix.has(png[1]) ? { status: 200, body: QR_PNG, type: 'image/png' } : { status: 404, body: '{}' };
    if (request.method === 'GET' && path === '/v1/payment_intents/search') return search(url.searchParams.get('query') ?? '', request.headers);
    const pixId = /^\/v1\/payment_intents\/(pi_pix\w+)(\/cancel)?$/.exec(path);
    if (pixId && pix.has(pixId[1])) {
      const intent = pix.get(pixId[1])!;
      // As at Stripe: a succeeded (or already canceled) intent cannot be canceled: 400 payment_intent_unexpected_state.
      if (pixId[2] && (intent.status === 'succeeded' || intent.status === 'canceled')) return unexpectedState(intent);
      if (pixId[2])
        Object.assign(intent, {
          status: 'canceled',
          canceled_at: Math.floor(Date.now() / 1000),
          cancellation_reason: 'abandoned',
          next_action: null,
        });
      return { status: 200, body: JSON.stringify(intent) };
    }
    const text = request.method === 'POST' ? await readBody(request) : undefined;
    if (request.method !== 'POST') {
      const answer = await forward(request.method ?? 'GET', `${path}${url.search}`, request.headers);
      return { ...answer, body: withFutureUsage(answer.body) };
    }
    // The fake Stripe.js posts JSON to localstripe's own endpoints (_authenticate): passed on as sent.
    if (!String(request.headers['content-type'] ?? '').includes('x-www-form-urlencoded')) {
      const raw = await fetch(`${localstripeUrl}${path}${url.search}`, { method: 'POST', body: text });
      const answer = { status: raw.status, body: await raw.text() };
      // A card kept for later (setup_future_usage) is attached once its 3-D Secure succeeds, as Stripe does.
      const authenticated = /^\/v1\/payment_intents\/(pi_\w+)\/_authenticate$/.exec(path);
      if (authenticated && answer.status === 200 && futureUsage.has(authenticated[1])) {
        await keepForLater(JSON.parse(answer.body), futureUsage.get(authenticated[1])!, {});
      }
      if (/^\/v1\/setup_intents\/seti_\w+\/confirm$/.test(path) && answer.status === 200) await attachSetUpCard(JSON.parse(answer.body), {});
      return answer;
    }
    const key = request.headers['idempotency-key'];
    const remembered = key ? answered.get(`${request.headers['stripe-account'] ?? ''}:${key}`) : undefined;
    if (remembered) return remembered;
    const answer = await post(path, new URLSearchParams(text), request.headers);
    if (key && answer.status < 500) answered.set(`${request.headers['stripe-account'] ?? ''}:${key}`, answer);
    return answer;
  };

  /**
   * A SetupIntent created with its card and confirmed in one call, as Stripe takes it: localstripe knows only
   * create (customer, usage, metadata) then confirm with the card; a succeeded one's card is attached to the customer.
   */
  const createSetup = async (form: URLSearchParams, headers: IncomingMessage['headers']) => {
    const create = new URLSearchParams();
    for (const [key, value] of form) if (key === 'customer' || key === 'usage' || key.startsWith('metadata[')) create.append(key, value);
    const created = await forward('POST', '/v1/setup_intents', headers, create.toString());
    if (created.status !== 200) return created;
    const id = JSON.parse(created.body).id as string;
    const confirmed = await forward(
      'POST',
      `/v1/setup_intents/${id}/confirm`,
      headers,
      new URLSearchParams({ payment_method: form.get('payment_method')! }).toString(),
    );
    if (confirmed.status !== 200) return confirmed;
    await attachSetUpCard(JSON.parse(confirmed.body), headers);
    return forward('GET', `/v1/setup_intents/${id}?expand[]=payment_method`, headers);
  };

  /** What Stripe does with a succeeded off-session setup: its card attached to the customer, chargeable off session. */
  const attachSetUpCard = async (setup: Json, headers: IncomingMessage['headers']) => {
    if (setup.status !== 'succeeded' || !setup.customer || !setup.payment_method) return;
    setUpCards.add(setup.payment_method);
    await forward(
      'POST',
      `/v1/payment_methods/${setup.payment_method}/attach`,
      headers,
      new URLSearchParams({ customer: setup.customer }).toString(),
    );
  };

  const post = async (path: string, form: URLSearchParams, headers: IncomingMessage['headers']) => {
    if (path === '/v1/payment_intents' && methodTypeOf(form) === 'pix') return { status: 200, body: JSON.stringify(createPix(form)) };
    if (path === '/v1/setup_intents' && form.get('confirm') === 'true') return createSetup(form, headers);
    // Stripe takes a publishable key for payment methods made in the page; localstripe only a secret one.
    const auth =
      path === '/v1/payment_methods' && form.get('key')?.startsWith('pk_')
        ? { ...headers, authorization: `Bearer ${FAKE_STRIPE_SECRET_KEY}` }
        : headers;
    if (path === '/v1/payment_methods') form.delete('key');
    let answer = await forward('POST', path, auth, stripRefused(form).toString());
    if (path === '/v1/payment_intents' && form.get('off_session') === 'true' && answer.status === 200) {
      const exempt = await exemptSetUpCard(answer, headers);
      if (exempt) return exempt;
    }
    const usage = form.get('setup_future_usage');
    if (usage && path === '/v1/payment_intents' && answer.status === 200) await keepForLater(JSON.parse(answer.body), usage, headers);
    if (path === '/v1/payment_intents') answer = offSessionAnswer(answer, form);
    const plan = planOf(form);
    if (plan && path === '/v1/payment_intents' && answer.status === 200) plans.set(JSON.parse(answer.body).id, plan);
    const reason = form.get('cancellation_reason');
    if (reason && /\/cancel$/.test(path) && answer.status === 200) cancellations.set(JSON.parse(answer.body).id, reason);
    return { ...answer, body: withFutureUsage(answer.body) };
  };

  const server: Server = createServer((request, response) => {
    requests += 1;
    route(request).then(
      (answer) => send(response, answer.status, answer.body, answer.type),
      (error: Error) => send(response, 502, JSON.stringify({ error: { message: `stripe-gaps: ${error.message}` } })),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    jsUrl: `${base}/js.stripe.com/v3/`,
    pix,
    settlePix: (id, outcome) => settle(id, outcome),
    requests: () => requests,
    async intent(id) {
      if (pix.has(id)) return pix.get(id)!;
      return JSON.parse(withFutureUsage((await forward('GET', `/v1/payment_intents/${id}`, {})).body));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
