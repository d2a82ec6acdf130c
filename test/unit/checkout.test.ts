// What this tests: the pure checkout rules (domain/checkout.ts, i18n/pages.ts): expiry
// bounds, redirect-URL rules, the placeholder, amounts with packs and coupons, addresses of the
// hosted checkout and portal, the status an overdue session has, and locale fallback and money.
import { describe, expect, test } from 'vitest';
import { ApiError } from '../../domain/errors';
import {
  chargeAmounts,
  checkCurrency,
  checkInstallments,
  checkPack,
  checkoutBase,
  couponDiscount,
  effectiveStatus,
  fillSessionPlaceholder,
  portalAddress,
  resolveExpiresAt,
  offerLinkUrl,
  localeFromAcceptLanguage,
  sessionAmountTotal,
  validateRedirectUrl,
} from '../../domain/checkout';
import { formatMoney } from '../../i18n/format';
import { pageLanguage, translate } from '../../i18n/pages';

const prices = [
  { currency: 'brl', amount: 19700, default: true },
  { currency: 'usd', amount: 3900, default: false },
];

function codeOf(fn: () => unknown): { code: string; param: string | null } | null {
  try {
    fn();
    return null;
  } catch (error) {
    if (error instanceof ApiError) return { code: error.code, param: error.param };
    throw error;
  }
}

describe('expires_at', () => {
  const now = 1_800_000_000;
  test('defaults to 24 hours and accepts 30 minutes to 24 hours from now', () => {
    expect(resolveExpiresAt(undefined, now)).toBe(now + 86_400);
    expect(resolveExpiresAt(now + 1800, now)).toBe(now + 1800);
    expect(resolveExpiresAt(now + 86_400, now)).toBe(now + 86_400);
  });
  test('refuses earlier than 30 minutes, later than 24 hours (one second is enough: no tolerance), and non-integers with parameter_invalid expires_at', () => {
    for (const value of [now + 1799, now + 1700, now - 10, now + 86_401, now + 86_400 + 60, now + 3600.5]) {
      expect(codeOf(() => resolveExpiresAt(value, now))).toEqual({ code: 'parameter_invalid', param: 'expires_at' });
    }
  });
});

describe('redirect URLs', () => {
  test('https is accepted; http only for localhost in development; other schemes and garbage are refused', () => {
    expect(validateRedirectUrl('success_url', 'https://shop.example.com/ok?cs={CHECKOUT_SESSION_ID}', false)).toContain('{CHECKOUT_SESSION_ID}');
    expect(validateRedirectUrl('success_url', 'http://localhost:3000/ok', true)).toBe('http://localhost:3000/ok');
    expect(validateRedirectUrl('cancel_url', 'http://127.0.0.1:8080/back', true)).toBe('http://127.0.0.1:8080/back');
    for (const [url, dev] of [
      ['http://localhost:3000/ok', false],
      ['http://shop.example.com/ok', true],
      ['ftp://shop.example.com', true],
      ['javascript:alert(1)', true],
      ['/relative', true],
      [`https://shop.example.com/${'a'.repeat(2000)}`, true],
    ] as const) {
      expect(codeOf(() => validateRedirectUrl('success_url', url, dev))).toEqual({ code: 'parameter_invalid', param: 'success_url' });
    }
  });
  test('the placeholder is replaced, also percent-encoded, only when redirecting', () => {
    expect(fillSessionPlaceholder('https://s.example/ok?a={CHECKOUT_SESSION_ID}&b={CHECKOUT_SESSION_ID}', 'cs_1')).toBe(
      'https://s.example/ok?a=cs_1&b=cs_1',
    );
    expect(fillSessionPlaceholder('https://s.example/ok?a=%7BCHECKOUT_SESSION_ID%7D', 'cs_2')).toBe('https://s.example/ok?a=cs_2');
  });
});

describe('amounts', () => {
  test('amount_total is the price in the session (or default) currency, and null with a pack', () => {
    expect(sessionAmountTotal(prices, null, null)).toBe(19700);
    expect(sessionAmountTotal(prices, 'usd', null)).toBe(3900);
    expect(sessionAmountTotal(prices, 'usd', 5)).toBeNull();
  });
  test('a coupon takes a rounded percentage, or its fixed amount only in its own currency, never more than the subtotal', () => {
    expect(couponDiscount({ code: 'X', percent_off: 10, amount_off: null, currency: null }, 19700, 'brl')).toBe(1970);
    expect(couponDiscount({ code: 'X', percent_off: 33, amount_off: null, currency: null }, 999, 'brl')).toBe(330);
    expect(couponDiscount({ code: 'X', percent_off: null, amount_off: 500, currency: 'brl' }, 19700, 'brl')).toBe(500);
    expect(couponDiscount({ code: 'X', percent_off: null, amount_off: 500, currency: 'brl' }, 3900, 'usd')).toBe(0);
    expect(couponDiscount({ code: 'X', percent_off: null, amount_off: 50_000, currency: 'brl' }, 19700, 'brl')).toBe(19700);
  });
  test('the charge is unit price times the pack, minus the coupon', () => {
    expect(chargeAmounts(prices[0], 5, { code: 'W', percent_off: 10, amount_off: null, currency: null })).toEqual({
      currency: 'brl',
      quantity: 5,
      unit_amount: 19700,
      amount_subtotal: 98500,
      amount_discount: 9850,
      amount_total: 88650,
    });
    expect(chargeAmounts(prices[1], null, null).amount_total).toBe(3900);
  });
  test('currency, pack and installments are checked with their codes and params', () => {
    expect(checkCurrency(prices, 'USD')).toBe('usd');
    expect(codeOf(() => checkCurrency(prices, 'eur'))).toEqual({ code: 'currency_unsupported', param: 'currency' });
    expect(checkPack([1, 5], 5)).toBe(5);
    expect(codeOf(() => checkPack([1, 5], 3))).toEqual({ code: 'pack_unavailable', param: 'pack' });
    expect(codeOf(() => checkPack([1, 5], 0))).toEqual({ code: 'parameter_invalid', param: 'pack' });
    expect(checkInstallments(12, 12)).toBe(12);
    expect(codeOf(() => checkInstallments(2, null))).toEqual({ code: 'parameter_invalid', param: 'installments' });
  });
});

