// The buyer's e-mails (payment confirmation, cancellation notice) in the ten checkout languages:
// their words, the language a buyer gets, money and dates formatted with Intl, and the rendering of
// subject, plain text and HTML from the facts. Pure: the services gather the facts and send.
import type { BillingCycle } from './billing-periods';
import { formatMoney, INTL_TAGS } from './checkout-i18n';

export const EMAIL_LANGUAGES = ['en', 'pt', 'es', 'fr', 'de', 'it', 'ja', 'ko', 'ru', 'zh'] as const;
export type EmailLanguage = (typeof EMAIL_LANGUAGES)[number];

const en = {
  payment_subject: 'Payment confirmed: {product}, {amount} ({period})',
  cancel_subject: 'Subscription canceled: {product}',
  greeting: 'Hello,',
  greeting_named: 'Hello {name},',
  intro_purchase: 'Thank you for your purchase at {store}. Your payment was confirmed.',
  intro_renewal: 'The payment of your subscription at {store} was confirmed.',
  intro_charge: 'A charge on your saved card at {store} was approved.',
  intro_usage: 'Your usage at {store} in the period below was charged to your saved card.',
  intro_cancel: 'Your subscription at {store} was canceled on {date}. You will not be charged for it again.',
  product: 'Product',
  amount: 'Amount',
  period: 'Period',
  price: 'Price',
  order: 'Order',
  subscription: 'Subscription',
  one_time: '{date}, one-time purchase',
  range: '{start} to {end}',
  price_per_cycle: '{amount} {cycle}',
  footer: 'This message was sent on behalf of {store}. Please do not reply to it.',
  cycle_daily: 'every day',
  cycle_biweekly: 'every two weeks',
  cycle_monthly: 'every month',
  cycle_quarterly: 'every three months',
  cycle_half_yearly: 'every six months',
  cycle_yearly: 'every year',
  cycle_custom: 'every {days} days',
};

export type EmailKey = keyof typeof en;
type Dictionary = Record<EmailKey, string>;

const pt: Dictionary = {
  payment_subject: 'Pagamento confirmado: {product}, {amount} ({period})',
  cancel_subject: 'Assinatura cancelada: {product}',
  greeting: 'Olá,',
  greeting_named: 'Olá, {name},',
  intro_purchase: 'Obrigado pela sua compra em {store}. Seu pagamento foi confirmado.',
  intro_renewal: 'O pagamento da sua assinatura em {store} foi confirmado.',
  intro_charge: 'Uma cobrança no seu cartão salvo em {store} foi aprovada.',
  intro_usage: 'O seu uso em {store} no período abaixo foi cobrado no seu cartão salvo.',
  intro_cancel: 'Sua assinatura em {store} foi cancelada em {date}. Você não será mais cobrado por ela.',
  product: 'Produto',
  amount: 'Valor',
  period: 'Período',
  price: 'Preço',
  order: 'Pedido',
  subscription: 'Assinatura',
  one_time: '{date}, compra única',
  range: '{start} a {end}',
  price_per_cycle: '{amount} {cycle}',
  footer: 'Esta mensagem foi enviada em nome de {store}. Por favor, não responda.',
  cycle_daily: 'por dia',
  cycle_biweekly: 'a cada duas semanas',
  cycle_monthly: 'por mês',
  cycle_quarterly: 'a cada três meses',
  cycle_half_yearly: 'a cada seis meses',
  cycle_yearly: 'por ano',
  cycle_custom: 'a cada {days} dias',
};

