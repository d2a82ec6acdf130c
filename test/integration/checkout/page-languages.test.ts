// What this tests: the hosted checkout page and the customer portal over real HTTP in each of the ten
// spec locales (en, pt, es, fr, de, it, ja, ko, ru, zh): the html lang, words that are not English,
// money written the locale's way in a currency of its own (€, ¥ without decimals, ₩, ₽, CN¥), the PIX
// deadline and the portal's dates in the locale's format; and which language a page picks: the
// session's locale, then its customer's, then the browser's (Accept-Language), then English.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createOffer } from '../../../store/catalog';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { findOrder } from '../../../store/orders';
import { formatDate } from '../../../i18n/format';
import { LANGUAGES as PAGE_LANGUAGES, type Language as PageLanguage } from '../../../i18n/languages';
import type { OfferDoc } from '../../../store/collections';
import { startTestApi, type TestStore } from '../../support/api';
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

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;
/** A one-off offer priced in each locale's own currency. */
let worldOffer: OfferDoc;
let customerId: string;
let orderId: string;
let portalCookie: string;
const STORE_NAME = 'Loja Aurora';
const TIME_ZONE = 'America/Sao_Paulo';
const slug = `langs-${Math.random().toString(36).slice(2, 8)}`;

interface LocaleCase {
  /** The session's currency and how its price reads on the page. */
  currency: string;
  price: string;
  /** Words of the checkout page (the pay button with its amount last). */
  checkout: string[];
  /** Words of the portal's account page. */
  portal: string[];
  /** The sign-in page's title for STORE_NAME. */
  signIn: string;
  /** The monthly offer's R$ 49,90 in the portal. */
  monthly: string;
  /** The PIX page's title. */
  pixTitle: string;
  /** The shape of a day in the portal's order list. */
  day: RegExp;
}

