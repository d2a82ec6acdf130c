// The buyer e-mails (purchase confirmation, cancellation e-mail, refund e-mail) in the ten languages: the language a
// buyer gets and the rendering of subject, plain text and HTML from the facts, in the words of
// i18n/<language>.ts. Pure: services/buyer-emails.ts gathers the facts and sends.
import type { BillingCycle } from '../domain/billing-periods';
import type { EmailKey } from './dictionary';
import { formatDate, formatMoney } from './format';
import { fillIn, LANGUAGES, type Language } from './languages';
import { DICTIONARIES } from './words';

/** The language of a store's country, used when the buyer's own is unknown. */
const COUNTRY_LANGUAGES: Record<string, Language> = {
  ...Object.fromEntries(['BR', 'PT', 'AO', 'MZ', 'CV', 'GW', 'ST', 'TL'].map((c) => [c, 'pt'])),
  ...Object.fromEntries(
    ['ES', 'MX', 'AR', 'CO', 'CL', 'PE', 'VE', 'EC', 'GT', 'CU', 'BO', 'DO', 'HN', 'PY', 'SV', 'NI', 'CR', 'PA', 'UY', 'PR', 'GQ'].map((c) => [
      c,
      'es',
    ]),
  ),
  ...Object.fromEntries(['FR', 'BE', 'LU', 'MC', 'SN', 'CI', 'CM', 'MG', 'ML', 'BF', 'NE', 'TG', 'BJ', 'GA', 'CG', 'CD', 'HT'].map((c) => [c, 'fr'])),
  ...Object.fromEntries(['DE', 'AT', 'CH', 'LI'].map((c) => [c, 'de'])),
  ...Object.fromEntries(['IT', 'SM', 'VA'].map((c) => [c, 'it'])),
  JP: 'ja',
  KR: 'ko',
  ...Object.fromEntries(['RU', 'BY', 'KZ', 'KG'].map((c) => [c, 'ru'])),
  ...Object.fromEntries(['CN', 'TW', 'HK', 'MO'].map((c) => [c, 'zh'])),
};

function supported(locale: string | null | undefined): Language | null {
  const base = (locale ?? '').slice(0, 2).toLowerCase();
  return (LANGUAGES as readonly string[]).includes(base) ? (base as Language) : null;
}

/**
 * The buyer's language: the first of the given locales we write (a checkout session's, the
 * customer's, ...), else the store country's language, else English.
 */
export function emailLanguage(locales: Array<string | null | undefined>, storeCountry: string | null): Language {
  for (const locale of locales) {
    const language = supported(locale);
    if (language) return language;
  }
  return COUNTRY_LANGUAGES[(storeCountry ?? '').toUpperCase()] ?? 'en';
}

/** An e-mail word in the language, its placeholders filled in. */
export function emailText(language: Language, key: EmailKey, vars: Record<string, string | number> = {}): string {
  return fillIn(DICTIONARIES[language].email[key], vars);
}

/** A day in the language and the store's time zone (UTC when the zone is unknown). */
const emailDate = (unixSeconds: number, language: Language, timeZone: string): string => formatDate(unixSeconds, language, { timeZone });

export interface Period {
  start: number;
  end: number;
}

/** What every buyer e-mail knows: who sends it, to whom, in which language and zone. */
interface MailFacts {
  language: Language;
  storeName: string;
  timeZone: string;
  customerName: string | null;
}

/** What a paid order is for: a checkout purchase, a subscription's cycle, a one-off or a usage charge. */
export type PaymentKind = 'purchase' | 'renewal' | 'charge' | 'usage';

export interface PaymentFacts extends MailFacts {
  kind: PaymentKind;
  product: string;
  amount: number;
  currency: string;
  paidAt: number;
  /** The period paid for (a subscription's cycle, a usage period); null for a one-time payment (its date is shown). */
  period: Period | null;
  orderId: string;
}

export interface CancellationFacts extends MailFacts {
  product: string;
  amount: number;
  currency: string;
  cycle: BillingCycle;
  customBillingDays: number | null;
  canceledAt: number;
  /** The last period paid for, when there is one. */
  period: Period | null;
  subscriptionId: string;
}

/** The renewal the buyer's bank asked them to confirm (3-D Secure), and the portal link where they do. */
export interface AuthenticationRequestFacts extends MailFacts {
  product: string;
  amount: number;
  currency: string;
  orderId: string;
  /** The capability link to the portal's confirmation page. */
  link: string;
}

export interface RefundFacts extends MailFacts {
  product: string;
  /** What this refund gave back (minor units). */
  amount: number;
  currency: string;
  orderId: string;
}

/** A payment that arrived after its order closed and was given back in full. */
export interface LateRefundFacts extends MailFacts {
  product: string;
  amount: number;
  currency: string;
  refundedAt: number;
  /** Null when no order was ever made (an approval that reached an expired checkout session). */
  orderId: string | null;
}

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char]);

function periodText(facts: MailFacts, period: Period | null, at: number): string {
  const { language, timeZone } = facts;
  if (!period) return emailText(language, 'one_time', { date: emailDate(at, language, timeZone) });
  return emailText(language, 'range', { start: emailDate(period.start, language, timeZone), end: emailDate(period.end, language, timeZone) });
}

