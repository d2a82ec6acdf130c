// Words of the hosted checkout and the customer portal in the ten checkout locales: English,
// Portuguese and Spanish here, the others in domain/i18n/<language>.ts. Every table has every key of
// `en` (a missing one is a type error), so no page falls back to English word by word. Which language
// a page speaks, and its money and dates formatted with Intl for that language.
import { currencyDecimals } from './charges';
import { localeFromAcceptLanguage } from './checkout';
import { de } from './i18n/de';
import { fr } from './i18n/fr';
import { it } from './i18n/it';
import { ja } from './i18n/ja';
import { ko } from './i18n/ko';
import { ru } from './i18n/ru';
import { zh } from './i18n/zh';

export const PAGE_LANGUAGES = ['en', 'pt', 'es', 'fr', 'de', 'it', 'ja', 'ko', 'ru', 'zh'] as const;
export type PageLanguage = (typeof PAGE_LANGUAGES)[number];

const en = {
  secure_checkout: 'Secure checkout',
  back: 'Back',
  order_summary: 'Order summary',
  pack_of: 'Pack of {n} units',
  quantity: 'Quantity',
  subtotal: 'Subtotal',
  discount: 'Discount ({code})',
  total: 'Total',
  currency: 'Currency',
  switch_currency: 'Pay in another currency',
  your_details: 'Your details',
  email: 'E-mail',
  email_locked: 'This e-mail was set by the store.',
  name: 'Full name',
  phone: 'Phone',
  document: 'Document',
  document_type: 'Document type',
  doc_cpf: 'CPF',
  doc_cnpj: 'CNPJ',
  doc_passport: 'Passport',
  doc_tax_id: 'Tax ID',
  payment_method: 'Payment method',
  card: 'Card',
  pix: 'PIX',
  card_number: 'Card number',
  expiry: 'Expiry (MM/YY)',
  cvc: 'Security code',
  installments: 'Installments',
  installment_option: '{n}x of {amount}',
  pay: 'Pay {amount}',
  start_trial: 'Start free trial',
  trial_note: '{days}-day free trial, then {amount} {cycle}. Your card is saved, not charged today.',
  generate_pix: 'Pay {amount} with PIX',
  recurring_note: 'Billed {cycle}. Cancel anytime in the customer portal.',
  cycle_daily: 'every day',
  cycle_biweekly: 'every two weeks',
  cycle_monthly: 'every month',
  cycle_quarterly: 'every three months',
  cycle_half_yearly: 'every six months',
  cycle_yearly: 'every year',
  cycle_custom: 'periodically',
  error_title: 'The payment did not go through',
  err_card_declined: 'Your card was declined. Try another card.',
  err_insufficient_funds: 'Your card has insufficient funds. Try another card.',
  err_invalid_number: 'The card number is not valid.',
  err_provider_unavailable: 'The payment provider could not be reached. Nothing was charged; please try again.',
  err_payment_in_progress: 'A payment for this checkout is already being processed.',
  err_card_payments_locked: 'Too many cards were declined on this checkout, so card payments are locked.',
  card_locked: 'Too many cards were declined on this checkout, so card payments are locked. Ask the store for a new link.',
  card_locked_pix: 'Too many cards were declined on this checkout, so card payments are locked. You can still pay by PIX.',
  err_provider_timeout: 'The payment provider has not answered yet. If the payment goes through, this checkout completes by itself; reload the page in a minute.',
  confirming_text: 'Your payment is being confirmed with the payment provider. Please do not pay again: this page updates by itself when the provider answers.',
  err_customer_rejected: 'We could not register your details with the payment provider.',
  err_declined: 'The payment was declined. Try another card or method.',
  err_field: 'Please check this field: {field}.',
  thank_you: 'Thank you!',
  paid_text: 'Your payment was confirmed.',
  order_ref: 'Order {id}',
  subscription_ref: 'Subscription {id}',
  redirecting: 'You will be taken back to the store in {n} seconds.',
  continue: 'Continue',
  your_files: 'Your files',
  open_checkout: 'Continue to checkout',
  choose_pack: 'Choose a pack',
  link_busy_title: 'Too many checkouts opened',
  link_busy_text: 'Too many checkouts were opened from your address. Please try again in {minutes} minutes.',
  pending_title: 'Payment pending',
  review_text: 'Your payment is being reviewed. This page updates when it is confirmed.',
  pix_title: 'Pay with PIX',
  pix_code: 'PIX copy-paste code',
  pix_instructions: 'Copy the code below and paste it in your bank app. It is valid until {time}.',
  copy_code: 'Copy code',
  copied: 'Copied',
  waiting: 'Waiting for the payment…',
  failed_title: 'Payment not completed',
  failed_text: 'The payment was not completed: the PIX code expired or the payment was refused.',
  unavailable_title: 'This link is no longer available',
  unavailable_text: 'This checkout link has expired or does not exist. Ask the store for a new link.',
  test_connection: 'Test connection',
  settle_paid: 'Simulate: payment received',
  settle_refused: 'Simulate: payment refused',
  // Portal
  portal_title: 'Your account',
  signed_in_as: 'Signed in as {email}',
  sign_out: 'Sign out',
  subscriptions: 'Subscriptions',
  orders: 'Orders',
  no_subscriptions: 'You have no subscriptions.',
  no_orders: 'You have no orders.',
  status: 'Status',
  status_trialing: 'Trial',
  status_active: 'Active',
  status_past_due: 'Past due',
  status_paused: 'Paused',
  status_canceled: 'Canceled',
  status_expired: 'Expired',
  status_pending: 'Pending',
  status_paid: 'Paid',
  status_failed: 'Failed',
  status_refunded: 'Refunded',
  status_partially_refunded: 'Partially refunded',
  status_charged_back: 'Charged back',
  next_billing: 'Next charge on {date}',
  cancels_on: 'Cancels on {date}',
  cancel_at_period_end: 'Cancel at the end of the period',
  reactivate: 'Keep my subscription',
  card_on_file: 'Card ending in {last4}',
  no_card: 'No saved card',
  replace_card: 'Replace card',
  save_card: 'Save card',
  done_canceled: 'Your subscription will end at the end of the paid period.',
  done_reactivated: 'Your subscription continues.',
  done_card: 'Your card was replaced.',
  action_failed: 'That did not work: {reason}',
  signin_invalid_title: 'This sign-in link does not work',
  signin_invalid_text: 'Sign-in links work once and for 15 minutes. Ask the store for a new link.',
  signin_confirm_title: 'Sign in to {store}',
  signin_confirm_text: 'This link signs you in to the account of {email}.',
  signin_continue: 'Continue as {email}',
  portal_unavailable_title: 'The customer portal is not available',
  portal_unavailable_text: 'This store has turned its customer portal off.',
  signed_out: 'You signed out. Ask the store for a new sign-in link to come back.',
  date: 'Date',
  amount: 'Amount',
} as const;

