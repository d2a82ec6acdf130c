// The hosted checkout's pages as HTML: the payment form, the thank-you page, the processing page (a
// payment still running), the pending PIX and review pages, the failed-payment page and the
// unavailable-link page. Pure rendering from the session (and its order); user text is escaped by html``.
import {
  chargeAmounts,
  CUSTOMER_NAME_MAX,
  CUSTOMER_NAME_MIN,
  fillSessionPlaceholder,
  pixAllowed,
  priceIn,
  startsWithTrial,
  type Price,
} from '../../domain/checkout';
import type { PageKey } from '../../i18n/dictionary';
import { formatDate, formatMoney } from '../../i18n/format';
import type { Language } from '../../i18n/languages';
import { translate } from '../../i18n/pages';
import { DOCUMENT_TYPES } from '../../domain/documents';
import type { CheckoutSessionDoc } from '../../store/checkout-sessions';
import type { OrderDoc } from '../../store/orders';
import type { ProductFile } from '../../store/collections';
import { html, layout, type Markup } from './html';

export interface FormValues {
  email?: string | null;
  name?: string | null;
  phone?: string | null;
  document_type?: string | null;
  document_number?: string | null;
  method?: string | null;
  installments?: number | null;
}

/** Stripe.js on the page: its key, the store's connected account and where it loads from (PCI SAQ A: the card stays in its field). */
export interface StripeFieldView {
  publishableKey: string;
  account: string | null;
  jsUrl: string;
}

/** A pending Stripe payment: the 3-D Secure client secret while the buyer must act, the PIX QR image. */
export interface StripePendingView extends StripeFieldView {
  clientSecret: string | null;
  pixImageUrl: string | null;
}

export interface FormError {
  code: string;
  message: string;
  field: string | null;
}

function t(lang: Language, key: PageKey, vars?: Record<string, string | number>): string {
  return translate(lang, key, vars);
}

function topBar(lang: Language, session: CheckoutSessionDoc): Markup {
  return html`<header class="top">
  ${session.cancel_url ? html`<a class="back" href="${session.cancel_url}">← ${t(lang, 'back')}</a>` : ''}
  <span class="store">${session.store_name}</span>
  <span class="muted">${t(lang, 'secure_checkout')}</span>
</header>`;
}

function cycleText(lang: Language, cycle: string | null): string {
  const key = `cycle_${cycle ?? 'custom'}` as PageKey;
  return t(lang, key);
}

/** The currency shown and charged: the session's, else the buyer's choice, else the offer's default. */
export function chosenPrice(session: CheckoutSessionDoc, requested: string | null | undefined): Price {
  const prices = session.offer.prices;
  if (session.currency) return priceIn(prices, session.currency)!;
  const wanted = requested?.toLowerCase() ?? null;
  return (wanted && prices.find((p) => p.currency === wanted)) || priceIn(prices, null)!;
}

function isTrial(session: CheckoutSessionDoc): boolean {
  return startsWithTrial(session.offer);
}

function errorText(lang: Language, error: FormError): string {
  const specific = `err_${error.code}` as PageKey;
  const known = [
    'card_declined',
    'insufficient_funds',
    'invalid_number',
    'provider_unavailable',
    'payment_in_progress',
    'customer_rejected',
    'card_payments_locked',
    'card_fields_required',
    'payment_intent_authentication_failure',
    'authentication_abandoned',
    'installments_unavailable',
  ];
  if (known.includes(error.code)) return t(lang, specific);
  if (error.field && error.field !== 'payment') return `${t(lang, 'err_field', { field: error.field })} ${error.message}`;
  return `${t(lang, 'err_declined')} (${error.message})`;
}

