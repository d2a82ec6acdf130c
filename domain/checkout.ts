// Checkout session rules, pure: limits, expiry bounds, redirect-URL rules, the session amount,
// what the buyer is charged (pack, coupon), the addresses of the hosted checkout and the portal,
// and the status a session has at a given moment (an overdue open session reads as expired).
import { ApiError, invalid } from './errors';

export const CHECKOUT_LOCALES = ['en', 'pt', 'es', 'fr', 'de', 'it', 'ja', 'ko', 'ru', 'zh'] as const;
export type CheckoutLocale = (typeof CHECKOUT_LOCALES)[number];

export const SESSION_STATUSES = ['open', 'complete', 'expired'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];
export const PAYMENT_STATUSES = ['unpaid', 'paid', 'pending'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];
export type SessionMode = 'payment' | 'subscription';

export const EXPIRY_MIN_SECONDS = 30 * 60;
export const EXPIRY_MAX_SECONDS = 24 * 60 * 60;
export const REDIRECT_DELAY_DEFAULT = 5;
export const REDIRECT_DELAY_MAX = 30;
export const URL_MAX_LENGTH = 2000;
export const CLIENT_REFERENCE_MAX = 200;
export const CUSTOMER_NAME_MIN = 2;
export const CUSTOMER_NAME_MAX = 120;
export const PACK_MIN = 1;
export const PACK_MAX = 999;
/** Portal sign-in links: 15 minutes, single use. */
export const PORTAL_LINK_TTL_SECONDS = 15 * 60;
/** How long a portal session (the browser cookie) lasts after sign-in. */
export const PORTAL_SESSION_TTL_SECONDS = 60 * 60;
export const CHECKOUT_SESSION_ID_PLACEHOLDER = '{CHECKOUT_SESSION_ID}';

export function modeOfOffer(type: 'one_off' | 'recurring'): SessionMode {
  return type === 'recurring' ? 'subscription' : 'payment';
}

/** A recurring offer with a free trial saves the card at checkout and charges nothing (no order). */
export function startsWithTrial(offer: { type: 'one_off' | 'recurring'; trial_days: number | null }): boolean {
  return offer.type === 'recurring' && (offer.trial_days ?? 0) > 0;
}

/** PIX is a BRL instant payment that cannot save a card for later: BRL only, never with a free trial. */
export function pixAllowed(currency: string, trial: boolean): boolean {
  return currency === 'brl' && !trial;
}

/** expires_at as sent (exactly 30 minutes to 24 hours from now, as the spec says: no tolerance) or the 24-hour default. */
export function resolveExpiresAt(requested: number | undefined | null, nowSeconds: number): number {
  if (requested === undefined || requested === null) return nowSeconds + EXPIRY_MAX_SECONDS;
  const earliest = nowSeconds + EXPIRY_MIN_SECONDS;
  const latest = nowSeconds + EXPIRY_MAX_SECONDS;
  if (!Number.isInteger(requested) || requested < earliest || requested > latest) {
    throw invalid('expires_at', 'expires_at must be a Unix timestamp between 30 minutes and 24 hours from now.');
  }
  return requested;
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** success_url / cancel_url: https:// (or http://localhost in development), up to 2000 characters. */
export function validateRedirectUrl(param: string, value: string, development: boolean): string {
  if (value.length > URL_MAX_LENGTH) throw invalid(param, `${param} can be up to ${URL_MAX_LENGTH} characters long.`);
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw invalid(param, `${param} must be an absolute https:// URL.`);
  }
  if (parsed.protocol === 'https:' && parsed.hostname !== '') return value;
  if (development && parsed.protocol === 'http:' && LOCAL_HOSTS.has(parsed.hostname)) return value;
  throw invalid(
    param,
    development ? `${param} must be an https:// URL (http://localhost is accepted in development).` : `${param} must be an https:// URL.`,
  );
}

/** The success URL the buyer is sent to: the placeholder (also percent-encoded) replaced by the id. */
export function fillSessionPlaceholder(url: string, sessionId: string): string {
  return url.split(CHECKOUT_SESSION_ID_PLACEHOLDER).join(sessionId).split('%7BCHECKOUT_SESSION_ID%7D').join(sessionId);
}

export interface Price {
  currency: string;
  amount: number;
  default: boolean;
}

export function defaultPrice(prices: Price[]): Price | null {
  return prices.find((p) => p.default) ?? prices[0] ?? null;
}

export function priceIn(prices: Price[], currency: string | null): Price | null {
  if (currency === null) return defaultPrice(prices);
  return prices.find((p) => p.currency === currency) ?? null;
}

/** The session's amount_total: the offer price in the session (or default) currency; null with a pack. */
export function sessionAmountTotal(prices: Price[], currency: string | null, pack: number | null): number | null {
  if (pack !== null) return null;
  return priceIn(prices, currency)?.amount ?? null;
}

/** Currency a currency parameter asks for, or currency_unsupported listing the offer's currencies. */
export function checkCurrency(prices: Price[], requested: string): string {
  const currency = requested.trim().toLowerCase();
  if (!prices.some((p) => p.currency === currency)) {
    const available = prices.map((p) => p.currency).join(', ');
    throw new ApiError('currency_unsupported', `The offer has no price in '${currency}'. Available currencies: ${available}.`, {
      param: 'currency',
    });
  }
  return currency;
}

export function checkPack(packs: number[], pack: number, param = 'pack'): number {
  if (!Number.isInteger(pack) || pack < PACK_MIN || pack > PACK_MAX) {
    throw invalid(param, `pack must be an integer from ${PACK_MIN} to ${PACK_MAX}.`);
  }
  if (!packs.includes(pack)) {
    const available = packs.length > 0 ? `Available packs: ${packs.join(', ')}.` : 'The offer has no packs.';
    throw new ApiError('pack_unavailable', `The offer has no pack of ${pack} units. ${available}`, { param });
  }
  return pack;
}

