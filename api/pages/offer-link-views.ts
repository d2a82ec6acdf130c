// The offer link's own pages, shown before any session exists: the offer page (what a link preview
// reads, and where a buyer picks one of the offer's packs), whose buttons open the checkout by a POST
// that no prefetch or preview makes; and the page for an address that opened too many checkouts.
import { priceIn } from '../../domain/checkout';
import { formatMoney } from '../../i18n/format';
import type { Language } from '../../i18n/languages';
import { translate } from '../../i18n/pages';
import type { OfferDoc } from '../../store/collections';
import { html, layout } from './html';

export interface OfferLinkView {
  storeName: string;
  offer: OfferDoc;
  productName: string | null;
  /** The currency chosen by the link, or null for the offer's default. */
  currency: string | null;
  /** One button per entry: a pack, or null for the offer without a pack. */
  choices: (number | null)[];
  /** Where the buttons post: the link itself. */
  action: string;
}

export function renderOfferLinkPage(lang: Language, view: OfferLinkView): string {
  const price = priceIn(view.offer.prices, view.currency)!;
  const money = (units: number) => formatMoney(price.amount * units, price.currency, lang);
  const packChoice = view.choices.length > 1;
  const head = html`<meta property="og:type" content="product">
<meta property="og:title" content="${view.offer.name}">
<meta property="og:site_name" content="${view.storeName}">
<meta property="og:description" content="${view.productName ?? view.offer.name} · ${money(view.choices[0] ?? 1)}">`;
  const body = html`<header class="top"><span class="store">${view.storeName}</span><span class="muted">${translate(lang, 'secure_checkout')}</span></header>
<main class="wrap">
<section class="panel center" aria-labelledby="offer-title" data-testid="offer-link">
  ${view.productName ? html`<p class="muted">${view.productName}</p>` : ''}
  <h1 id="offer-title">${view.offer.name}</h1>
  ${packChoice ? html`<p>${translate(lang, 'choose_pack')}</p>` : html`<p class="price">${money(view.choices[0] ?? 1)}</p>`}
  ${view.choices.map(
    (pack) => html`<form method="post" action="${view.action}">
    ${view.currency ? html`<input type="hidden" name="currency" value="${view.currency}">` : ''}
    ${pack !== null ? html`<input type="hidden" name="pack" value="${pack}">` : ''}
    <button type="submit" data-testid="open-checkout">${
      packChoice && pack !== null ? `${translate(lang, 'pack_of', { n: pack })} · ${money(pack)}` : translate(lang, 'open_checkout')
    }</button>
  </form>`,
  )}
</section>
</main>`;
  return layout({ lang, title: `${view.offer.name} · ${view.storeName}`, body, head });
}

export function renderLinkBusyPage(lang: Language, retryAfterSeconds: number): string {
  const body = html`<main class="wrap">
<section class="panel center" aria-labelledby="busy-title" data-testid="too-many-checkouts">
  <h1 id="busy-title">${translate(lang, 'link_busy_title')}</h1>
  <p>${translate(lang, 'link_busy_text', { minutes: Math.max(1, Math.ceil(retryAfterSeconds / 60)) })}</p>
</section>
</main>`;
  return layout({ lang, title: translate(lang, 'link_busy_title'), body });
}