function summary(lang: Language, session: CheckoutSessionDoc, price: Price): Markup {
  const amounts = chargeAmounts(price, session.pack, session.coupon);
  const money = (n: number) => formatMoney(n, price.currency, lang);
  const otherCurrencies = session.currency === null && session.offer.prices.length > 1;
  return html`<section class="panel" aria-labelledby="summary-title">
  <h2 id="summary-title">${t(lang, 'order_summary')}</h2>
  ${session.offer.product_name ? html`<p class="muted">${session.offer.product_name}</p>` : ''}
  <h1>${session.offer.name}</h1>
  <p class="price" data-testid="price">${money(amounts.amount_total)}</p>
  <table class="lines">
    <tbody>
      <tr><td>${session.pack ? t(lang, 'pack_of', { n: session.pack }) : session.offer.name}</td><td>${money(amounts.amount_subtotal)}</td></tr>
      ${amounts.amount_discount > 0 ? html`<tr><td>${t(lang, 'discount', { code: session.coupon!.code })}</td><td>−${money(amounts.amount_discount)}</td></tr>` : ''}
      <tr class="total"><td>${t(lang, 'total')}</td><td>${money(amounts.amount_total)}</td></tr>
    </tbody>
  </table>
  ${
    isTrial(session)
      ? html`<p class="hint">${t(lang, 'trial_note', { days: session.offer.trial_days!, amount: money(amounts.amount_total), cycle: cycleText(lang, session.offer.billing_cycle) })}</p>`
      : session.offer.type === 'recurring'
        ? html`<p class="hint">${t(lang, 'recurring_note', { cycle: cycleText(lang, session.offer.billing_cycle) })}</p>`
        : ''
  }
  ${
    otherCurrencies
      ? html`<nav aria-label="${t(lang, 'switch_currency')}"><p class="hint">${t(lang, 'switch_currency')}</p><div class="currencies">${session.offer.prices.map(
          (p) =>
            p.currency === price.currency
              ? html`<strong aria-current="true">${p.currency.toUpperCase()}</strong>`
              : html`<a href="/c/${session._id}?currency=${p.currency}" hreflang="${lang}">${p.currency.toUpperCase()}</a>`,
        )}</div></nav>`
      : ''
  }
</section>`;
}

export function renderCheckoutPage(
  lang: Language,
  session: CheckoutSessionDoc,
  options: {
    currency?: string | null;
    error?: FormError | null;
    values?: FormValues;
    pixAvailable: boolean;
    /** Whether the connection pays a card in the currency in installments (absent: as the offer allows). */
    installmentsIn?: (currency: string) => boolean;
    stripe?: StripeFieldView | null;
    /** A card of this session waits for 3-D Secure: the bank's step above the form (which still takes another card or PIX). */
    action?: StripePendingView | null;
  },
): string {
  const price = chosenPrice(session, options.currency);
  const amounts = chargeAmounts(price, session.pack, session.coupon);
  const money = (n: number) => formatMoney(n, price.currency, lang);
  const values = options.values ?? {};
  // A decline recorded by the workflow stays visible on reload, so the buyer knows why and retries.
  const error = options.error ?? (session.last_error ? { ...session.last_error, field: 'payment' } : null);
  const trial = isTrial(session);
  const pix = options.pixAvailable && pixAllowed(price.currency, trial);
  // Too many declined cards (card testing): only PIX is taken now.
  const cardLocked = session.card_locked === true;
  const method = pix && (values.method === 'pix' || cardLocked) ? 'pix' : 'card';
  const emailLocked = session.customer_email !== null;
  const honoured = options.installmentsIn?.(price.currency) ?? true;
  const maxInstallments =
    !trial && honoured && session.offer.max_installments && session.offer.max_installments > 1 ? session.offer.max_installments : 1;
  const invalid = (field: string) => (error?.field === field ? html` aria-invalid="true" aria-describedby="form-error"` : '');

  const body = html`${topBar(lang, session)}
<main class="wrap grid">
${summary(lang, session, price)}
<section class="panel" aria-labelledby="pay-title">
  ${options.action ? actionPanel(lang, session, options.action) : ''}
  <h2 id="pay-title">${options.action ? t(lang, 'action_other_way') : t(lang, 'your_details')}</h2>
  ${error ? html`<div class="alert" role="alert" id="form-error" data-testid="error">${errorText(lang, error)}</div>` : ''}
  <form method="post" action="/c/${session._id}/pay" data-once autocomplete="on">
    <input type="hidden" name="currency" value="${price.currency}">
    <label for="email">${t(lang, 'email')}</label>
    <input type="email" id="email" name="email" autocomplete="email" required value="${emailLocked ? session.customer_email : (values.email ?? '')}"${emailLocked ? html` readonly aria-describedby="email-hint"` : ''}${invalid('email')}>
    ${emailLocked ? html`<p class="hint" id="email-hint">${t(lang, 'email_locked')}</p>` : ''}
    ${
      session.customer
        ? ''
        : html`<label for="name">${t(lang, 'name')}</label>
    <input type="text" id="name" name="name" autocomplete="name" required minlength="${CUSTOMER_NAME_MIN}" maxlength="${CUSTOMER_NAME_MAX}" value="${values.name ?? session.customer_name ?? ''}"${invalid('name')}>
    <label for="phone">${t(lang, 'phone')}</label>
    <input type="tel" id="phone" name="phone" autocomplete="tel" required value="${values.phone ?? ''}"${invalid('phone')}>
    <div class="row">
      <div>
        <label for="document_type">${t(lang, 'document_type')}</label>
        <select id="document_type" name="document_type">${DOCUMENT_TYPES.map(
          (type) =>
            html`<option value="${type}"${(values.document_type ?? 'cpf') === type ? html` selected` : ''}>${t(lang, `doc_${type}` as PageKey)}</option>`,
        )}</select>
      </div>
      <div>
        <label for="document_number">${t(lang, 'document')}</label>
        <input type="text" id="document_number" name="document_number" required value="${values.document_number ?? ''}"${invalid('document.number')}${invalid('document')}>
      </div>
    </div>`
    }
    <fieldset>
      <legend>${t(lang, 'payment_method')}</legend>
      ${cardLocked ? html`<p class="alert" role="status" data-testid="card-locked">${t(lang, pix ? 'card_locked_pix' : 'card_locked')}</p>` : ''}
      <div class="choices">
        <label class="choice"><input type="radio" name="method_choice" value="card"${method === 'card' ? html` checked` : ''}${cardLocked ? html` disabled` : ''}> ${t(lang, 'card')}</label>
        ${pix ? html`<label class="choice"><input type="radio" name="method_choice" value="pix"${method === 'pix' ? html` checked` : ''}> ${t(lang, 'pix')}</label>` : ''}
      </div>
    </fieldset>
    <div data-method="card">
      ${options.stripe ? stripeCardField(lang, options.stripe) : cardFields(lang, invalid)}
      ${
        maxInstallments > 1
          ? html`<label for="installments">${t(lang, 'installments')}</label>
      <select id="installments" name="installments">${Array.from({ length: maxInstallments }, (_, i) => i + 1).map(
        (n) =>
          html`<option value="${n}"${(values.installments ?? 1) === n ? html` selected` : ''}>${t(lang, 'installment_option', {
            n,
            amount: money(Math.ceil(amounts.amount_total / n)),
          })}</option>`,
      )}</select>`
          : ''
      }
      <button type="submit" name="method" value="card" data-testid="pay-card">${trial ? t(lang, 'start_trial') : t(lang, 'pay', { amount: money(amounts.amount_total) })}</button>
    </div>
    ${
      pix
        ? html`<div data-method="pix">
      <button type="submit" name="method" value="pix" data-testid="pay-pix">${t(lang, 'generate_pix', { amount: money(amounts.amount_total) })}</button>
    </div>`
        : ''
    }
  </form>
</section>
</main>`;
  return layout({
    lang,
    title: `${session.offer.name} · ${session.store_name}`,
    body,
    script: true,
    providerScript: options.stripe?.jsUrl ?? options.action?.jsUrl,
  });
}