export interface CouponTerms {
  code: string;
  percent_off: number | null;
  amount_off: number | null;
  currency: string | null;
}

/** A coupon's discount on a subtotal: percent rounded to the minor unit, amounts only in their currency. */
export function couponDiscount(coupon: CouponTerms | null, subtotal: number, currency: string): number {
  if (!coupon) return 0;
  let discount = 0;
  if (coupon.percent_off !== null) discount = Math.round((subtotal * coupon.percent_off) / 100);
  else if (coupon.amount_off !== null && coupon.currency === currency) discount = coupon.amount_off;
  return Math.max(0, Math.min(subtotal, discount));
}

/** What the buyer is charged for one checkout payment (the page computes it; the workflow's `pay` carries it). */
export interface PaymentAmounts {
  currency: string;
  quantity: number;
  unit_amount: number;
  amount_subtotal: number;
  amount_discount: number;
  amount_total: number;
}

/** What the buyer pays: unit price times the pack (1 without one), minus the coupon. */
export function chargeAmounts(price: { currency: string; amount: number }, pack: number | null, coupon: CouponTerms | null): PaymentAmounts {
  const quantity = pack ?? 1;
  const subtotal = price.amount * quantity;
  const discount = couponDiscount(coupon, subtotal, price.currency);
  return {
    currency: price.currency,
    quantity,
    unit_amount: price.amount,
    amount_subtotal: subtotal,
    amount_discount: discount,
    amount_total: subtotal - discount,
  };
}

export interface StoreAddressing {
  slug: string | null;
  custom_domain: string | null;
}

/** Where the hosted checkout of a store lives: its custom domain, else {checkout_url}. */
export function checkoutBase(store: StoreAddressing, checkoutUrl: string): string {
  return store.custom_domain ? `https://${store.custom_domain}` : checkoutUrl;
}

/**
 * An offer's link (`checkout_url`): on the store's custom domain `/o/<slug or id>`; on the shared
 * {checkout_url}, where offer slugs of different stores may meet, `/o/<store slug>/<offer slug>`, else `/o/<ofr_id>`.
 */
export function offerLinkUrl(store: StoreAddressing, offer: { _id: string; slug: string | null }, checkoutUrl: string): string {
  if (store.custom_domain) return `${checkoutBase(store, checkoutUrl)}/o/${encodeURIComponent(offer.slug ?? offer._id)}`;
  if (store.slug && offer.slug) return `${checkoutUrl}/o/${encodeURIComponent(store.slug)}/${encodeURIComponent(offer.slug)}`;
  return `${checkoutUrl}/o/${offer._id}`;
}

/**
 * Whether an offer link can open a checkout now: the same conditions a new session checks (store
 * selling and not blocked, offer and product active, a price), asked before anything is created.
 */
export function offerOnSale(
  store: { active: boolean; plan_overdue: boolean },
  offer: { active: boolean; prices: unknown[] },
  product: { active: boolean } | null,
): boolean {
  return store.active && !store.plan_overdue && offer.active && (product?.active ?? true) && offer.prices.length > 0;
}

/** The page language a browser asks for (Accept-Language), among the checkout's; null when none fits. */
export function localeFromAcceptLanguage(header: string | undefined): CheckoutLocale | null {
  const wanted = (header ?? '')
    .split(',')
    .map((part) => {
      const [tag, ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([\d.]+)/.exec(p)?.[1]).find(Boolean);
      return { lang: tag.toLowerCase().split('-')[0], q: q === undefined ? 1 : Number(q) };
    })
    .filter((entry) => entry.q > 0)
    .sort((a, b) => b.q - a.q);
  return (
    (wanted.map((entry) => entry.lang).find((lang) => (CHECKOUT_LOCALES as readonly string[]).includes(lang)) as CheckoutLocale | undefined) ?? null
  );
}

export function checkoutPageUrl(base: string, sessionId: string): string {
  return `${base}/c/${sessionId}`;
}

/** The store's portal address: its custom domain, else {portal_url}/{slug}; null when it has neither. */
export function portalAddress(store: StoreAddressing, portalUrl: string): string | null {
  if (store.custom_domain) return `https://${store.custom_domain}`;
  if (store.slug) return `${portalUrl}/${encodeURIComponent(store.slug)}`;
  return null;
}

/**
 * The status a session has now: an open session past its deadline is expired, whoever looks. A session
 * on a test clock has its deadline on the clock's time: its workflow expires it, so the stored status holds.
 */
export function effectiveStatus(
  session: { status: SessionStatus; expires_at: number; test_clock?: string | null },
  nowSeconds: number,
): SessionStatus {
  if (session.status === 'open' && !session.test_clock && nowSeconds >= session.expires_at) return 'expired';
  return session.status;
}

/** Installments a buyer may choose: 1..max_installments for cards (1 when the offer allows none). */
export function checkInstallments(requested: number | null | undefined, maxInstallments: number | null): number {
  const max = maxInstallments && maxInstallments > 1 ? maxInstallments : 1;
  const n = requested ?? 1;
  if (!Number.isInteger(n) || n < 1 || n > max) throw invalid('installments', `installments must be from 1 to ${max}.`);
  return n;
}

/** Digits of a card number as typed (spaces and dashes allowed). */
export function cardDigits(raw: string): string | null {
  const digits = raw.replace(/[\s-]/g, '');
  return /^\d{12,19}$/.test(digits) ? digits : null;
}
