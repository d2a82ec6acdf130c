// OpenTelemetry tracing for both processes, on only when OTEL_EXPORTER_OTLP_ENDPOINT is set (then spans
// leave through OTLP/HTTP in batches); off, nothing is registered and no interceptor or hook is added,
// so tracing costs nothing. Temporal's interceptors carry the trace through workflow headers, so one
// merchant request is one trace from the API's route through the workflow to its activities.
import { context, propagation, trace, type Context } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import type { WorkflowClientInterceptor } from '@temporalio/client';

export interface Tracing {
  provider: NodeTracerProvider;
  /** Where finished spans go (workflow spans reach it through the worker's sink). */
  spanProcessor: SpanProcessor;
  resource: Resource;
  /** Flushes spans still buffered and stops the exporter (on process exit). */
  shutdown(): Promise<void>;
}

/** Registers a tracer provider for `serviceName` sending to `spanProcessor`; it becomes the process's global one. */
export function startTracing(serviceName: string, spanProcessor: SpanProcessor): Tracing {
  const resource = new Resource({ 'service.name': serviceName });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // Registers the AsyncLocalStorage context manager and the W3C trace-context propagator too.
  provider.register();
  return { provider, spanProcessor, resource, shutdown: () => provider.shutdown() };
}

/**
 * Tracing to the OTLP collector OTEL_EXPORTER_OTLP_ENDPOINT names (the exporter reads it and the other
 * standard OTEL_EXPORTER_OTLP_* variables itself), or null when it is unset: then tracing is off.
 */
export function tracingFromEnv(serviceName: string, env: NodeJS.ProcessEnv = process.env): Tracing | null {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return null;
  return startTracing(env.OTEL_SERVICE_NAME || serviceName, new BatchSpanProcessor(new OTLPTraceExporter()));
}

/** The Temporal client interceptors that put the active trace into workflow starts, signals and updates; none when off. */
export function tracingClientInterceptors(tracing: Tracing | null): { workflow: WorkflowClientInterceptor[] } | undefined {
  return tracing ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : undefined;
}

/** The trace context a request's W3C `traceparent`/`tracestate` headers carry (none: a new trace). */
export function contextFromHeaders(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(context.active(), headers);
}

export { context, trace };