/**
 * An open session's card waiting for 3-D Secure: the page script runs Stripe.js's next action with the
 * stored client secret, then posts /c/<id>/confirm; without a secret yet, the button posts it (one read).
 * The panel polls the session's status, so an outcome delivered by the provider's event shows too.
 */
function actionPanel(lang: Language, session: CheckoutSessionDoc, action: StripePendingView): Markup {
  return html`<div class="action" data-poll="/c/${session._id}/status" data-state="action_required/unpaid" data-testid="action-required">
  <h2 id="action-title">${t(lang, 'action_title')}</h2>
  ${nextActionPanel(lang, session, action)}
  </div>`;
}

/** The test connection's card fields: the number reaches our server only to be tokenized in memory. */
function cardFields(lang: Language, invalid: (field: string) => Markup | ''): Markup {
  return html`<label for="card_number">${t(lang, 'card_number')}</label>
      <input type="text" id="card_number" name="card_number" inputmode="numeric" autocomplete="cc-number" data-required maxlength="23"${invalid('card_number')}>
      <div class="row">
        <div>
          <label for="card_expiry">${t(lang, 'expiry')}</label>
          <input type="text" id="card_expiry" name="card_expiry" inputmode="numeric" autocomplete="cc-exp" placeholder="MM/YY" maxlength="7">
        </div>
        <div>
          <label for="card_cvc">${t(lang, 'cvc')}</label>
          <input type="text" id="card_cvc" name="card_cvc" inputmode="numeric" autocomplete="cc-csc" maxlength="4">
        </div>
      </div>`;
}

/** Stripe's card field: Stripe.js mounts it and turns the card into a pm_ id the form posts as payment_method. */
function stripeCardField(lang: Language, stripe: StripeFieldView): Markup {
  return html`<div data-stripe-card data-stripe-key="${stripe.publishableKey}" data-stripe-account="${stripe.account ?? ''}">
      <label for="card-element">${t(lang, 'card_details')}</label>
      <div id="card-element" class="card-field" data-testid="card-element"></div>
      <input type="hidden" name="payment_method" value="">
      <p class="alert" role="alert" id="card-error" data-testid="card-error" data-unavailable="${t(lang, 'card_field_unavailable')}" hidden></p>
      </div>`;
}

