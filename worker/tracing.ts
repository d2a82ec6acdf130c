// The worker's side of tracing (when on): Temporal's OpenTelemetry interceptors for workflows (bundled
// into the workflow code, spans leaving the sandbox through a sink) and for activities, so a workflow
// run and its activities join the trace of the request that started or updated it.
import { createRequire } from 'node:module';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { Tracing } from '../adapters/tracing';

const require = createRequire(import.meta.url);

/** The workflow-side interceptors module the SDK ships (bundled with the workflows when tracing is on). */
export const tracingWorkflowModule = require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/** A span per activity run, under the workflow's trace; log attributes carry its ids. */
export const tracingActivityInterceptors: ActivityInterceptorsFactory = (ctx) => ({
  inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
  outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
});

/** The sink workflow spans leave the sandbox through, into the process's span processor. */
export function tracingSinks(tracing: Tracing) {
  return { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) };
}