export type MessageKey = keyof typeof en;
export const MESSAGE_KEYS = Object.keys(en) as MessageKey[];
/** A language's words: every key of `en`, none left out. */
export type Dictionary = Record<MessageKey, string>;

const pt: Dictionary = {
  secure_checkout: 'Pagamento seguro',
  back: 'Voltar',
  order_summary: 'Resumo do pedido',
  pack_of: 'Pacote de {n} unidades',
  quantity: 'Quantidade',
  subtotal: 'Subtotal',
  discount: 'Desconto ({code})',
  total: 'Total',
  currency: 'Moeda',
  switch_currency: 'Pagar em outra moeda',
  your_details: 'Seus dados',
  email: 'E-mail',
  email_locked: 'Este e-mail foi definido pela loja.',
  name: 'Nome completo',
  phone: 'Telefone',
  document: 'Documento',
  document_type: 'Tipo de documento',
  doc_cpf: 'CPF',
  doc_cnpj: 'CNPJ',
  doc_passport: 'Passaporte',
  doc_tax_id: 'Identificação fiscal',
  payment_method: 'Forma de pagamento',
  card: 'Cartão',
  pix: 'PIX',
  card_number: 'Número do cartão',
  expiry: 'Validade (MM/AA)',
  cvc: 'Código de segurança',
  installments: 'Parcelas',
  installment_option: '{n}x de {amount}',
  pay: 'Pagar {amount}',
  start_trial: 'Começar teste grátis',
  trial_note: 'Teste grátis de {days} dias, depois {amount} {cycle}. Seu cartão é salvo, sem cobrança hoje.',
  generate_pix: 'Pagar {amount} com PIX',
  recurring_note: 'Cobrança {cycle}. Cancele quando quiser no portal do cliente.',
  cycle_daily: 'diária',
  cycle_biweekly: 'a cada duas semanas',
  cycle_monthly: 'mensal',
  cycle_quarterly: 'trimestral',
  cycle_half_yearly: 'semestral',
  cycle_yearly: 'anual',
  cycle_custom: 'periódica',
  error_title: 'O pagamento não foi concluído',
  err_card_declined: 'Seu cartão foi recusado. Tente outro cartão.',
  err_insufficient_funds: 'Seu cartão não tem saldo suficiente. Tente outro cartão.',
  err_invalid_number: 'O número do cartão não é válido.',
  err_provider_unavailable: 'Não foi possível falar com o provedor de pagamento. Nada foi cobrado; tente de novo.',
  err_payment_in_progress: 'Um pagamento deste checkout já está em processamento.',
  err_card_payments_locked: 'Muitos cartões foram recusados neste checkout, então o pagamento com cartão foi bloqueado.',
  card_locked: 'Muitos cartões foram recusados neste checkout, então o pagamento com cartão foi bloqueado. Peça um novo link à loja.',
  card_locked_pix: 'Muitos cartões foram recusados neste checkout, então o pagamento com cartão foi bloqueado. Você ainda pode pagar com PIX.',
  err_provider_timeout: 'O provedor de pagamento ainda não respondeu. Se o pagamento for aprovado, este checkout é concluído sozinho; recarregue a página em um minuto.',
  confirming_text: 'Seu pagamento está sendo confirmado com o provedor de pagamento. Não pague de novo: esta página se atualiza sozinha quando o provedor responder.',
  err_customer_rejected: 'Não foi possível registrar seus dados no provedor de pagamento.',
  err_declined: 'O pagamento foi recusado. Tente outro cartão ou forma de pagamento.',
  err_field: 'Verifique este campo: {field}.',
  thank_you: 'Obrigado!',
  paid_text: 'Seu pagamento foi confirmado.',
  order_ref: 'Pedido {id}',
  subscription_ref: 'Assinatura {id}',
  redirecting: 'Você voltará para a loja em {n} segundos.',
  continue: 'Continuar',
  your_files: 'Seus arquivos',
  open_checkout: 'Continuar para o pagamento',
  choose_pack: 'Escolha um pacote',
  link_busy_title: 'Muitos pagamentos abertos',
  link_busy_text: 'Muitos pagamentos foram abertos a partir do seu endereço. Tente novamente em {minutes} minutos.',
  pending_title: 'Pagamento pendente',
  review_text: 'Seu pagamento está em análise. Esta página se atualiza quando for confirmado.',
  pix_title: 'Pague com PIX',
  pix_code: 'Código PIX copia e cola',
  pix_instructions: 'Copie o código abaixo e cole no app do seu banco. Ele vale até {time}.',
  copy_code: 'Copiar código',
  copied: 'Copiado',
  waiting: 'Aguardando o pagamento…',
  failed_title: 'Pagamento não concluído',
  failed_text: 'O pagamento não foi concluído: o código PIX expirou ou o pagamento foi recusado.',
  unavailable_title: 'Este link não está mais disponível',
  unavailable_text: 'Este link de pagamento expirou ou não existe. Peça um novo link à loja.',
  test_connection: 'Conexão de teste',
  settle_paid: 'Simular: pagamento recebido',
  settle_refused: 'Simular: pagamento recusado',
  portal_title: 'Sua conta',
  signed_in_as: 'Conectado como {email}',
  sign_out: 'Sair',
  subscriptions: 'Assinaturas',
  orders: 'Pedidos',
  no_subscriptions: 'Você não tem assinaturas.',
  no_orders: 'Você não tem pedidos.',
  status: 'Situação',
  status_trialing: 'Teste',
  status_active: 'Ativa',
  status_past_due: 'Em atraso',
  status_paused: 'Pausada',
  status_canceled: 'Cancelada',
  status_expired: 'Expirada',
  status_pending: 'Pendente',
  status_paid: 'Pago',
  status_failed: 'Falhou',
  status_refunded: 'Reembolsado',
  status_partially_refunded: 'Reembolso parcial',
  status_charged_back: 'Estornado',
  next_billing: 'Próxima cobrança em {date}',
  cancels_on: 'Termina em {date}',
  cancel_at_period_end: 'Cancelar no fim do período',
  reactivate: 'Manter assinatura',
  card_on_file: 'Cartão final {last4}',
  no_card: 'Nenhum cartão salvo',
  replace_card: 'Trocar cartão',
  save_card: 'Salvar cartão',
  done_canceled: 'Sua assinatura termina no fim do período pago.',
  done_reactivated: 'Sua assinatura continua.',
  done_card: 'Seu cartão foi trocado.',
  action_failed: 'Não deu certo: {reason}',
  signin_invalid_title: 'Este link de acesso não funciona',
  signin_invalid_text: 'Links de acesso funcionam uma vez e por 15 minutos. Peça um novo link à loja.',
  signin_confirm_title: 'Entrar em {store}',
  signin_confirm_text: 'Este link entra na conta de {email}.',
  signin_continue: 'Continuar como {email}',
  portal_unavailable_title: 'O portal do cliente não está disponível',
  portal_unavailable_text: 'Esta loja desativou o portal do cliente.',
  signed_out: 'Você saiu. Peça um novo link de acesso à loja para voltar.',
  date: 'Data',
  amount: 'Valor',
};

