// The API's request spans (when tracing is on): one server span per request, named by its route
// pattern, continuing a caller's W3C trace; the handler runs inside it, so the Temporal client
// interceptors put this trace into the workflow calls the request makes.
import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { context, contextFromHeaders, trace } from '../adapters/tracing';
import { UNMATCHED_ROUTE } from '../domain/business-metrics';

const spans = new WeakMap<FastifyRequest, Span>();

export function traceRequests(app: FastifyInstance): void {
  const tracer = trace.getTracer('billing-api');
  // Callback style on purpose: `done` called inside context.with runs the rest of the request in the span's context.
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const parent = contextFromHeaders(request.headers);
    const span = tracer.startSpan(
      `${request.method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'http.route': route } },
      parent,
    );
    spans.set(request, span);
    context.with(trace.setSpan(parent, span), done);
  });
  app.addHook('onResponse', async (request, reply) => {
    const span = spans.get(request);
    if (!span) return;
    span.setAttribute('http.response.status_code', reply.statusCode);
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
    spans.delete(request);
  });
}