const CASES: Record<PageLanguage, LocaleCase> = {
  en: {
    currency: 'usd',
    price: '$39.00',
    checkout: ['Secure checkout', 'Order summary', 'Card number', 'Pay $39.00'],
    portal: ['Your account', 'Subscriptions', 'Orders', 'Active', 'Sign out'],
    signIn: `Sign in to ${STORE_NAME}`,
    monthly: 'R$49.90',
    pixTitle: 'Pay with PIX',
    day: /[A-Z][a-z]{2} \d{1,2}, \d{4}/,
  },
  pt: {
    currency: 'brl',
    price: 'R$ 197,00',
    checkout: ['Pagamento seguro', 'Resumo do pedido', 'Número do cartão', 'Pagar R$ 197,00'],
    portal: ['Sua conta', 'Assinaturas', 'Pedidos', 'Ativa', 'Sair'],
    signIn: `Entrar em ${STORE_NAME}`,
    monthly: 'R$ 49,90',
    pixTitle: 'Pague com PIX',
    day: /\d{1,2} de [a-zç]{3,4}\.? de \d{4}/,
  },
  es: {
    currency: 'eur',
    price: '12,50 €',
    checkout: ['Pago seguro', 'Resumen del pedido', 'Número de tarjeta', 'Pagar 12,50 €'],
    portal: ['Tu cuenta', 'Suscripciones', 'Pedidos', 'Activa', 'Cerrar sesión'],
    signIn: `Entrar en ${STORE_NAME}`,
    monthly: '49,90 BRL',
    pixTitle: 'Paga con PIX',
    day: /\d{1,2} [a-z]{3,4}\.? \d{4}/,
  },
  fr: {
    currency: 'eur',
    price: '12,50 €',
    checkout: ['Paiement sécurisé', 'Récapitulatif de la commande', 'Numéro de carte', 'Payer 12,50 €'],
    portal: ['Votre compte', 'Abonnements', 'Commandes', 'Actif', 'Se déconnecter'],
    signIn: `Se connecter à ${STORE_NAME}`,
    monthly: '49,90 R$',
    pixTitle: 'Payer avec PIX',
    day: /\d{1,2} [a-zéû]{3,5}\.? \d{4}/,
  },
  de: {
    currency: 'eur',
    price: '12,50 €',
    checkout: ['Sichere Bezahlung', 'Bestellübersicht', 'Kartennummer', '12,50 € bezahlen'],
    portal: ['Ihr Konto', 'Abonnements', 'Bestellungen', 'Aktiv', 'Abmelden'],
    signIn: `Bei ${STORE_NAME} anmelden`,
    monthly: '49,90 R$',
    pixTitle: 'Mit PIX bezahlen',
    day: /\d{1,2}\. [A-ZÄ][a-zä]{2,3}\.? \d{4}/,
  },
  it: {
    currency: 'eur',
    price: '12,50 €',
    checkout: ['Pagamento sicuro', 'Riepilogo dell’ordine', 'Numero della carta', 'Paga 12,50 €'],
    portal: ['Il tuo account', 'Abbonamenti', 'Ordini', 'Attivo', 'Esci'],
    signIn: `Accedi a ${STORE_NAME}`,
    monthly: '49,90 BRL',
    pixTitle: 'Paga con PIX',
    day: /\d{1,2} [a-z]{3} \d{4}/,
  },
  ja: {
    currency: 'jpy',
    price: '￥1,500',
    checkout: ['安全なお支払い', 'ご注文内容', 'カード番号', '￥1,500を支払う'],
    portal: ['アカウント', 'サブスクリプション', 'ご注文履歴', '有効', 'ログアウト'],
    signIn: `${STORE_NAME}にログイン`,
    monthly: 'R$49.90',
    pixTitle: 'PIXで支払う',
    day: /\d{4}年\d{1,2}月\d{1,2}日/,
  },
  ko: {
    currency: 'krw',
    price: '₩15,000',
    checkout: ['안전한 결제', '주문 요약', '카드 번호', '₩15,000 결제하기'],
    portal: ['내 계정', '구독', '주문 내역', '이용 중', '로그아웃'],
    signIn: `${STORE_NAME} 로그인`,
    monthly: 'R$49.90',
    pixTitle: 'PIX로 결제',
    day: /\d{4}년 \d{1,2}월 \d{1,2}일/,
  },
  ru: {
    currency: 'rub',
    price: '1 500,00 ₽',
    checkout: ['Безопасная оплата', 'Ваш заказ', 'Номер карты', 'Оплатить 1 500,00 ₽'],
    portal: ['Личный кабинет', 'Подписки', 'Заказы', 'Активна', 'Выйти'],
    signIn: `Вход в ${STORE_NAME}`,
    monthly: '49,90 R$',
    pixTitle: 'Оплата через PIX',
    day: /\d{1,2} [а-я]{3,5}\.? \d{4} г\./,
  },
  zh: {
    currency: 'cny',
    price: '¥49.90',
    checkout: ['安全支付', '订单摘要', '卡号', '支付 ¥49.90'],
    portal: ['我的账户', '订阅', '订单', '生效中', '退出登录'],
    signIn: `登录 ${STORE_NAME}`,
    monthly: 'R$49.90',
    pixTitle: '使用 PIX 支付',
    day: /\d{4}年\d{1,2}月\d{1,2}日/,
  },
};

// English words a page in another language must not show.
const ENGLISH_CHECKOUT = ['Secure checkout', 'Order summary', 'Card number', 'Payment method'];
const ENGLISH_PORTAL = ['Your account', 'Subscriptions', 'Sign out', 'Next charge on'];

/** Intl separates with no-break and narrow no-break spaces; pages are compared with plain spaces. */
const plain = (text: string) => text.replace(/[\u00a0\u202f]/g, ' ');

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(path.startsWith('http') ? path : `${stack.api.url}${path}`, { redirect: 'manual', headers });
  return { status: res.status, headers: res.headers, text: plain(await res.text()) };
}