const es: Dictionary = {
  secure_checkout: 'Pago seguro',
  back: 'Volver',
  order_summary: 'Resumen del pedido',
  pack_of: 'Paquete de {n} unidades',
  quantity: 'Cantidad',
  subtotal: 'Subtotal',
  discount: 'Descuento ({code})',
  total: 'Total',
  currency: 'Moneda',
  switch_currency: 'Pagar en otra moneda',
  your_details: 'Tus datos',
  email: 'Correo electrónico',
  email_locked: 'La tienda definió este correo.',
  name: 'Nombre completo',
  phone: 'Teléfono',
  document: 'Documento',
  document_type: 'Tipo de documento',
  doc_cpf: 'CPF',
  doc_cnpj: 'CNPJ',
  doc_passport: 'Pasaporte',
  doc_tax_id: 'Identificación fiscal',
  payment_method: 'Método de pago',
  card: 'Tarjeta',
  pix: 'PIX',
  card_number: 'Número de tarjeta',
  expiry: 'Vencimiento (MM/AA)',
  cvc: 'Código de seguridad',
  installments: 'Cuotas',
  installment_option: '{n} cuotas de {amount}',
  pay: 'Pagar {amount}',
  start_trial: 'Comenzar prueba gratis',
  trial_note: 'Prueba gratis de {days} días, luego {amount} {cycle}. Tu tarjeta se guarda, sin cargo hoy.',
  generate_pix: 'Pagar {amount} con PIX',
  recurring_note: 'Cobro {cycle}. Cancela cuando quieras en el portal del cliente.',
  cycle_daily: 'diario',
  cycle_biweekly: 'cada dos semanas',
  cycle_monthly: 'mensual',
  cycle_quarterly: 'trimestral',
  cycle_half_yearly: 'semestral',
  cycle_yearly: 'anual',
  cycle_custom: 'periódico',
  error_title: 'El pago no se completó',
  err_card_declined: 'Tu tarjeta fue rechazada. Prueba con otra tarjeta.',
  err_insufficient_funds: 'Tu tarjeta no tiene fondos suficientes. Prueba con otra tarjeta.',
  err_invalid_number: 'El número de tarjeta no es válido.',
  err_provider_unavailable: 'No se pudo contactar al proveedor de pagos. No se cobró nada; inténtalo de nuevo.',
  err_payment_in_progress: 'Ya se está procesando un pago de este checkout.',
  err_card_payments_locked: 'Se rechazaron demasiadas tarjetas en este checkout, así que el pago con tarjeta está bloqueado.',
  card_locked: 'Se rechazaron demasiadas tarjetas en este checkout, así que el pago con tarjeta está bloqueado. Pide un nuevo enlace a la tienda.',
  card_locked_pix: 'Se rechazaron demasiadas tarjetas en este checkout, así que el pago con tarjeta está bloqueado. Aún puedes pagar con PIX.',
  err_provider_timeout: 'El proveedor de pagos aún no respondió. Si el pago se aprueba, este checkout se completa solo; recarga la página en un minuto.',
  confirming_text: 'Tu pago se está confirmando con el proveedor de pagos. No vuelvas a pagar: esta página se actualiza sola cuando el proveedor responda.',
  err_customer_rejected: 'No pudimos registrar tus datos con el proveedor de pagos.',
  err_declined: 'El pago fue rechazado. Prueba otra tarjeta u otro método.',
  err_field: 'Revisa este campo: {field}.',
  thank_you: '¡Gracias!',
  paid_text: 'Tu pago fue confirmado.',
  order_ref: 'Pedido {id}',
  subscription_ref: 'Suscripción {id}',
  redirecting: 'Volverás a la tienda en {n} segundos.',
  continue: 'Continuar',
  your_files: 'Tus archivos',
  open_checkout: 'Continuar al pago',
  choose_pack: 'Elige un paquete',
  link_busy_title: 'Demasiados pagos abiertos',
  link_busy_text: 'Se abrieron demasiados pagos desde tu dirección. Vuelve a intentarlo en {minutes} minutos.',
  pending_title: 'Pago pendiente',
  review_text: 'Tu pago está en revisión. Esta página se actualiza cuando se confirme.',
  pix_title: 'Paga con PIX',
  pix_code: 'Código PIX para copiar y pegar',
  pix_instructions: 'Copia el código y pégalo en la app de tu banco. Es válido hasta las {time}.',
  copy_code: 'Copiar código',
  copied: 'Copiado',
  waiting: 'Esperando el pago…',
  failed_title: 'Pago no completado',
  failed_text: 'El pago no se completó: el código PIX expiró o el pago fue rechazado.',
  unavailable_title: 'Este enlace ya no está disponible',
  unavailable_text: 'Este enlace de pago expiró o no existe. Pide un enlace nuevo a la tienda.',
  test_connection: 'Conexión de prueba',
  settle_paid: 'Simular: pago recibido',
  settle_refused: 'Simular: pago rechazado',
  portal_title: 'Tu cuenta',
  signed_in_as: 'Sesión iniciada como {email}',
  sign_out: 'Cerrar sesión',
  subscriptions: 'Suscripciones',
  orders: 'Pedidos',
  no_subscriptions: 'No tienes suscripciones.',
  no_orders: 'No tienes pedidos.',
  status: 'Estado',
  status_trialing: 'Prueba',
  status_active: 'Activa',
  status_past_due: 'Vencida',
  status_paused: 'Pausada',
  status_canceled: 'Cancelada',
  status_expired: 'Expirada',
  status_pending: 'Pendiente',
  status_paid: 'Pagado',
  status_failed: 'Fallido',
  status_refunded: 'Reembolsado',
  status_partially_refunded: 'Reembolso parcial',
  status_charged_back: 'Contracargo',
  next_billing: 'Próximo cobro el {date}',
  cancels_on: 'Termina el {date}',
  cancel_at_period_end: 'Cancelar al final del período',
  reactivate: 'Mantener suscripción',
  card_on_file: 'Tarjeta terminada en {last4}',
  no_card: 'Sin tarjeta guardada',
  replace_card: 'Cambiar tarjeta',
  save_card: 'Guardar tarjeta',
  done_canceled: 'Tu suscripción termina al final del período pagado.',
  done_reactivated: 'Tu suscripción continúa.',
  done_card: 'Tu tarjeta fue cambiada.',
  action_failed: 'No funcionó: {reason}',
  signin_invalid_title: 'Este enlace de acceso no funciona',
  signin_invalid_text: 'Los enlaces de acceso funcionan una vez y durante 15 minutos. Pide uno nuevo a la tienda.',
  signin_confirm_title: 'Entrar en {store}',
  signin_confirm_text: 'Este enlace entra en la cuenta de {email}.',
  signin_continue: 'Continuar como {email}',
  portal_unavailable_title: 'El portal del cliente no está disponible',
  portal_unavailable_text: 'Esta tienda desactivó su portal del cliente.',
  signed_out: 'Cerraste sesión. Pide un nuevo enlace de acceso a la tienda para volver.',
  date: 'Fecha',
  amount: 'Importe',
};