/** Greeting, intro, a table of labelled facts, an optional link to act on, and the footer, as plain text and as HTML. */
function compose(
  facts: MailFacts,
  subject: string,
  intro: string,
  rows: Array<[EmailKey, string]>,
  action?: { label: string; url: string },
): RenderedMail {
  const { language, storeName, customerName } = facts;
  const greeting = customerName ? emailText(language, 'greeting_named', { name: customerName }) : emailText(language, 'greeting');
  const footer = emailText(language, 'footer', { store: storeName });
  const labelled = rows.map(([key, value]) => [emailText(language, key), value] as const);
  const actionText = action ? [`${action.label}: ${action.url}`, ''] : [];
  const text = [
    greeting,
    '',
    intro,
    '',
    ...labelled.map(([label, value]) => `${label}: ${value}`),
    '',
    ...actionText,
    storeName,
    '',
    footer,
    '',
  ].join('\n');
  const cells = labelled
    .map(
      ([label, value]) =>
        `<tr><th align="left" style="padding:4px 16px 4px 0">${escapeHtml(label)}</th><td style="padding:4px 0">${escapeHtml(value)}</td></tr>`,
    )
    .join('');
  const html = [
    `<!doctype html><html lang="${language}"><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>`,
    '<body style="font-family:sans-serif;color:#222">',
    `<p>${escapeHtml(greeting)}</p><p>${escapeHtml(intro)}</p>`,
    `<table cellspacing="0" cellpadding="0">${cells}</table>`,
    action ? `<p><a href="${escapeHtml(action.url)}" data-action-link>${escapeHtml(action.label)}</a></p>` : '',
    `<p>${escapeHtml(storeName)}</p><p style="color:#777;font-size:12px">${escapeHtml(footer)}</p>`,
    '</body></html>',
  ].join('');
  return { subject, text, html };
}

/** The store's purchase confirmation: product, amount and the period paid for (or the date). */
export function renderPaymentConfirmation(facts: PaymentFacts): RenderedMail {
  const { language } = facts;
  const amount = formatMoney(facts.amount, facts.currency, language);
  const period = periodText(facts, facts.period, facts.paidAt);
  const subject = emailText(language, 'payment_subject', { product: facts.product, amount, period });
  const intro = emailText(language, `intro_${facts.kind}`, { store: facts.storeName });
  return compose(facts, subject, intro, [
    ['product', facts.product],
    ['amount', amount],
    ['period', period],
    ['order', facts.orderId],
  ]);
}

/** The cancellation e-mail: a subscription canceled now by the store (the dashboard's, or DELETE /v1/subscriptions/{id}). */
export function renderCancellationEmail(facts: CancellationFacts): RenderedMail {
  const { language, timeZone } = facts;
  const amount = formatMoney(facts.amount, facts.currency, language);
  const cycle = emailText(language, `cycle_${facts.cycle}`, { days: facts.customBillingDays ?? '' });
  const subject = emailText(language, 'cancel_subject', { product: facts.product });
  const intro = emailText(language, 'intro_cancel', { store: facts.storeName, date: emailDate(facts.canceledAt, language, timeZone) });
  const rows: Array<[EmailKey, string]> = [
    ['product', facts.product],
    ['price', emailText(language, 'price_per_cycle', { amount, cycle })],
  ];
  if (facts.period) rows.push(['period', periodText(facts, facts.period, facts.canceledAt)]);
  rows.push(['subscription', facts.subscriptionId]);
  return compose(facts, subject, intro, rows);
}

/** The renewal the bank asked the buyer to confirm: product, amount, order and the portal link to confirm it. */
export function renderAuthenticationRequest(facts: AuthenticationRequestFacts): RenderedMail {
  const { language } = facts;
  const amount = formatMoney(facts.amount, facts.currency, language);
  const subject = emailText(language, 'authenticate_subject', { product: facts.product, amount });
  const intro = emailText(language, 'intro_authenticate', { store: facts.storeName });
  const rows: Array<[EmailKey, string]> = [
    ['product', facts.product],
    ['amount', amount],
    ['order', facts.orderId],
  ];
  return compose(facts, subject, intro, rows, { label: emailText(language, 'authenticate_action'), url: facts.link });
}

/** The refund e-mail: what was given back of which order (a whole or a partial refund). */
export function renderRefundEmail(facts: RefundFacts): RenderedMail {
  const { language } = facts;
  const amount = formatMoney(facts.amount, facts.currency, language);
  const subject = emailText(language, 'refund_subject', { product: facts.product, amount });
  const intro = emailText(language, 'intro_refund', { store: facts.storeName, amount });
  return compose(facts, subject, intro, [
    ['product', facts.product],
    ['refunded', amount],
    ['order', facts.orderId],
  ]);
}

/** "Your payment arrived after the order closed and was given back": the amount refunded, its date, the order. */
export function renderLateRefundEmail(facts: LateRefundFacts): RenderedMail {
  const { language } = facts;
  const amount = formatMoney(facts.amount, facts.currency, language);
  const subject = emailText(language, 'late_refund_subject', { amount });
  const intro = emailText(language, 'intro_late_refund', { store: facts.storeName });
  const rows: Array<[EmailKey, string]> = [
    ['product', facts.product],
    ['amount', amount],
    ['period', periodText(facts, null, facts.refundedAt)],
  ];
  if (facts.orderId) rows.push(['order', facts.orderId]);
  return compose(facts, subject, intro, rows);
}
