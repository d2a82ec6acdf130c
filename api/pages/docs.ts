// The public API reference page at {docs_url} (PUBLIC_URL/docs by default), where every error's
// doc_url points: the error types and the closed code list of domain/errors.ts, rendered from that
// list so a new code appears here without editing the page. No API key, outside /v1.
import type { FastifyInstance } from 'fastify';
import { ERROR_CODES, ERROR_TYPES, errorTypeOf, statusOf, type ErrorType } from '../../domain/errors';
import { html, layout } from './html';

const TYPE_MEANINGS: Record<ErrorType, string> = {
  invalid_request_error: 'Missing or invalid parameter, malformed body, unknown version, or no such object (404).',
  idempotency_error: 'A problem with the Idempotency-Key header (400, or 409 while the first request still runs).',
  authentication_error: 'The API key is missing, invalid, revoked or expired.',
  card_error: 'The card was declined on a subscription charge; the error carries subscription_charge.',
  permission_error: 'Missing scope, API switched off, store inactive, or selling and charging blocked.',
  rate_limit_error: 'The rate limit was reached; retry after the Retry-After header.',
  api_error: 'A failure on the service side; keep the Request-Id and retry.',
};

export function renderErrorDocs(docsPath: string): string {
  const types = ERROR_TYPES.map((type) => html`<tr id="${type}"><td><code>${type}</code></td><td>${TYPE_MEANINGS[type]}</td></tr>`);
  const codes = ERROR_CODES.map(
    (code) => html`<tr id="${code}"><td><code>${code}</code></td><td>${statusOf(code)}</td><td><code>${errorTypeOf(code)}</code></td></tr>`,
  );
  const body = html`<main class="wrap"><section class="panel" id="errors">
<h1>Errors</h1>
<p>A failed request answers 4xx or 5xx with an object <code>error</code>: <code>type</code>, <code>code</code>,
<code>message</code> (English, may change: compare <code>code</code>, not the message), <code>param</code>
(the parameter or header that caused it, nested with dots and brackets such as <code>lines[0].amount</code>)
and <code>doc_url</code> (<a href="${docsPath}#errors">this section</a>). Keep the <code>Request-Id</code> header when asking for help.</p>
<h2>Types</h2>
<table class="lines"><thead><tr><th>type</th><th>When</th></tr></thead><tbody>${types}</tbody></table>
<h2>Codes</h2>
<table class="lines"><thead><tr><th>code</th><th>HTTP</th><th>type</th></tr></thead><tbody>${codes}</tbody></table>
</section></main>`;
  return layout({ lang: 'en', title: 'API reference: errors', body });
}

export default async function docsPage(app: FastifyInstance): Promise<void> {
  const page = renderErrorDocs('/docs');
  app.get('/docs', { config: { public: true }, schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(page),
  );
}
