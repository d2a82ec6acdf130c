// Reading the Grafana dashboard (ops/grafana/billing-dashboard.json): the metric names its queries use,
// so tests can check each against what the processes export.

/** Histogram series (_bucket, _count, _sum) named by the metric they belong to. */
const baseName = (series: string) => series.replace(/_(bucket|count|sum)$/, '');

/** The dashboard's queries (targets[].expr of every panel). */
export function queriesOfDashboard(dashboard: unknown): string[] {
  const panels = (dashboard as { panels?: Array<{ targets?: Array<{ expr?: string }> }> }).panels ?? [];
  return panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr ?? ''));
}

/**
 * Every metric name the queries select, sorted and once each. The dashboard writes each metric with a
 * selector or a range (`name{...}`, `name[5m]`), which is what tells a name from a label or a function.
 */
export function metricNamesOfDashboard(dashboard: unknown): string[] {
  const names = new Set<string>();
  for (const expr of queriesOfDashboard(dashboard)) {
    for (const [, name] of expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{[]/g)) names.add(baseName(name));
  }
  return [...names].sort();
}
