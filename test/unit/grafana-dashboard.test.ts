// What this tests: the Grafana dashboard (ops/grafana/billing-dashboard.json) is built on what we
// export: each billing_* and http_* metric it queries is one the processes define, with the label it
// groups or filters by, and the rest are the Temporal SDK's temporal_* (checked against a live worker
// scrape in test/integration/platform/metrics.test.ts); the panels the runbook names are there.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BUSINESS_COUNTERS, HTTP_REQUEST_DURATION } from '../../domain/business-metrics';
import { metricNamesOfDashboard, queriesOfDashboard } from '../support/dashboard';

const dashboard = JSON.parse(readFileSync(new URL('../../ops/grafana/billing-dashboard.json', import.meta.url), 'utf8')) as {
  panels: Array<{ title: string }>;
};
const ours = new Map<string, readonly string[]>([
  ...Object.values(BUSINESS_COUNTERS).map((spec) => [spec.name, [spec.label]] as const),
  [HTTP_REQUEST_DURATION.name, [...HTTP_REQUEST_DURATION.labels, 'le']],
]);

describe('the Grafana dashboard', () => {
  it('queries only metrics we export: our billing_* and http_* names, else the Temporal SDK temporal_*', () => {
    const names = metricNamesOfDashboard(dashboard);
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(ours.has(name) || name.startsWith('temporal_'), name).toBe(true);
    for (const spec of Object.values(BUSINESS_COUNTERS).filter((s) => s.name !== 'billing_meter_events_total' && s.name !== 'billing_emails_total')) {
      expect(names).toContain(spec.name);
    }
  });

  it('groups and filters our metrics only by labels they have, and by label values they can take', () => {
    for (const expr of queriesOfDashboard(dashboard)) {
      for (const [, name, matchers] of expr.matchAll(/(billing_[a-z_]+|http_[a-z_]+?)(?:_bucket|_count|_sum)?\{([^}]*)\}/g)) {
        const base = name.replace(/_(bucket|count|sum)$/, '');
        for (const [, label, values] of matchers.matchAll(/([a-z_]+)=~?"([^"]*)"/g)) {
          if (label === 'job') continue;
          expect(ours.get(base), `${base} has label ${label}`).toContain(label);
          const spec = Object.values(BUSINESS_COUNTERS).find((s) => s.name === base);
          if (spec) for (const value of values.split('|')) expect(spec.values as readonly string[], `${base}{${label}="${value}"}`).toContain(value);
        }
      }
    }
  });

  it('has the panels operators look for: request rate and p99 per route, charges by outcome, deliveries failing, workflow task backlog', () => {
    const titles = dashboard.panels.map((panel) => panel.title);
    for (const wanted of ['API request rate per route', 'API p99 latency per route', 'Charges by outcome', 'Webhook deliveries failing']) {
      expect(titles).toContain(wanted);
    }
    expect(titles.some((title) => title.startsWith('Workflow task backlog'))).toBe(true);
  });
});
