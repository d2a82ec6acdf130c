// Money and dates as each language writes them (Intl, with the language's region), for the hosted pages
// and the buyer e-mails alike.
import { currencyDecimals } from '../domain/charges';
import { INTL_TAGS, type Language } from './languages';

const formatters = new Map<string, Intl.NumberFormat>();

/**
 * Minor units as money in the page's language: 19700 brl in pt -> "R$ 197,00", 1250 eur in de ->
 * "12,50 €", 1500 jpy in ja -> "￥1,500". The decimals are the currency's minor unit as the API counts
 * it (`currencyDecimals`: none for jpy or krw, three for kwd), not Intl's own idea of them, which
 * drops the cents of cop, huf, idr or isk and would show 100 times the amount.
 */
export function formatMoney(amount: number, currency: string, language: Language): string {
  const code = currency.toLowerCase();
  const cacheKey = `${language}:${code}`;
  const digits = currencyDecimals(code);
  let formatter = formatters.get(cacheKey);
  if (!formatter) {
    formatter = new Intl.NumberFormat(INTL_TAGS[language], {
      style: 'currency',
      currency: code.toUpperCase(),
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    });
    formatters.set(cacheKey, formatter);
  }
  return formatter.format(amount / 10 ** digits);
}

// Korean's 12-hour clock comes out as "PM 12:05" from Intl (not 오후): its 24-hour clock reads naturally.
const HOUR_CYCLES: Partial<Record<Language, 'h23'>> = { ko: 'h23' };

/** A date (or date and time, with its zone shown) in the page's language and the store's time zone. */
export function formatDate(unixSeconds: number, language: Language, options: { withTime?: boolean; timeZone?: string } = {}): string {
  const timeZone = options.timeZone ?? 'UTC';
  const format: Intl.DateTimeFormatOptions = options.withTime
    ? {
        year: 'numeric',
        month: 'short',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: HOUR_CYCLES[language],
        timeZoneName: 'short',
        timeZone,
      }
    : { year: 'numeric', month: 'short', day: 'numeric', timeZone };
  try {
    return new Intl.DateTimeFormat(INTL_TAGS[language], format).format(new Date(unixSeconds * 1000));
  } catch {
    return new Intl.DateTimeFormat(INTL_TAGS[language], { ...format, timeZone: 'UTC' }).format(new Date(unixSeconds * 1000));
  }
}