function orderLines(lang: Language, order: OrderDoc | null): Markup {
  if (!order) return html``;
  const money = (n: number) => formatMoney(n, order.currency, lang);
  return html`<table class="lines"><tbody>
    ${order.items.map((item) => html`<tr><td>${item.description}${item.quantity > 1 ? ` × ${item.quantity}` : ''}</td><td>${money(item.amount)}</td></tr>`)}
    ${order.amount_discount > 0 ? html`<tr><td>${t(lang, 'discount', { code: order.coupon ?? '' })}</td><td>−${money(order.amount_discount)}</td></tr>` : ''}
    <tr class="total"><td>${t(lang, 'total')}</td><td>${money(order.amount_total)}</td></tr>
  </tbody></table>`;
}

/** Where the thank-you page continues: the session's success_url, else the offer's, else the store's default. */
export function successTarget(session: CheckoutSessionDoc): string | null {
  const url = session.success_url ?? session.fallback_success_url ?? null;
  return url ? fillSessionPlaceholder(url, session._id) : null;
}

function downloads(lang: Language, files: ProductFile[]): Markup {
  if (files.length === 0) return html``;
  return html`<section aria-labelledby="files-title" data-testid="files"><h2 id="files-title">${t(lang, 'your_files')}</h2>
  <ul class="files">${files.map((file) => html`<li><a href="${file.url}" download rel="noopener">${file.name}</a></li>`)}</ul></section>`;
}

export function renderThankYouPage(lang: Language, session: CheckoutSessionDoc, order: OrderDoc | null, redirectAsked: boolean): string {
  const target = successTarget(session);
  const files = session.files ?? [];
  // With files to download the page does not leave by itself: the buyer continues when done.
  const redirect = redirectAsked && files.length === 0;
  const delay = session.redirect_delay;
  const head = target && redirect ? html`<meta http-equiv="refresh" content="${delay};url=${target}">` : undefined;
  const body = html`${topBar(lang, session)}
<main class="wrap">
<section class="panel center" aria-labelledby="thanks-title" data-testid="thank-you">
  <h1 id="thanks-title">${t(lang, 'thank_you')}</h1>
  <p class="ok" role="status">${t(lang, 'paid_text')}</p>
  <p><strong>${session.offer.name}</strong></p>
  ${order ? html`<p class="muted" data-testid="order-id">${t(lang, 'order_ref', { id: order._id })}</p>` : ''}
  ${session.subscription ? html`<p class="muted">${t(lang, 'subscription_ref', { id: session.subscription })}</p>` : ''}
  ${orderLines(lang, order)}
  ${downloads(lang, files)}
  ${
    target
      ? html`${redirect ? html`<p aria-live="polite">${trustedCountdown(lang, delay)}</p>` : ''}<a class="button" href="${target}" data-testid="continue">${t(lang, 'continue')}</a>`
      : ''
  }
</section>
</main>`;
  return layout({ lang, title: t(lang, 'thank_you'), body, head, script: Boolean(target && redirect) });
}

function trustedCountdown(lang: Language, delay: number): Markup {
  const [before, after] = t(lang, 'redirecting', { n: '\u0000' }).split('\u0000');
  return html`${before}<span data-countdown="${delay}">${delay}</span>${after}`;
}

function testButtons(lang: Language, session: CheckoutSessionDoc): Markup {
  return html`<div class="test" aria-label="${t(lang, 'test_connection')}">
  <p class="hint">${t(lang, 'test_connection')}</p>
  <form method="post" action="/c/${session._id}/test/settle"><input type="hidden" name="outcome" value="paid"><button type="submit" class="secondary" data-testid="settle-paid">${t(lang, 'settle_paid')}</button></form>
  <form method="post" action="/c/${session._id}/test/settle"><input type="hidden" name="outcome" value="refused"><button type="submit" class="secondary" data-testid="settle-refused">${t(lang, 'settle_refused')}</button></form>
</div>`;
}

