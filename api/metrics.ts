// The API's Prometheus metrics: the request histogram per route pattern, method and status, the
// business counters (see domain/business-metrics.ts) and the process's default metrics, served as
// text on their own listener (API_METRICS_PORT), never on the public port.
import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { BUSINESS_COUNTERS, HTTP_REQUEST_DURATION, UNMATCHED_ROUTE, type BusinessCounter } from '../domain/business-metrics';
import type { BusinessMetricsSink } from '../services/operations/business-metrics';

export interface ApiMetrics {
  registry: Registry;
  httpDuration: Histogram<string>;
  business: BusinessMetricsSink;
}

/** Each counter with every listed value at 0, so a scrape names them all before the first event. */
function businessCounters(registry: Registry): BusinessMetricsSink {
  const counters = new Map<BusinessCounter, Counter<string>>();
  for (const [key, spec] of Object.entries(BUSINESS_COUNTERS) as Array<[BusinessCounter, (typeof BUSINESS_COUNTERS)[BusinessCounter]]>) {
    const counter = new Counter({ name: spec.name, help: spec.help, labelNames: [spec.label], registers: [registry] });
    for (const value of spec.values) counter.inc({ [spec.label]: value }, 0);
    counters.set(key, counter);
  }
  return { count: (counter, value) => counters.get(counter)?.inc({ [BUSINESS_COUNTERS[counter].label]: value }) };
}

export function createApiMetrics(): ApiMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const httpDuration = new Histogram({
    name: HTTP_REQUEST_DURATION.name,
    help: HTTP_REQUEST_DURATION.help,
    labelNames: [...HTTP_REQUEST_DURATION.labels],
    registers: [registry],
  });
  return { registry, httpDuration, business: businessCounters(registry) };
}

/** Times every response under its route's pattern (routeOptions.url), so /v1/customers/cus_1 and cus_2 are one series. */
export function measureRequests(app: FastifyInstance, histogram: Histogram<string>): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    histogram.observe({ method: request.method, route, status_code: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });
}

/** GET /metrics on its own port (the operator's network, not the merchants'); anything else is 404. */
export async function startMetricsServer(registry: Registry, port: number, host: string): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (error: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${String(error)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
