// The customer portal's pages as HTML: the sign-in confirmation, the account page (subscriptions with
// their actions, orders), and the one-message pages (link not working, portal off, signed out). Pure
// rendering from what the routes looked up; user text is escaped by html``.
import type { PageKey } from '../../i18n/dictionary';
import { formatDate, formatMoney } from '../../i18n/format';
import type { Language } from '../../i18n/languages';
import { hasKey, translate } from '../../i18n/pages';
import type { OrderDoc } from '../../store/orders';
import type { SubscriptionDoc } from '../../store/subscriptions';
import type { StripeFieldView } from './checkout-views';
import { html, layout, type Markup } from './html';

/** What the account page shows: whose account, its subscriptions and orders, and the last action's outcome. */
export interface AccountView {
  storeName: string;
  email: string;
  /** Where this portal's routes live: {portal_url}/{slug}, or '' at a custom domain's root. */
  base: string;
  csrf: string;
  timeZone: string;
  subscriptions: SubscriptionDoc[];
  orders: OrderDoc[];
  /** The action just done (?done=canceled|reactivated|card), or the reason it failed (?failed=...). */
  done?: string;
  failed?: string;
  /** Stripe.js's card field for a subscription paying through Stripe (null: the test connection's number input). */
  stripeFor?: (sub: SubscriptionDoc) => StripeFieldView | null;
}

function t(lang: Language, key: PageKey, vars?: Record<string, string | number>): string {
  return translate(lang, key, vars);
}

function messagePage(lang: Language, title: string, text: string, testId: string): string {
  const body = html`<main class="wrap"><section class="panel center" data-testid="${testId}"><h1>${title}</h1><p>${text}</p></section></main>`;
  return layout({ lang, title, body });
}

/** A sign-in link that does not work (used, expired, another store's), or a visitor not signed in (testId signin-needed). */
export function renderSignInInvalidPage(lang: Language, testId: 'signin-invalid' | 'signin-needed'): string {
  return messagePage(lang, t(lang, 'signin_invalid_title'), t(lang, 'signin_invalid_text'), testId);
}

export function renderPortalOffPage(lang: Language): string {
  return messagePage(lang, t(lang, 'portal_unavailable_title'), t(lang, 'portal_unavailable_text'), 'portal-unavailable');
}

export function renderSignedOutPage(lang: Language): string {
  return messagePage(lang, t(lang, 'sign_out'), t(lang, 'signed_out'), 'signed-out');
}

/** Whose account the link opens (the e-mail masked), and the one button that signs in. */
export function renderSignInConfirmPage(lang: Language, storeName: string, maskedEmail: string): string {
  const title = t(lang, 'signin_confirm_title', { store: storeName });
  const body = html`<main class="wrap"><section class="panel center" data-testid="signin-confirm"><h1>${title}</h1>
  <p>${t(lang, 'signin_confirm_text', { email: maskedEmail })}</p>
  <form method="post" data-once><button type="submit" data-testid="signin-continue">${t(lang, 'signin_continue', { email: maskedEmail })}</button></form></section></main>`;
  return layout({ lang, title, body, script: true });
}

function statusBadge(lang: Language, status: string): Markup {
  const key = `status_${status}`;
  return html`<span class="badge">${hasKey(key) ? t(lang, key) : status}</span>`;
}

