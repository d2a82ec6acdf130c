// The pages every hosted page may end on, in the buyer's language: too many payment attempts from one
// address (429) and a failure (4xx or 500, with the request's reference for support).
import type { Language } from '../../i18n/languages';
import { translate } from '../../i18n/pages';
import { html, layout } from './html';

export function renderTooManyAttemptsPage(lang: Language, retryAfterSeconds: number): string {
  const body = html`<main class="wrap"><section class="panel center" data-testid="too-many-attempts"><h1>${translate(lang, 'too_many_title')}</h1>
<p>${translate(lang, 'too_many_text', { minutes: Math.max(1, Math.ceil(retryAfterSeconds / 60)) })}</p></section></main>`;
  return layout({ lang, title: translate(lang, 'too_many_title'), body });
}

export function renderBrokenPage(lang: Language, reference: string): string {
  const body = html`<main class="wrap"><section class="panel center" data-testid="page-error"><h1>${translate(lang, 'broken_title')}</h1>
<p>${translate(lang, 'broken_text', { ref: reference })}</p></section></main>`;
  return layout({ lang, title: translate(lang, 'broken_title'), body });
}

/** Card testing slowed the store or offer down: the attempt did not reach the provider; try again in `seconds`. */
export function renderCardsSlowedPage(lang: Language, retryAfterSeconds: number, checkoutPath: string): string {
  const body = html`<main class="wrap"><section class="panel center" data-testid="cards-slowed"><h1>${translate(lang, 'too_many_title')}</h1>
<p>${translate(lang, 'err_card_payments_slowed', { seconds: retryAfterSeconds })}</p>
<p><a class="button" href="${checkoutPath}">${translate(lang, 'back')}</a></p></section></main>`;
  return layout({ lang, title: translate(lang, 'too_many_title'), body });
}
