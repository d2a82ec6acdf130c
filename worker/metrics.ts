// The worker's metrics: one Prometheus endpoint (WORKER_METRICS_PORT) served by the Temporal Core
// runtime's exporter, which carries the SDK's own `temporal_*` metrics and, through the runtime's
// metric meter, the business counters, so one scrape sees both. Counted from activity results by an
// interceptor, so activities stay as they are; a result is counted when the activity returns it.
import type { MetricCounter, MetricMeter } from '@temporalio/common';
import type { ActivityInterceptorsFactory, MetricsExporterConfig } from '@temporalio/worker';
import { BUSINESS_COUNTERS, type BusinessCounter } from '../domain/business-metrics';
import { countBusiness, type BusinessMetricsSink } from '../services/operations/business-metrics';

export const DEFAULT_WORKER_METRICS_PORT = 9465;

/** WORKER_METRICS_PORT (0: any free port, as tests use), bound on all interfaces like the API. */
export function workerMetricsExporter(env: NodeJS.ProcessEnv = process.env): MetricsExporterConfig {
  const raw = env.WORKER_METRICS_PORT;
  const port = raw === undefined || raw === '' ? DEFAULT_WORKER_METRICS_PORT : Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`WORKER_METRICS_PORT must be a port number, not '${raw}'`);
  return { prometheus: { bindAddress: `0.0.0.0:${port}` } };
}

/** The business counters on the Core runtime's meter, each listed value at 0 so a scrape names them all. */
export function coreBusinessMetrics(meter: MetricMeter): BusinessMetricsSink {
  const counters = new Map<BusinessCounter, MetricCounter>();
  for (const [key, spec] of Object.entries(BUSINESS_COUNTERS) as Array<[BusinessCounter, (typeof BUSINESS_COUNTERS)[BusinessCounter]]>) {
    const counter = meter.createCounter(spec.name, undefined, spec.help);
    for (const value of spec.values) counter.add(0, { [spec.label]: value });
    counters.set(key, counter);
  }
  return { count: (counter, value) => counters.get(counter)?.add(1, { [BUSINESS_COUNTERS[counter].label]: value }) };
}

type Counted = { counter: BusinessCounter; valueOf: (result: unknown) => string | undefined };

const field =
  (...path: string[]) =>
  (result: unknown): string | undefined => {
    let at: unknown = result;
    for (const key of path) at = at && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined;
    return typeof at === 'string' ? at : undefined;
  };

/** Which activity results are business events, and the label value each carries. */
const COUNTED_ACTIVITIES: Record<string, Counted> = {
  executeSubscriptionCharge: { counter: 'charges', valueOf: field('outcome') },
  settleSubscriptionCharge: { counter: 'charges', valueOf: field('outcome') },
  refuseUndecidedCharge: { counter: 'charges', valueOf: field('outcome') },
  chargeCheckoutAttempt: { counter: 'charges', valueOf: field('outcome', 'status') },
  completeCheckoutSession: { counter: 'checkoutSessions', valueOf: field('session', 'status') },
  markCheckoutSessionExpired: { counter: 'checkoutSessions', valueOf: field('status') },
  settleCheckoutSession: { counter: 'checkoutSessions', valueOf: field('payment_status') },
  attemptWebhookDelivery: { counter: 'webhookDeliveries', valueOf: field('outcome') },
  sendPaymentConfirmation: { counter: 'emails', valueOf: (result) => (typeof result === 'string' ? result : undefined) },
  sendCancellationNotice: { counter: 'emails', valueOf: (result) => (typeof result === 'string' ? result : undefined) },
};

/** Counts each listed activity's result (a thrown attempt counts nothing: its retry's result will). */
export const countActivityOutcomes: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    async execute(input, next) {
      const result: unknown = await next(input);
      const counted = COUNTED_ACTIVITIES[ctx.info.activityType];
      const value = counted?.valueOf(result);
      if (counted && value !== undefined) countBusiness(counted.counter, value);
      return result;
    },
  },
});
