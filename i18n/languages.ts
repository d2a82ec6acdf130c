// The ten languages the hosted pages and the buyer e-mails speak (the ten locales a checkout session
// accepts), and the region whose conventions each one's money and dates follow.

export const LANGUAGES = ['en', 'pt', 'es', 'fr', 'de', 'it', 'ja', 'ko', 'ru', 'zh'] as const;
export type Language = (typeof LANGUAGES)[number];

/** The region whose conventions each language's money and dates follow (pt is Brazil's, zh is Simplified Chinese). */
export const INTL_TAGS: Record<Language, string> = {
  en: 'en-US',
  pt: 'pt-BR',
  es: 'es-ES',
  fr: 'fr-FR',
  de: 'de-DE',
  it: 'it-IT',
  ja: 'ja-JP',
  ko: 'ko-KR',
  ru: 'ru-RU',
  zh: 'zh-CN',
};

/** A language's words filled in: `{name}` takes `vars.name`; a placeholder without a value stays as written. */
export function fillIn(template: string, vars: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in vars ? String(vars[name]) : whole));
}