const es: Dictionary = {
  payment_subject: 'Pago confirmado: {product}, {amount} ({period})',
  cancel_subject: 'Suscripción cancelada: {product}',
  greeting: 'Hola:',
  greeting_named: 'Hola, {name}:',
  intro_purchase: 'Gracias por tu compra en {store}. Tu pago fue confirmado.',
  intro_renewal: 'El pago de tu suscripción en {store} fue confirmado.',
  intro_charge: 'Se aprobó un cargo en tu tarjeta guardada en {store}.',
  intro_usage: 'Tu consumo en {store} en el período indicado se cobró en tu tarjeta guardada.',
  intro_cancel: 'Tu suscripción en {store} se canceló el {date}. No se te volverá a cobrar por ella.',
  product: 'Producto',
  amount: 'Importe',
  period: 'Período',
  price: 'Precio',
  order: 'Pedido',
  subscription: 'Suscripción',
  one_time: '{date}, pago único',
  range: 'del {start} al {end}',
  price_per_cycle: '{amount} {cycle}',
  footer: 'Este mensaje se envió en nombre de {store}. Por favor, no respondas.',
  cycle_daily: 'al día',
  cycle_biweekly: 'cada dos semanas',
  cycle_monthly: 'al mes',
  cycle_quarterly: 'cada tres meses',
  cycle_half_yearly: 'cada seis meses',
  cycle_yearly: 'al año',
  cycle_custom: 'cada {days} días',
};

const fr: Dictionary = {
  payment_subject: 'Paiement confirmé : {product}, {amount} ({period})',
  cancel_subject: 'Abonnement résilié : {product}',
  greeting: 'Bonjour,',
  greeting_named: 'Bonjour {name},',
  intro_purchase: 'Merci pour votre achat chez {store}. Votre paiement a été confirmé.',
  intro_renewal: 'Le paiement de votre abonnement chez {store} a été confirmé.',
  intro_charge: 'Un prélèvement sur votre carte enregistrée chez {store} a été approuvé.',
  intro_usage: 'Votre consommation chez {store} sur la période ci-dessous a été débitée sur votre carte enregistrée.',
  intro_cancel: 'Votre abonnement chez {store} a été résilié le {date}. Il ne vous sera plus facturé.',
  product: 'Produit',
  amount: 'Montant',
  period: 'Période',
  price: 'Prix',
  order: 'Commande',
  subscription: 'Abonnement',
  one_time: '{date}, achat unique',
  range: 'du {start} au {end}',
  price_per_cycle: '{amount} {cycle}',
  footer: 'Ce message a été envoyé au nom de {store}. Merci de ne pas y répondre.',
  cycle_daily: 'par jour',
  cycle_biweekly: 'toutes les deux semaines',
  cycle_monthly: 'par mois',
  cycle_quarterly: 'tous les trois mois',
  cycle_half_yearly: 'tous les six mois',
  cycle_yearly: 'par an',
  cycle_custom: 'tous les {days} jours',
};

const de: Dictionary = {
  payment_subject: 'Zahlung bestätigt: {product}, {amount} ({period})',
  cancel_subject: 'Abonnement gekündigt: {product}',
  greeting: 'Hallo,',
  greeting_named: 'Hallo {name},',
  intro_purchase: 'Vielen Dank für Ihren Einkauf bei {store}. Ihre Zahlung wurde bestätigt.',
  intro_renewal: 'Die Zahlung für Ihr Abonnement bei {store} wurde bestätigt.',
  intro_charge: 'Eine Belastung Ihrer gespeicherten Karte bei {store} wurde genehmigt.',
  intro_usage: 'Ihre Nutzung bei {store} im unten genannten Zeitraum wurde Ihrer gespeicherten Karte belastet.',
  intro_cancel: 'Ihr Abonnement bei {store} wurde am {date} gekündigt. Es wird Ihnen nicht mehr berechnet.',
  product: 'Produkt',
  amount: 'Betrag',
  period: 'Zeitraum',
  price: 'Preis',
  order: 'Bestellung',
  subscription: 'Abonnement',
  one_time: '{date}, Einmalkauf',
  range: '{start} bis {end}',
  price_per_cycle: '{amount} {cycle}',
  footer: 'Diese Nachricht wurde im Auftrag von {store} gesendet. Bitte antworten Sie nicht darauf.',
  cycle_daily: 'täglich',
  cycle_biweekly: 'alle zwei Wochen',
  cycle_monthly: 'monatlich',
  cycle_quarterly: 'alle drei Monate',
  cycle_half_yearly: 'alle sechs Monate',
  cycle_yearly: 'jährlich',
  cycle_custom: 'alle {days} Tage',
};