export function renderPendingPage(
  lang: Language,
  session: CheckoutSessionDoc,
  order: OrderDoc | null,
  testConnection: boolean,
  timeZone: string,
  stripe: StripePendingView | null = null,
): string {
  const payment = session.payment;
  const pix = payment?.method === 'pix';
  const action = !pix && stripe?.clientSecret ? stripe : null;
  const state = `${session.status}/${session.payment_status}`;
  const body = html`${topBar(lang, session)}
<main class="wrap">
<section class="panel" aria-labelledby="pending-title" data-poll="/c/${session._id}/status" data-state="${state}" data-testid="pending">
  <h1 id="pending-title">${pix ? t(lang, 'pix_title') : action ? t(lang, 'action_title') : t(lang, 'pending_title')}</h1>
  ${
    pix && payment?.pix_code
      ? html`<p>${t(lang, 'pix_instructions', { time: formatDate(payment.pix_expires_at!, lang, { withTime: true, timeZone }) })}</p>
  ${stripe?.pixImageUrl ? html`<p class="center"><img src="${stripe.pixImageUrl}" alt="${t(lang, 'pix_qr')}" width="240" height="240" data-testid="pix-qr"></p>` : ''}
  <label for="pix-code">${t(lang, 'pix_code')}</label>
  <textarea id="pix-code" readonly data-testid="pix-code">${payment.pix_code}</textarea>
  <button type="button" class="secondary" data-copy="pix-code" data-copied="${t(lang, 'copied')}" hidden>${t(lang, 'copy_code')}</button>`
      : action
        ? nextActionPanel(lang, session, action)
        : html`<p>${t(lang, 'review_text')}</p>`
  }
  <p role="status" aria-live="polite"><span class="spinner" aria-hidden="true"></span>${t(lang, 'waiting')}</p>
  ${orderLines(lang, order)}
  ${testConnection ? testButtons(lang, session) : ''}
</section>
</main>`;
  const head = html`<noscript><meta http-equiv="refresh" content="5"></noscript>`;
  return layout({ lang, title: t(lang, 'pending_title'), body, head, script: true, providerScript: action ? action.jsUrl : null });
}

/**
 * 3-D Secure: the page script runs Stripe.js's next action with the client secret, then posts to
 * /c/<id>/confirm so the server asks the provider at once instead of waiting for its event.
 */
function nextActionPanel(lang: Language, session: CheckoutSessionDoc, action: StripePendingView): Markup {
  return html`<p>${t(lang, 'action_text')}</p>
  <div data-stripe-action data-stripe-key="${action.publishableKey}" data-stripe-account="${action.account ?? ''}" data-client-secret="${action.clientSecret ?? ''}" data-testid="next-action">
  <form method="post" action="/c/${session._id}/confirm" id="stripe-confirmed"><button type="submit" class="secondary" data-testid="action-retry">${t(lang, 'action_retry')}</button></form>
  </div>`;
}

/**
 * A payment the workflow is still running: the buyer waits here (polling) instead of paying again;
 * `confirming` when the provider has not answered for it yet (it may have been charged).
 */
export function renderProcessingPage(lang: Language, session: CheckoutSessionDoc, confirming = false): string {
  const body = html`${topBar(lang, session)}
<main class="wrap">
<section class="panel" aria-labelledby="processing-title" data-poll="/c/${session._id}/status" data-state="processing/${session.payment_status}" data-testid="processing">
  <h1 id="processing-title">${t(lang, 'pending_title')}</h1>
  <p${confirming ? html` data-testid="confirming"` : ''}>${t(lang, confirming ? 'confirming_text' : 'err_payment_in_progress')}</p>
  <p role="status" aria-live="polite"><span class="spinner" aria-hidden="true"></span>${t(lang, 'waiting')}</p>
</section>
</main>`;
  const head = html`<noscript><meta http-equiv="refresh" content="5"></noscript>`;
  return layout({ lang, title: t(lang, 'pending_title'), body, head, script: true });
}

export function renderFailedPage(lang: Language, session: CheckoutSessionDoc): string {
  const body = html`${topBar(lang, session)}
<main class="wrap">
<section class="panel center" aria-labelledby="failed-title" data-testid="failed">
  <h1 id="failed-title">${t(lang, 'failed_title')}</h1>
  <p class="alert" role="alert">${t(lang, 'failed_text')}</p>
  ${session.cancel_url ? html`<a class="button" href="${session.cancel_url}">${t(lang, 'back')}</a>` : ''}
</section>
</main>`;
  return layout({ lang, title: t(lang, 'failed_title'), body });
}

export function renderUnavailablePage(lang: Language): string {
  const body = html`<main class="wrap">
<section class="panel center" aria-labelledby="unavailable-title" data-testid="unavailable">
  <h1 id="unavailable-title">${t(lang, 'unavailable_title')}</h1>
  <p>${t(lang, 'unavailable_text')}</p>
</section>
</main>`;
  return layout({ lang, title: t(lang, 'unavailable_title'), body });
}