const DICTIONARIES: Record<PageLanguage, Dictionary> = { en, pt, es, fr, de, it, ja, ko, ru, zh };
/** The region whose conventions each language's money and dates follow (pt is Brazil's, zh is Simplified Chinese). */
export const INTL_TAGS: Record<PageLanguage, string> = {
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

/** The page language of a locale ("pt-BR" -> pt, "zh-TW" -> zh), or null when the pages do not speak it. */
export function spokenLanguage(locale: string | null | undefined): PageLanguage | null {
  const base = (locale ?? '').trim().toLowerCase().split(/[-_]/)[0];
  return (PAGE_LANGUAGES as readonly string[]).includes(base) ? (base as PageLanguage) : null;
}

/** The page language for a session or customer locale ("pt-BR" -> pt); anything else is English. */
export function pageLanguage(locale: string | null | undefined): PageLanguage {
  return spokenLanguage(locale) ?? 'en';
}

/**
 * The language a page speaks: the first of the given locales that is one of the ten (a checkout
 * session's, then its customer's; a portal customer's), else the browser's (Accept-Language, by
 * preference), else English.
 */
export function choosePageLanguage(locales: Array<string | null | undefined>, acceptLanguage?: string | string[]): PageLanguage {
  for (const locale of locales) {
    const language = spokenLanguage(locale);
    if (language) return language;
  }
  const header = Array.isArray(acceptLanguage) ? acceptLanguage.join(',') : acceptLanguage;
  return localeFromAcceptLanguage(header) ?? 'en';
}

export function translate(language: PageLanguage, key: MessageKey, vars: Record<string, string | number> = {}): string {
  const template = DICTIONARIES[language][key];
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in vars ? String(vars[name]) : whole));
}

