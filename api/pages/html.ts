// Server-rendered HTML without a template engine: a tagged template that escapes every
// interpolated value unless it is already rendered markup, and the layout every page shares
// (language, viewport, the stylesheet and script served from /assets, no inline code).
export class Markup {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

function render(value: unknown): string {
  if (value instanceof Markup) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** html`<p>${text}</p>`: text is escaped; nested html`` results and arrays of them are kept. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Markup {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Markup(out);
}

/** Only for markup this code built itself. */
export function trusted(markup: string): Markup {
  return new Markup(markup);
}

export interface LayoutOptions {
  lang: string;
  title: string;
  body: Markup;
  /** Extra head elements (a meta refresh). */
  head?: Markup;
  /** Load the page script (polling, copy button, method toggle). */
  script?: boolean;
  /** A provider's script the page script uses (Stripe.js), loaded first; its origin must be in the CSP. */
  providerScript?: string | null;
}

export const ASSET_VERSION = '5';

export function layout({ lang, title, body, head, script, providerScript }: LayoutOptions): string {
  return html`<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<link rel="stylesheet" href="/assets/pages.css?v=${ASSET_VERSION}">
${head ?? ''}
${providerScript ? html`<script src="${providerScript}"></script>` : ''}
${script ? html`<script src="/assets/pages.js?v=${ASSET_VERSION}" defer></script>` : ''}
</head>
<body>
${body}
</body>
</html>`.value;
}