const it: Dictionary = {
  payment_subject: 'Pagamento confermato: {product}, {amount} ({period})',
  cancel_subject: 'Abbonamento annullato: {product}',
  greeting: 'Ciao,',
  greeting_named: 'Ciao {name},',
  intro_purchase: 'Grazie per il tuo acquisto su {store}. Il tuo pagamento è stato confermato.',
  intro_renewal: 'Il pagamento del tuo abbonamento su {store} è stato confermato.',
  intro_charge: 'È stato approvato un addebito sulla tua carta salvata su {store}.',
  intro_usage: 'Il tuo consumo su {store} nel periodo indicato è stato addebitato sulla tua carta salvata.',
  intro_cancel: 'Il tuo abbonamento su {store} è stato annullato il {date}. Non ti verrà più addebitato.',
  product: 'Prodotto',
  amount: 'Importo',
  period: 'Periodo',
  price: 'Prezzo',
  order: 'Ordine',
  subscription: 'Abbonamento',
  one_time: '{date}, acquisto singolo',
  range: 'dal {start} al {end}',
  price_per_cycle: '{amount} {cycle}',
  footer: 'Questo messaggio è stato inviato per conto di {store}. Non rispondere a questo messaggio.',
  cycle_daily: 'al giorno',
  cycle_biweekly: 'ogni due settimane',
  cycle_monthly: 'al mese',
  cycle_quarterly: 'ogni tre mesi',
  cycle_half_yearly: 'ogni sei mesi',
  cycle_yearly: "all'anno",
  cycle_custom: 'ogni {days} giorni',
};

const ja: Dictionary = {
  payment_subject: 'お支払い完了: {product}、{amount}（{period}）',
  cancel_subject: 'サブスクリプション解約: {product}',
  greeting: 'こんにちは。',
  greeting_named: '{name} 様',
  intro_purchase: '{store} でのご購入ありがとうございます。お支払いが確認されました。',
  intro_renewal: '{store} のサブスクリプションのお支払いが確認されました。',
  intro_charge: '{store} に登録済みのカードへの請求が承認されました。',
  intro_usage: '下記期間の {store} でのご利用分を、登録済みのカードに請求しました。',
  intro_cancel: '{store} のサブスクリプションは {date} に解約されました。今後、請求されることはありません。',
  product: '商品',
  amount: '金額',
  period: '期間',
  price: '料金',
  order: '注文',
  subscription: 'サブスクリプション',
  one_time: '{date}・1回限りの購入',
  range: '{start}～{end}',
  price_per_cycle: '{cycle} {amount}',
  footer: 'このメールは {store} に代わって送信されました。このメールには返信しないでください。',
  cycle_daily: '毎日',
  cycle_biweekly: '2週間ごと',
  cycle_monthly: '毎月',
  cycle_quarterly: '3か月ごと',
  cycle_half_yearly: '6か月ごと',
  cycle_yearly: '毎年',
  cycle_custom: '{days}日ごと',
};

const ko: Dictionary = {
  payment_subject: '결제 완료: {product}, {amount} ({period})',
  cancel_subject: '구독 해지: {product}',
  greeting: '안녕하세요.',
  greeting_named: '{name}님, 안녕하세요.',
  intro_purchase: '{store}에서 구매해 주셔서 감사합니다. 결제가 확인되었습니다.',
  intro_renewal: '{store} 구독 결제가 확인되었습니다.',
  intro_charge: '{store}에 저장된 카드로 청구된 결제가 승인되었습니다.',
  intro_usage: '아래 기간의 {store} 사용량이 저장된 카드로 청구되었습니다.',
  intro_cancel: '{store} 구독이 {date}에 해지되었습니다. 더 이상 요금이 청구되지 않습니다.',
  product: '상품',
  amount: '금액',
  period: '기간',
  price: '가격',
  order: '주문',
  subscription: '구독',
  one_time: '{date}, 일회성 구매',
  range: '{start} ~ {end}',
  price_per_cycle: '{cycle} {amount}',
  footer: '이 메일은 {store}을(를) 대신하여 발송되었습니다. 회신하지 마세요.',
  cycle_daily: '매일',
  cycle_biweekly: '2주마다',
  cycle_monthly: '매월',
  cycle_quarterly: '3개월마다',
  cycle_half_yearly: '6개월마다',
  cycle_yearly: '매년',
  cycle_custom: '{days}일마다',
};

