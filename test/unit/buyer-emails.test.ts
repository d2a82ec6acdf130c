// What this tests: the buyer e-mails' words and rendering (i18n/buyer-emails.ts): every one of the ten
// languages renders both e-mails with product, amount and period and no placeholder left; the buyer's
// language is the first known locale, then the store country's, then English; store text is escaped in HTML;
// a late-payment refund names its order only when there is one (a closed checkout session's has none).
import { describe, expect, test } from 'vitest';
import { emailLanguage, renderCancellationEmail, renderLateRefundEmail, renderPaymentConfirmation } from '../../i18n/buyer-emails';
import { formatMoney as emailMoney } from '../../i18n/format';
import { LANGUAGES as EMAIL_LANGUAGES } from '../../i18n/languages';

const NOV_24 = Date.UTC(2026, 10, 24, 12) / 1000;
const DEC_24 = Date.UTC(2026, 11, 24, 12) / 1000;
const facts = { storeName: 'Loja <Aurora> & Co', timeZone: 'America/Sao_Paulo', customerName: 'Ana' };

describe('every language', () => {
  test.each(EMAIL_LANGUAGES)(
    '%s: the payment confirmation and the cancellation e-mail name product, amount and period, with no placeholder left',
    (language) => {
      const paid = renderPaymentConfirmation({
        ...facts,
        language,
        kind: 'renewal',
        product: 'Photo Club',
        amount: 4990,
        currency: 'brl',
        paidAt: NOV_24,
        period: { start: NOV_24, end: DEC_24 },
        orderId: 'ord_1',
      });
      const amount = emailMoney(4990, 'brl', language);
      expect(paid.subject).toContain('Photo Club');
      expect(paid.subject).toContain(amount);
      expect(paid.text).toContain('2026');
      expect(paid.text).toContain('ord_1');
      const canceled = renderCancellationEmail({
        ...facts,
        language,
        product: 'Photo Club',
        amount: 4990,
        currency: 'brl',
        cycle: 'custom',
        customBillingDays: 10,
        canceledAt: NOV_24,
        period: { start: NOV_24, end: DEC_24 },
        subscriptionId: 'sub_1',
      });
      expect(canceled.subject).toContain('Photo Club');
      expect(canceled.text).toContain(amount);
      expect(canceled.text).toContain('10');
      for (const mail of [paid, canceled]) {
        expect(mail.subject + mail.text + mail.html).not.toMatch(/\{\w+\}/);
        expect(mail.html).toContain(`<html lang="${language}">`);
      }
    },
  );
});

test('a one-time payment shows its date in the store time zone instead of a period', () => {
  // 02:00 UTC on Nov 25 is still Nov 24 in São Paulo.
  const mail = renderPaymentConfirmation({
    ...facts,
    language: 'en',
    kind: 'purchase',
    product: 'Course',
    amount: 19700,
    currency: 'brl',
    paidAt: Date.UTC(2026, 10, 25, 2) / 1000,
    period: null,
    orderId: 'ord_2',
  });
  expect(mail.subject).toBe('Payment confirmed: Course, R$197.00 (Nov 24, 2026, one-time purchase)');
});

test('the language: the first locale we write, then the store country, then English', () => {
  expect(emailLanguage([null, 'pt-BR', 'de'], 'US')).toBe('pt');
  expect(emailLanguage(['xx', undefined, 'JA'], 'BR')).toBe('ja');
  expect(emailLanguage([null], 'MX')).toBe('es');
  expect(emailLanguage([], 'KR')).toBe('ko');
  expect(emailLanguage([null], 'NL')).toBe('en');
});

test('store and buyer text is escaped in the HTML body, kept as is in the text body', () => {
  const mail = renderPaymentConfirmation({
    ...facts,
    customerName: '<b>Ana</b>',
    language: 'en',
    kind: 'charge',
    product: 'A & B',
    amount: 100,
    currency: 'usd',
    paidAt: NOV_24,
    period: null,
    orderId: 'ord_3',
  });
  expect(mail.html).toContain('Loja &lt;Aurora&gt; &amp; Co');
  expect(mail.html).toContain('&lt;b&gt;Ana&lt;/b&gt;');
  expect(mail.html).not.toContain('<b>Ana</b>');
  expect(mail.text).toContain('Hello <b>Ana</b>,');
});

describe('the late-payment refund e-mail', () => {
  const late = { ...facts, language: 'en' as const, product: 'Photo Club', amount: 4990, currency: 'brl', refundedAt: NOV_24 };

  test('names the order it refunded', () => {
    const mail = renderLateRefundEmail({ ...late, orderId: 'ord_1' });
    expect(mail.subject).toBe(`Your payment was given back: ${emailMoney(4990, 'brl', 'en')}`);
    expect(mail.text).toContain('Order: ord_1');
  });

  test('given back by a checkout session that never made an order: no order row, the rest the same', () => {
    const mail = renderLateRefundEmail({ ...late, orderId: null });
    expect(mail.text).toContain('Photo Club');
    expect(mail.text).toContain(emailMoney(4990, 'brl', 'en'));
    expect(mail.text).not.toMatch(/Order:/);
    expect(mail.html).not.toContain('null');
  });
});
