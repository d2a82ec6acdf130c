// The hosted pages' words: which language a page speaks (the session's or customer's locale, then the
// browser's, then English) and its words in that language.
import { localeFromAcceptLanguage } from '../domain/checkout';
import { PAGE_KEYS, type PageKey } from './dictionary';
import { fillIn, LANGUAGES, type Language } from './languages';
import { DICTIONARIES } from './words';

const PAGE_KEY_SET: ReadonlySet<string> = new Set(PAGE_KEYS);

/** The page language of a locale ("pt-BR" -> pt, "zh-TW" -> zh), or null when the pages do not speak it. */
export function spokenLanguage(locale: string | null | undefined): Language | null {
  const base = (locale ?? '').trim().toLowerCase().split(/[-_]/)[0];
  return (LANGUAGES as readonly string[]).includes(base) ? (base as Language) : null;
}

/** The page language for a session or customer locale ("pt-BR" -> pt); anything else is English. */
export function pageLanguage(locale: string | null | undefined): Language {
  return spokenLanguage(locale) ?? 'en';
}

/**
 * The language a page speaks: the first of the given locales that is one of the ten (a checkout
 * session's, then its customer's; a portal customer's), else the browser's (Accept-Language, by
 * preference), else English.
 */
export function choosePageLanguage(locales: Array<string | null | undefined>, acceptLanguage?: string | string[]): Language {
  for (const locale of locales) {
    const language = spokenLanguage(locale);
    if (language) return language;
  }
  const header = Array.isArray(acceptLanguage) ? acceptLanguage.join(',') : acceptLanguage;
  return localeFromAcceptLanguage(header) ?? 'en';
}

/** A page word in the language, its placeholders filled in. */
export function translate(language: Language, key: PageKey, vars: Record<string, string | number> = {}): string {
  return fillIn(DICTIONARIES[language].page[key], vars);
}

/** Whether a text built at run time (`status_${status}`) is a page word. */
export function hasKey(key: string): key is PageKey {
  return PAGE_KEY_SET.has(key);
}