describe('addresses and status', () => {
  test('checkout and portal live on the custom domain when there is one, else on the configured bases', () => {
    expect(checkoutBase({ slug: 's', custom_domain: null }, 'https://pay.example.com')).toBe('https://pay.example.com');
    expect(checkoutBase({ slug: 's', custom_domain: 'pay.shop.example' }, 'https://pay.example.com')).toBe('https://pay.shop.example');
    expect(portalAddress({ slug: 'my-shop', custom_domain: null }, 'https://portal.example.com')).toBe('https://portal.example.com/my-shop');
    expect(portalAddress({ slug: null, custom_domain: 'account.shop.example' }, 'https://portal.example.com')).toBe('https://account.shop.example');
    expect(portalAddress({ slug: null, custom_domain: null }, 'https://portal.example.com')).toBeNull();
  });
  test('an open session is expired from its deadline on; closed sessions keep their status', () => {
    expect(effectiveStatus({ status: 'open', expires_at: 100 }, 99)).toBe('open');
    expect(effectiveStatus({ status: 'open', expires_at: 100 }, 100)).toBe('expired');
    expect(effectiveStatus({ status: 'complete', expires_at: 100 }, 200)).toBe('complete');
  });
});

describe('languages', () => {
  test('each of the ten locales has its words (a region tag names its language); others are English', () => {
    expect(pageLanguage('pt')).toBe('pt');
    expect(pageLanguage('pt-BR')).toBe('pt');
    expect(pageLanguage('es')).toBe('es');
    for (const own of ['fr', 'de', 'it', 'ja', 'ko', 'ru', 'zh'] as const) expect(pageLanguage(own)).toBe(own);
    for (const other of ['nl', 'xx', '', null]) expect(pageLanguage(other)).toBe('en');
    expect(translate('pt', 'pay', { amount: 'R$ 1,00' })).toBe('Pagar R$ 1,00');
    expect(translate('es', 'thank_you')).toBe('¡Gracias!');
    expect(translate('en', 'pack_of', { n: 5 })).toBe('Pack of 5 units');
  });
  test('money is formatted from minor units with the currency decimals', () => {
    expect(formatMoney(19700, 'brl', 'pt').replace(/\s/g, ' ')).toBe('R$ 197,00');
    expect(formatMoney(3900, 'usd', 'en')).toBe('$39.00');
    expect(formatMoney(1500, 'jpy', 'en')).toBe('¥1,500');
  });
});

describe('offer links and browser languages', () => {
  test('the shared host names the store when both have slugs, else the offer id; a custom domain takes the offer slug', () => {
    const base = 'https://pay.example.com';
    expect(offerLinkUrl({ slug: 'lumen', custom_domain: null }, { _id: 'ofr_1', slug: 'course' }, base)).toBe(
      'https://pay.example.com/o/lumen/course',
    );
    expect(offerLinkUrl({ slug: null, custom_domain: null }, { _id: 'ofr_1', slug: 'course' }, base)).toBe('https://pay.example.com/o/ofr_1');
    expect(offerLinkUrl({ slug: 'lumen', custom_domain: null }, { _id: 'ofr_1', slug: null }, base)).toBe('https://pay.example.com/o/ofr_1');
    expect(offerLinkUrl({ slug: 'lumen', custom_domain: 'shop.example' }, { _id: 'ofr_1', slug: 'course' }, base)).toBe(
      'https://shop.example/o/course',
    );
  });

  test('Accept-Language picks the best-weighted language the checkout has', () => {
    expect(localeFromAcceptLanguage('pt-BR,pt;q=0.9,en;q=0.8')).toBe('pt');
    expect(localeFromAcceptLanguage('nl-NL, de;q=0.7, en;q=0.9')).toBe('en');
    expect(localeFromAcceptLanguage('ja;q=0, ko')).toBe('ko');
    expect(localeFromAcceptLanguage('nl')).toBeNull();
    expect(localeFromAcceptLanguage(undefined)).toBeNull();
  });
});