async function post(path: string, form: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(path.startsWith('http') ? path : `${stack.api.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, headers: res.headers, location: res.headers.get('location'), text: plain(await res.text()) };
}

async function newSession(body: Record<string, unknown>): Promise<{ id: string }> {
  const res = await createSession(stack.api, store, body);
  expect(res.status).toBe(201);
  return res.body;
}

const langOf = (html: string) => /<html lang="([^"]+)">/.exec(html)?.[1];

async function setCustomerLocale(locale: string | null) {
  const res = await call(stack.api, store.key, 'POST', `/v1/customers/${customerId}`, { json: { locale } });
  expect(res.status).toBe(200);
  expect(res.body.locale).toBe(locale);
}

async function newCustomer(locale: string | null): Promise<string> {
  const res = await call(stack.api, store.key, 'POST', '/v1/customers', {
    json: {
      email: `lang-${Math.random().toString(36).slice(2)}@example.com`,
      name: 'Min-jun Kim',
      phone: '+5511987654321',
      document: { type: 'cpf', number: '52998224725' },
      locale,
    },
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function portalLink(): Promise<string> {
  const res = await call(stack.api, store.key, 'POST', '/v1/billing_portal/sessions', { json: { customer: customerId } });
  expect(res.status).toBe(200);
  return res.body.url;
}

/** Opens a sign-in link and clicks "Continue" from the portal's own origin: the portal session's cookie. */
async function signIn(): Promise<string> {
  const url = await portalLink();
  const signedIn = await post(`${stack.api.url}${new URL(url).pathname}`, {}, { origin: stack.api.url });
  expect(signedIn.status).toBe(303);
  return signedIn.headers.get('set-cookie')!.split(';')[0];
}

const accountPath = () => `${new URL(stack.api.config.portalUrl).pathname.replace(/\/+$/, '')}/${slug}/account`;

beforeAll(async () => {
  stack = await startCheckoutStack('page-languages', { ipRateLimit: 100_000 });
  store = await createTestStore(stack.mongo.db, { slug, name: STORE_NAME, timezone: TIME_ZONE });
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
  worldOffer = await createOffer(stack.mongo.db, {
    storeId: store.store._id,
    productId: catalog.product._id,
    name: 'Photography Course (world)',
    type: 'one_off',
    prices: [
      { currency: 'brl', amount: 19700, default: true },
      { currency: 'usd', amount: 3900, default: false },
      { currency: 'eur', amount: 1250, default: false },
      { currency: 'jpy', amount: 1500, default: false },
      { currency: 'krw', amount: 15000, default: false },
      { currency: 'rub', amount: 150000, default: false },
      { currency: 'cny', amount: 4990, default: false },
    ],
  });
  // A customer with a monthly subscription (and its first order) bought through the hosted checkout.
  const s = await newSession({ offer: catalog.monthly._id, customer_email: `langs-${Date.now()}@example.com` });
  const paid = await post(`/c/${s.id}/pay`, { ...buyerForm(), method: 'card', card_number: '4242424242424242' });
  expect(paid.status).toBe(303);
  const done = await waitFor(async () => {
    const doc = await findCheckoutSession(stack.mongo.db, store.store._id, s.id);
    return doc?.subscription && doc.order && doc.customer ? doc : null;
  });
  customerId = done.customer!;
  orderId = done.order!;
  portalCookie = await signIn();
});

afterAll(async () => {
  await stack?.close();
});

describe('the checkout page in each locale', () => {
  test.each(PAGE_LANGUAGES)('%s: lang attribute, its own words and its money format', async (lang) => {
    const expected = CASES[lang];
    const s = await newSession({ offer: worldOffer._id, locale: lang, currency: expected.currency });
    const res = await get(`/c/${s.id}`);
    expect(res.status).toBe(200);
    expect(langOf(res.text)).toBe(lang);
    for (const words of expected.checkout) expect(res.text).toContain(words);
    expect(res.text).toContain(`data-testid="price">${expected.price}</p>`);
    if (lang !== 'en') for (const english of ENGLISH_CHECKOUT) expect(res.text).not.toContain(english);
  });

  test.each(PAGE_LANGUAGES)('%s: the PIX page gives its deadline as a date and time of the locale, in the store’s zone', async (lang) => {
    const s = await newSession({ offer: catalog.oneOff._id, locale: lang, currency: 'brl' });
    const res = await post(`/c/${s.id}/pay`, buyerForm({ method: 'pix' }));
    expect(res.location).toBe(`/c/${s.id}?done=1`);
    const pending = (await findCheckoutSession(stack.mongo.db, store.store._id, s.id))!;
    const page = await get(`/c/${s.id}`);
    expect(langOf(page.text)).toBe(lang);
    expect(page.text).toContain(CASES[lang].pixTitle);
    const deadline = plain(formatDate(pending.payment!.pix_expires_at!, lang, { withTime: true, timeZone: TIME_ZONE }));
    expect(page.text).toContain(deadline);
    expect(deadline).toMatch(CASES[lang].day);
    expect(deadline).toMatch(/\d{1,2}:\d{2}/);
  });
});

describe('the customer portal in each locale', () => {
  test.each(PAGE_LANGUAGES)('%s: sign-in page and account page in the customer’s locale, with its money and dates', async (lang) => {
    const expected = CASES[lang];
    await setCustomerLocale(lang);

    const confirm = await get(await portalLink());
    expect(confirm.status).toBe(200);
    expect(langOf(confirm.text)).toBe(lang);
    expect(confirm.text).toContain(expected.signIn);

    const account = await get(accountPath(), { cookie: portalCookie });
    expect(account.status).toBe(200);
    expect(langOf(account.text)).toBe(lang);
    for (const words of expected.portal) expect(account.text).toContain(words);
    expect(account.text).toContain(expected.monthly);
    const order = (await findOrder(stack.mongo.db, store.store._id, orderId))!;
    const day = plain(formatDate(order.created, lang, { timeZone: TIME_ZONE }));
    expect(day).toMatch(expected.day);
    expect(account.text).toContain(`${day} · ${expected.monthly} · ${orderId}`);
    if (lang !== 'en') for (const english of ENGLISH_PORTAL) expect(account.text).not.toContain(english);
  });
});

describe('which language a page picks', () => {
  test('a session without a locale follows the browser (Accept-Language, by weight), else English; a session locale wins over the browser', async () => {
    const open = await newSession({ offer: worldOffer._id });
    expect(langOf((await get(`/c/${open.id}`, { 'accept-language': 'de-DE,de;q=0.9,en;q=0.8' })).text)).toBe('de');
    expect(langOf((await get(`/c/${open.id}`, { 'accept-language': 'nl-NL, ja;q=0.5, ko;q=0.3' })).text)).toBe('ja');
    expect(langOf((await get(`/c/${open.id}`, { 'accept-language': 'nl' })).text)).toBe('en');
    expect(langOf((await get(`/c/${open.id}`)).text)).toBe('en');
    const fixed = await newSession({ offer: worldOffer._id, locale: 'ru' });
    expect(langOf((await get(`/c/${fixed.id}`, { 'accept-language': 'de' })).text)).toBe('ru');
    const session = (await call(stack.api, store.key, 'GET', `/v1/checkout/sessions/${open.id}`)).body;
    expect(session.locale).toBeNull();
  });

  test('a session for a customer without a locale of its own speaks the customer’s locale before the browser’s', async () => {
    const customer = await newCustomer('ko-KR');
    const s = await newSession({ offer: worldOffer._id, customer });
    const page = await get(`/c/${s.id}`, { 'accept-language': 'de' });
    expect(langOf(page.text)).toBe('ko');
    expect(page.text).toContain('안전한 결제');
  });

  test('a refused payment shows the form again in the same language', async () => {
    const s = await newSession({ offer: worldOffer._id, currency: 'eur' });
    const res = await post(`/c/${s.id}/pay`, { ...buyerForm(), method: 'card', card_number: '4000 0000 0000 0002' }, { 'accept-language': 'fr-FR' });
    expect(res.status).toBe(402);
    expect(langOf(res.text)).toBe('fr');
    expect(res.text).toContain('Votre carte a été refusée.');
  });

  test('pages without a session or customer follow the browser: an unknown checkout, a used sign-in link', async () => {
    const unknown = await get('/c/cs_doesnotexist', { 'accept-language': 'fr' });
    expect(unknown.status).toBe(404);
    expect(langOf(unknown.text)).toBe('fr');
    expect(unknown.text).toContain('Ce lien n’est plus disponible');
    const badLink = await get(`${new URL(stack.api.config.portalUrl).pathname.replace(/\/+$/, '')}/${slug}/session/not-a-real-token-0123456789`, {
      'accept-language': 'it',
    });
    expect(badLink.status).toBe(410);
    expect(langOf(badLink.text)).toBe('it');
    expect(badLink.text).toContain('Questo link di accesso non funziona');
  });

  test('the portal speaks the customer’s locale, else the browser’s', async () => {
    await setCustomerLocale(null);
    const ru = await get(accountPath(), { cookie: portalCookie, 'accept-language': 'ru-RU,ru;q=0.9' });
    expect(langOf(ru.text)).toBe('ru');
    expect(ru.text).toContain('Личный кабинет');
    expect(langOf((await get(accountPath(), { cookie: portalCookie })).text)).toBe('en');
    await setCustomerLocale('zh-CN');
    expect(langOf((await get(accountPath(), { cookie: portalCookie, 'accept-language': 'ru' })).text)).toBe('zh');
  });
});

describe('the refusal and error pages speak the browser’s language', () => {
  test('past the page payment limit, the 429 page is in Portuguese or Japanese, with Retry-After', async () => {
    const limited = await startTestApi({
      db: stack.mongo.db,
      temporal: stack.temporal.client,
      taskQueue: stack.taskQueue,
      config: { pagePostRateLimit: 1 },
    });
    try {
      const address = `198.51.100.${Math.floor(Math.random() * 250) + 1}`;
      const submit = (lang: string) =>
        post(`${limited.url}/c/cs_doesnotexist/pay`, buyerForm(), { 'accept-language': lang, 'x-forwarded-for': address });
      await submit('pt-BR');
      const pt = await submit('pt-BR');
      expect([pt.status, langOf(pt.text), Number(pt.headers.get('retry-after')) > 0]).toEqual([429, 'pt', true]);
      expect(pt.text).toContain('Muitas tentativas de pagamento vieram do seu endereço');
      const ja = await submit('ja,en;q=0.5');
      expect([ja.status, langOf(ja.text)]).toEqual([429, 'ja']);
      expect(ja.text).toContain('試行回数が多すぎます');
      expect(ja.text).not.toContain('Too many');
    } finally {
      await limited.close();
    }
  });

  test('a page request that fails (a malformed form) answers the error page in German or Chinese, with its reference', async () => {
    const s = await newSession({ offer: worldOffer._id });
    const de = await post(`/c/${s.id}/test/settle`, { outcome: 'bogus' }, { 'accept-language': 'de-DE' });
    expect([de.status, langOf(de.text)]).toEqual([400, 'de']);
    expect(de.text).toMatch(/Etwas ist schiefgelaufen[\s\S]*Referenz: \S+/);
    const zh = await post(`/c/${s.id}/test/settle`, { outcome: 'bogus' }, { 'accept-language': 'zh-CN' });
    expect([zh.status, langOf(zh.text)]).toEqual([400, 'zh']);
    expect(zh.text).toContain('出了点问题');
    expect(zh.text).not.toContain('Something went wrong');
  });
});
