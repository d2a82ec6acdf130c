// Where business counters are counted: one sink per process (the API's prom-client registry, the
// worker's Temporal Core meter), installed at start; until then, and in tests that install none, nothing.
import { boundedLabelValue, type BusinessCounter } from '../../domain/business-metrics';

export interface BusinessMetricsSink {
  /** Adds one to `counter` under its label's `value` (already bounded). */
  count(counter: BusinessCounter, value: string): void;
}

const nothing: BusinessMetricsSink = { count: () => undefined };
let sink: BusinessMetricsSink = nothing;

/** Makes `next` this process's sink (the API's or the worker's main does, once). */
export function installBusinessMetrics(next: BusinessMetricsSink): void {
  sink = next;
}

/** Counts one `value` of `counter`; a value outside the counter's list counts as `other`. */
export function countBusiness(counter: BusinessCounter, value: string): void {
  sink.count(counter, boundedLabelValue(counter, value));
}