function subscriptionItem(
  lang: Language,
  base: string,
  sub: SubscriptionDoc,
  csrf: string,
  timeZone: string,
  stripe: StripeFieldView | null,
): Markup {
  const money = sub.amount !== null && sub.currency ? formatMoney(sub.amount, sub.currency, lang) : '';
  const ended = sub.status === 'canceled' || sub.status === 'expired';
  const action = (name: string) => `${base}/account/subscriptions/${sub._id}/${name}`;
  const pm = sub.default_payment_method;
  return html`<li data-testid="subscription" data-subscription="${sub._id}">
  <p><strong>${sub.offer?.name ?? sub._id}</strong> ${statusBadge(lang, sub.status)} <span class="muted">${money}</span></p>
  ${
    sub.cancel_at_period_end && sub.current_period_end
      ? html`<p data-testid="cancels-on">${t(lang, 'cancels_on', { date: formatDate(sub.current_period_end, lang, { timeZone }) })}</p>`
      : sub.next_billing_at && !ended
        ? html`<p class="muted">${t(lang, 'next_billing', { date: formatDate(sub.next_billing_at, lang, { timeZone }) })}</p>`
        : ''
  }
  <p class="muted" data-testid="card-on-file">${pm?.last4 ? t(lang, 'card_on_file', { last4: pm.last4 }) : t(lang, 'no_card')}</p>
  ${
    ended
      ? ''
      : html`<div class="inline">
    ${
      sub.cancel_at_period_end
        ? html`<form method="post" action="${action('reactivate')}" data-once><input type="hidden" name="csrf" value="${csrf}"><button type="submit" class="secondary" data-testid="reactivate">${t(lang, 'reactivate')}</button></form>`
        : html`<form method="post" action="${action('cancel')}" data-once><input type="hidden" name="csrf" value="${csrf}"><button type="submit" class="secondary" data-testid="cancel">${t(lang, 'cancel_at_period_end')}</button></form>`
    }
  </div>
  <form method="post" action="${action('card')}" class="inline" data-once>
    <input type="hidden" name="csrf" value="${csrf}">
    ${stripe ? stripeCardField(lang, sub, stripe) : cardNumberField(lang, sub)}
    <button type="submit" data-testid="replace-card">${t(lang, 'save_card')}</button>
  </form>`
  }
</li>`;
}

/** The test connection's number input: the number reaches our server only to be tokenized in memory. */
function cardNumberField(lang: Language, sub: SubscriptionDoc): Markup {
  return html`<div><label for="card-${sub._id}">${t(lang, 'replace_card')}</label>
    <input type="text" id="card-${sub._id}" name="card_number" inputmode="numeric" autocomplete="cc-number" required maxlength="23"></div>`;
}

/** Stripe's card field (PCI SAQ A): Stripe.js turns the card into a pm_ id, the only card data the form posts. */
function stripeCardField(lang: Language, sub: SubscriptionDoc, stripe: StripeFieldView): Markup {
  return html`<div data-stripe-portal-card data-stripe-key="${stripe.publishableKey}" data-stripe-account="${stripe.account ?? ''}">
    <label for="card-element-${sub._id}">${t(lang, 'replace_card')}</label>
    <div id="card-element-${sub._id}" class="card-field" data-card-element data-testid="card-element"></div>
    <input type="hidden" name="payment_method" value="">
    <p class="alert" role="alert" data-card-error data-testid="card-error" data-unavailable="${t(lang, 'card_field_unavailable')}" hidden></p></div>`;
}

function orderItem(lang: Language, order: OrderDoc, timeZone: string): Markup {
  return html`<li data-testid="order"><p><strong>${order.items[0]?.description ?? order._id}</strong> ${statusBadge(lang, order.status)}</p>
  <p class="muted">${formatDate(order.created, lang, { timeZone })} · ${formatMoney(order.amount_total, order.currency, lang)} · ${order._id}</p></li>`;
}

const DONE_KEYS: Record<string, PageKey> = { canceled: 'done_canceled', reactivated: 'done_reactivated', card: 'done_card' };