const ru: Dictionary = {
  payment_subject: 'Оплата подтверждена: {product}, {amount} ({period})',
  cancel_subject: 'Подписка отменена: {product}',
  greeting: 'Здравствуйте!',
  greeting_named: 'Здравствуйте, {name}!',
  intro_purchase: 'Спасибо за покупку в магазине {store}. Ваш платёж подтверждён.',
  intro_renewal: 'Оплата вашей подписки в магазине {store} подтверждена.',
  intro_charge: 'Списание с вашей сохранённой карты в магазине {store} одобрено.',
  intro_usage: 'Ваше потребление в магазине {store} за указанный ниже период списано с сохранённой карты.',
  intro_cancel: 'Ваша подписка в магазине {store} отменена {date}. Больше списаний по ней не будет.',
  product: 'Товар',
  amount: 'Сумма',
  period: 'Период',
  price: 'Цена',
  order: 'Заказ',
  subscription: 'Подписка',
  one_time: '{date}, разовая покупка',
  range: 'с {start} по {end}',
  price_per_cycle: '{amount} {cycle}',
  footer: 'Это сообщение отправлено от имени магазина {store}. Пожалуйста, не отвечайте на него.',
  cycle_daily: 'в день',
  cycle_biweekly: 'каждые две недели',
  cycle_monthly: 'в месяц',
  cycle_quarterly: 'каждые три месяца',
  cycle_half_yearly: 'каждые шесть месяцев',
  cycle_yearly: 'в год',
  cycle_custom: 'каждые {days} дн.',
};

const zh: Dictionary = {
  payment_subject: '付款成功：{product}，{amount}（{period}）',
  cancel_subject: '订阅已取消：{product}',
  greeting: '您好：',
  greeting_named: '{name}，您好：',
  intro_purchase: '感谢您在 {store} 购买。您的付款已确认。',
  intro_renewal: '您在 {store} 的订阅付款已确认。',
  intro_charge: '您在 {store} 保存的银行卡的一笔扣款已获批准。',
  intro_usage: '您在 {store} 于下列期间的用量已从您保存的银行卡扣款。',
  intro_cancel: '您在 {store} 的订阅已于 {date} 取消。今后不会再为此扣款。',
  product: '商品',
  amount: '金额',
  period: '期间',
  price: '价格',
  order: '订单',
  subscription: '订阅',
  one_time: '{date}，一次性购买',
  range: '{start} 至 {end}',
  price_per_cycle: '{cycle} {amount}',
  footer: '此邮件代表 {store} 发送，请勿直接回复。',
  cycle_daily: '每天',
  cycle_biweekly: '每两周',
  cycle_monthly: '每月',
  cycle_quarterly: '每三个月',
  cycle_half_yearly: '每六个月',
  cycle_yearly: '每年',
  cycle_custom: '每 {days} 天',
};

const DICTIONARIES: Record<EmailLanguage, Dictionary> = { en, pt, es, fr, de, it, ja, ko, ru, zh };

/** The language of a store's country, used when the buyer's own is unknown. */
const COUNTRY_LANGUAGES: Record<string, EmailLanguage> = {
  ...Object.fromEntries(['BR', 'PT', 'AO', 'MZ', 'CV', 'GW', 'ST', 'TL'].map((c) => [c, 'pt'])),
  ...Object.fromEntries(
    ['ES', 'MX', 'AR', 'CO', 'CL', 'PE', 'VE', 'EC', 'GT', 'CU', 'BO', 'DO', 'HN', 'PY', 'SV', 'NI', 'CR', 'PA', 'UY', 'PR', 'GQ'].map((c) => [c, 'es']),
  ),
  ...Object.fromEntries(['FR', 'BE', 'LU', 'MC', 'SN', 'CI', 'CM', 'MG', 'ML', 'BF', 'NE', 'TG', 'BJ', 'GA', 'CG', 'CD', 'HT'].map((c) => [c, 'fr'])),
  ...Object.fromEntries(['DE', 'AT', 'CH', 'LI'].map((c) => [c, 'de'])),
  ...Object.fromEntries(['IT', 'SM', 'VA'].map((c) => [c, 'it'])),
  JP: 'ja',
  KR: 'ko',
  ...Object.fromEntries(['RU', 'BY', 'KZ', 'KG'].map((c) => [c, 'ru'])),
  ...Object.fromEntries(['CN', 'TW', 'HK', 'MO'].map((c) => [c, 'zh'])),
};

