// What this tests: the hosted pages' ten languages (i18n/pages.ts, i18n/<language>.ts): every table
// keeps English's placeholders and leaves nothing in English; which language a page speaks (session,
// customer, Accept-Language, English); money in each language with the API's minor units (no cents
// for jpy or krw, three decimals for kwd, two for huf or isk though Intl would drop them); dates.
import { describe, expect, test } from 'vitest';
import { PAGE_KEYS as MESSAGE_KEYS } from '../../i18n/dictionary';
import { formatDate, formatMoney } from '../../i18n/format';
import { LANGUAGES as PAGE_LANGUAGES, type Language as PageLanguage } from '../../i18n/languages';
import { choosePageLanguage, translate } from '../../i18n/pages';
import { CHECKOUT_LOCALES } from '../../domain/checkout';

/** Intl separates with no-break and narrow no-break spaces; compared as plain spaces. */
const plain = (text: string) => text.replace(/[\u00a0\u202f]/g, ' ');
const placeholders = (template: string) => [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

const NOV_24_1505_UTC = Date.UTC(2026, 10, 24, 15, 5) / 1000;

// Words that are the same in English and the language on purpose (names, acronyms, cognates).
const SAME_AS_ENGLISH: Record<PageLanguage, string[]> = {
  en: [],
  pt: ['pix', 'doc_cpf', 'doc_cnpj', 'subtotal', 'total', 'email'],
  es: ['pix', 'doc_cpf', 'doc_cnpj', 'subtotal', 'total'],
  fr: ['pix', 'doc_cpf', 'doc_cnpj', 'total', 'date'],
  de: ['pix', 'doc_cpf', 'doc_cnpj', 'status'],
  it: ['pix', 'doc_cpf', 'doc_cnpj'],
  ja: ['pix', 'doc_cpf', 'doc_cnpj'],
  ko: ['pix', 'doc_cpf', 'doc_cnpj'],
  ru: ['pix', 'doc_cpf', 'doc_cnpj'],
  zh: ['pix', 'doc_cpf', 'doc_cnpj'],
};

describe('the tables', () => {
  test('the pages speak exactly the ten locales a checkout session accepts', () => {
    expect([...PAGE_LANGUAGES].sort()).toEqual([...CHECKOUT_LOCALES].sort());
  });

  test.each(PAGE_LANGUAGES.filter((l) => l !== 'en'))('%s: every word keeps English placeholders, and none is left in English', (language) => {
    const untranslated: string[] = [];
    for (const key of MESSAGE_KEYS) {
      const own = translate(language, key);
      const english = translate('en', key);
      expect(own.trim(), key).not.toBe('');
      expect(placeholders(own), key).toEqual(placeholders(english));
      if (own === english) untranslated.push(key);
    }
    for (const key of untranslated) expect(SAME_AS_ENGLISH[language], `${language}.${key} is still English`).toContain(key);
  });

  test('placeholders are filled in any language, a count stays in the sentence', () => {
    expect(translate('de', 'pay', { amount: '12,50 €' })).toBe('12,50 € bezahlen');
    expect(translate('ja', 'pay', { amount: '￥1,500' })).toBe('￥1,500を支払う');
    expect(translate('fr', 'redirecting', { n: 5 })).toBe('Vous allez être redirigé vers la boutique dans 5\u00a0s.');
    expect(translate('ru', 'pack_of', { n: 21 })).toBe('Упаковка: 21 шт.');
    expect(translate('zh', 'next_billing', { date: '2026年11月24日' })).toBe('下次扣款日期：2026年11月24日');
  });
});

describe('which language a page speaks', () => {
  test('the first locale given that the pages speak: a session locale before its customer’s, a region tag by its language', () => {
    expect(choosePageLanguage(['ja', 'de'], 'fr')).toBe('ja');
    expect(choosePageLanguage([null, 'pt-BR'], 'fr')).toBe('pt');
    expect(choosePageLanguage(['zh-TW'], undefined)).toBe('zh');
    expect(choosePageLanguage(['ko_KR'], undefined)).toBe('ko');
  });

  test('without one, the browser’s best-weighted language among the ten; else English', () => {
    expect(choosePageLanguage([null, 'nl'], 'nl-NL, ru;q=0.8, de;q=0.9')).toBe('de');
    expect(choosePageLanguage([], ['it-IT,it;q=0.9'])).toBe('it');
    expect(choosePageLanguage([undefined], 'nl')).toBe('en');
    expect(choosePageLanguage([], undefined)).toBe('en');
  });
});

describe('money', () => {
  test('each language writes a price its own way', () => {
    const cases: Array<[PageLanguage, number, string, string]> = [
      ['en', 3900, 'usd', '$39.00'],
      ['pt', 19700, 'brl', 'R$ 197,00'],
      ['es', 1250, 'eur', '12,50 €'],
      ['fr', 1250, 'eur', '12,50 €'],
      ['de', 1250, 'eur', '12,50 €'],
      ['it', 1250, 'eur', '12,50 €'],
      ['ja', 1500, 'jpy', '￥1,500'],
      ['ko', 1500000, 'krw', '₩1,500,000'],
      ['ru', 150000, 'rub', '1 500,00 ₽'],
      ['zh', 4990, 'cny', '¥49.90'],
      ['de', 1500, 'jpy', '1.500 ¥'],
      ['fr', 1234567, 'eur', '12 345,67 €'],
    ];
    for (const [language, amount, currency, expected] of cases)
      expect(plain(formatMoney(amount, currency, language)), `${language} ${currency}`).toBe(expected);
  });

  test('the decimals are the API minor unit’s: none for jpy and krw, three for kwd, two for huf, isk and cop', () => {
    expect(formatMoney(1500, 'jpy', 'en')).toBe('¥1,500');
    expect(formatMoney(1500, 'JPY', 'ja')).toBe('￥1,500');
    expect(formatMoney(15000, 'krw', 'ko')).toBe('₩15,000');
    expect(plain(formatMoney(1234, 'kwd', 'en'))).toBe('KWD 1.234');
    expect(plain(formatMoney(10000, 'huf', 'en'))).toBe('HUF 100.00');
    expect(plain(formatMoney(10000, 'isk', 'en'))).toBe('ISK 100.00');
    expect(plain(formatMoney(10050, 'cop', 'es'))).toBe('100,50 COP');
  });
});

describe('dates', () => {
  test('a day in each language', () => {
    const expected: Record<PageLanguage, string> = {
      en: 'Nov 24, 2026',
      pt: '24 de nov. de 2026',
      es: '24 nov 2026',
      fr: '24 nov. 2026',
      de: '24. Nov. 2026',
      it: '24 nov 2026',
      ja: '2026年11月24日',
      ko: '2026년 11월 24일',
      ru: '24 нояб. 2026 г.',
      zh: '2026年11月24日',
    };
    for (const language of PAGE_LANGUAGES)
      expect(plain(formatDate(NOV_24_1505_UTC, language, { timeZone: 'UTC' })), language).toBe(expected[language]);
  });

  test('a time in the store’s zone, with the zone; Korean on a 24-hour clock; an unknown zone is UTC', () => {
    expect(plain(formatDate(NOV_24_1505_UTC, 'de', { withTime: true, timeZone: 'America/Sao_Paulo' }))).toBe('24. Nov. 2026, 12:05 GMT-3');
    expect(plain(formatDate(NOV_24_1505_UTC, 'en', { withTime: true, timeZone: 'America/Sao_Paulo' }))).toBe('Nov 24, 2026, 12:05 PM GMT-3');
    expect(plain(formatDate(NOV_24_1505_UTC, 'ko', { withTime: true, timeZone: 'Asia/Seoul' }))).toBe('2026년 11월 25일 00:05 GMT+9');
    expect(plain(formatDate(NOV_24_1505_UTC, 'ja', { withTime: true, timeZone: 'Not/AZone' }))).toBe('2026年11月24日 15:05 UTC');
  });
});