export function hasKey(key: string): key is MessageKey {
  return key in en;
}

const formatters = new Map<string, Intl.NumberFormat>();

/**
 * Minor units as money in the page's language: 19700 brl in pt -> "R$ 197,00", 1250 eur in de ->
 * "12,50 €", 1500 jpy in ja -> "￥1,500". The decimals are the currency's minor unit as the API counts
 * it (`currencyDecimals`: none for jpy or krw, three for kwd), not Intl's own idea of them, which
 * drops the cents of cop, huf, idr or isk and would show 100 times the amount.
 */
export function formatMoney(amount: number, currency: string, language: PageLanguage): string {
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
const HOUR_CYCLES: Partial<Record<PageLanguage, 'h23'>> = { ko: 'h23' };

/** A date (or date and time, with its zone shown) in the page's language and the store's time zone. */
export function formatDate(unixSeconds: number, language: PageLanguage, options: { withTime?: boolean; timeZone?: string } = {}): string {
  const timeZone = options.timeZone ?? 'UTC';
  const format: Intl.DateTimeFormatOptions = options.withTime
    ? { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: HOUR_CYCLES[language], timeZoneName: 'short', timeZone }
    : { year: 'numeric', month: 'short', day: 'numeric', timeZone };
  try {
    return new Intl.DateTimeFormat(INTL_TAGS[language], format).format(new Date(unixSeconds * 1000));
  } catch {
    return new Intl.DateTimeFormat(INTL_TAGS[language], { ...format, timeZone: 'UTC' }).format(new Date(unixSeconds * 1000));
  }
}