function supported(locale: string | null | undefined): EmailLanguage | null {
  const base = (locale ?? '').slice(0, 2).toLowerCase();
  return (EMAIL_LANGUAGES as readonly string[]).includes(base) ? (base as EmailLanguage) : null;
}

/**
 * The buyer's language: the first of the given locales we write (a checkout session's, the
 * customer's, ...), else the store country's language, else English.
 */
export function emailLanguage(locales: Array<string | null | undefined>, storeCountry: string | null): EmailLanguage {
  for (const locale of locales) {
    const language = supported(locale);
    if (language) return language;
  }
  return COUNTRY_LANGUAGES[(storeCountry ?? '').toUpperCase()] ?? 'en';
}

export function emailText(language: EmailLanguage, key: EmailKey, vars: Record<string, string | number> = {}): string {
  const template = DICTIONARIES[language][key] ?? en[key];
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in vars ? String(vars[name]) : whole));
}

/** Minor units as money in the language: 4990 brl in pt -> "R$ 49,90". */
export function emailMoney(amount: number, currency: string, language: EmailLanguage): string {
  return formatMoney(amount, currency, language);
}

/** A day in the language and the store's time zone (UTC when the zone is unknown). */
export function emailDate(unixSeconds: number, language: EmailLanguage, timeZone: string): string {
  const format: Intl.DateTimeFormatOptions = { year: 'numeric', month: 'short', day: 'numeric' };
  try {
    return new Intl.DateTimeFormat(INTL_TAGS[language], { ...format, timeZone }).format(new Date(unixSeconds * 1000));
  } catch {
    return new Intl.DateTimeFormat(INTL_TAGS[language], { ...format, timeZone: 'UTC' }).format(new Date(unixSeconds * 1000));
  }
}

export interface Period {
  start: number;
  end: number;
}

/** What every buyer e-mail knows: who sends it, to whom, in which language and zone. */
interface MailFacts {
  language: EmailLanguage;
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

/** Greeting, intro, a table of labelled facts and the footer, as plain text and as HTML. */
function compose(facts: MailFacts, subject: string, intro: string, rows: Array<[EmailKey, string]>): RenderedMail {
  const { language, storeName, customerName } = facts;
  const greeting = customerName ? emailText(language, 'greeting_named', { name: customerName }) : emailText(language, 'greeting');
  const footer = emailText(language, 'footer', { store: storeName });
  const labelled = rows.map(([key, value]) => [emailText(language, key), value] as const);
  const text = [greeting, '', intro, '', ...labelled.map(([label, value]) => `${label}: ${value}`), '', storeName, '', footer, ''].join('\n');
  const cells = labelled
    .map(([label, value]) => `<tr><th align="left" style="padding:4px 16px 4px 0">${escapeHtml(label)}</th><td style="padding:4px 0">${escapeHtml(value)}</td></tr>`)
    .join('');
  const html = [
    `<!doctype html><html lang="${language}"><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>`,
    '<body style="font-family:sans-serif;color:#222">',
    `<p>${escapeHtml(greeting)}</p><p>${escapeHtml(intro)}</p>`,
    `<table cellspacing="0" cellpadding="0">${cells}</table>`,
    `<p>${escapeHtml(storeName)}</p><p style="color:#777;font-size:12px">${escapeHtml(footer)}</p>`,
    '</body></html>',
  ].join('');
  return { subject, text, html };
}

/** The store's purchase confirmation: product, amount and the period paid for (or the date). */
export function renderPaymentConfirmation(facts: PaymentFacts): RenderedMail {
  const { language } = facts;
  const amount = emailMoney(facts.amount, facts.currency, language);
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

/** The notice of a cancellation (the dashboard's, or DELETE /v1/subscriptions/{id}). */
export function renderCancellationNotice(facts: CancellationFacts): RenderedMail {
  const { language, timeZone } = facts;
  const amount = emailMoney(facts.amount, facts.currency, language);
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