/** The signed-in customer's account: subscriptions (cancel at period end, keep, replace the card) and orders. */
export function renderAccountPage(lang: Language, view: AccountView): string {
  const { base, csrf, timeZone, subscriptions: subs, orders } = view;
  const stripeOf = (sub: SubscriptionDoc) => view.stripeFor?.(sub) ?? null;
  const providerScript = subs.map(stripeOf).find(Boolean)?.jsUrl;
  // Own keys only: ?done=constructor would otherwise find Object's and answer 500.
  const done = view.done && Object.hasOwn(DONE_KEYS, view.done) ? DONE_KEYS[view.done] : undefined;
  const body = html`<header class="top"><span class="store">${view.storeName}</span><span class="muted">${t(lang, 'signed_in_as', { email: view.email })}</span></header>
<main class="wrap">
  <h1>${t(lang, 'portal_title')}</h1>
  ${done ? html`<p class="ok" role="status" data-testid="done">${t(lang, done)}</p>` : ''}
  ${view.failed ? html`<p class="alert" role="alert" data-testid="failed">${t(lang, 'action_failed', { reason: view.failed })}</p>` : ''}
  <div class="grid">
    <section class="panel" aria-labelledby="subs-title"><h2 id="subs-title">${t(lang, 'subscriptions')}</h2>
      ${subs.length ? html`<ul class="list">${subs.map((s) => subscriptionItem(lang, base, s, csrf, timeZone, stripeOf(s)))}</ul>` : html`<p class="muted">${t(lang, 'no_subscriptions')}</p>`}
    </section>
    <section class="panel" aria-labelledby="orders-title"><h2 id="orders-title">${t(lang, 'orders')}</h2>
      ${orders.length ? html`<ul class="list">${orders.map((o) => orderItem(lang, o, timeZone))}</ul>` : html`<p class="muted">${t(lang, 'no_orders')}</p>`}
    </section>
  </div>
  <form method="post" action="${base}/account/sign-out" class="inline"><input type="hidden" name="csrf" value="${csrf}"><button type="submit" class="secondary">${t(lang, 'sign_out')}</button></form>
</main>`;
  return layout({ lang, title: `${t(lang, 'portal_title')} · ${view.storeName}`, body, script: true, providerScript });
}

/** The renewal confirmation page: what the bank asks the buyer to confirm, and what became of it. */
export interface RenewalConfirmationPageView {
  state: 'open' | 'confirmed' | 'closed' | 'failed';
  storeName: string;
  product: string;
  amount: number;
  currency: string;
  /** Where the page posts once Stripe.js has run the bank's step. */
  action: string;
  /** Stripe.js and the intent to confirm (state open). */
  stripe?: StripeFieldView & { clientSecret: string; paymentMethodId: string };
}

/**
 * The page an e-mailed link opens: Stripe.js confirms the renewal's own PaymentIntent with the saved card (the
 * bank's 3-D Secure step opens in the page), then the form tells our server to check; no card data is posted.
 */
export function renderRenewalConfirmationPage(lang: Language, view: RenewalConfirmationPageView): string {
  const title = t(lang, 'confirm_payment_title');
  const amount = formatMoney(view.amount, view.currency, lang);
  const message = {
    confirmed: html`<p class="ok" role="status" data-testid="confirmed">${t(lang, 'confirm_payment_done')}</p>`,
    closed: html`<p data-testid="closed">${t(lang, 'confirm_payment_closed')}</p>`,
    failed: html`<p class="alert" role="alert" data-testid="failed">${t(lang, 'confirm_payment_failed')}</p>`,
    open: '',
  }[view.state];
  const stripe = view.state === 'open' || view.state === 'failed' ? view.stripe : undefined;
  const form = stripe
    ? html`<div data-stripe-renewal data-stripe-key="${stripe.publishableKey}" data-stripe-account="${stripe.account ?? ''}" data-client-secret="${stripe.clientSecret}" data-payment-method="${stripe.paymentMethodId}"></div>
  <form method="post" action="${view.action}" id="renewal-confirmed" data-once><button type="submit" data-testid="confirm-payment">${t(lang, 'confirm_payment_button')}</button></form>`
    : '';
  const body = html`<header class="top"><span class="store">${view.storeName}</span></header>
<main class="wrap"><section class="panel center" data-testid="renewal-confirmation" data-state="${view.state}"><h1>${title}</h1>
  ${message}
  ${stripe ? html`<p>${t(lang, 'confirm_payment_text', { amount, product: view.product })}</p>` : ''}
  ${form}
</section></main>`;
  return layout({ lang, title: `${title} · ${view.storeName}`, body, script: Boolean(stripe), providerScript: stripe?.jsUrl });
}
