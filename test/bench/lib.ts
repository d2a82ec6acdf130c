// Measurement helpers shared by the benchmarks: HTTP load with autocannon, percentiles, bounded
// concurrency, a console table, and JSON results in test/bench/results/. Benchmarks measure and print;
// they never assert on time.
import type { ActivityTimings } from '../../worker/activity-interceptors';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

// Benchmarks run the local stack like `npm start` does: development (the test payment connection).
process.env.NODE_ENV ??= 'development';
// They measure the billing path: buyer e-mails are recorded as skipped unless SMTP_URL names a server.
process.env.SMTP_URL ??= 'disabled';

export const resultsDir = join(dirname(fileURLToPath(import.meta.url)), 'results');

/** Nearest-rank percentile (p in 0..100) of unsorted values; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export interface LatencySummary {
  p50: number;
  p99: number;
  mean: number;
  max: number;
}

export function summarizeLatencies(valuesMs: readonly number[]): LatencySummary {
  const sum = valuesMs.reduce((total, value) => total + value, 0);
  return {
    p50: round(percentile(valuesMs, 50)),
    p99: round(percentile(valuesMs, 99)),
    mean: round(valuesMs.length ? sum / valuesMs.length : Number.NaN),
    max: round(valuesMs.length ? Math.max(...valuesMs) : Number.NaN),
  };
}

export function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** Runs `task(i)` for i in 0..total-1 with at most `concurrency` in flight. */
export async function runWithConcurrency(total: number, concurrency: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, total) }, async () => {
    while (next < total) await task(next++);
  });
  await Promise.all(lanes);
}

export interface HttpLoadOptions {
  url: string;
  connections?: number;
  durationSeconds?: number;
  /** Paths the connections cycle through (e.g. many ids), instead of the url's own path. */
  paths?: string[];
  headers?: Record<string, string>;
  /** Load generation runs in worker threads so it does not share the event loop of an in-process server. */
  workers?: number;
}

export interface HttpLoadSummary {
  requestsPerSec: number;
  latencyMs: { p50: number; p99: number; mean: number; max: number };
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  durationSeconds: number;
  connections: number;
}

export async function runAutocannon(options: HttpLoadOptions): Promise<HttpLoadSummary> {
  const connections = options.connections ?? 50;
  const result = await autocannon({
    url: options.url,
    connections,
    duration: options.durationSeconds ?? 10,
    headers: options.headers,
    workers: options.workers,
    requests: options.paths?.map((path) => ({ method: 'GET', path })),
  });
  return {
    requestsPerSec: round(result.requests.average),
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, mean: round(result.latency.mean, 2), max: result.latency.max },
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationSeconds: result.duration,
    connections,
  };
}

/** Where and with what the figures were taken: numbers only compare on the same machine. */
export function machineInfo() {
  const cpuList = cpus();
  return {
    cpus: cpuList.length,
    cpuModel: cpuList[0]?.model ?? 'unknown',
    memoryGiB: round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    /** Other work on the machine skews every figure: compare runs taken at a similar load. */
    loadAverage1m: round(loadavg()[0], 2),
  };
}

/** Writes results/<name>.json (gitignored) and returns its path relative to the working directory. */
export function saveResults(name: string, data: unknown): string {
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${name}.json`);
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return relative(process.cwd(), file);
}

/** Prints rows as an aligned text table, columns in the order of the first row's keys. */
export function printTable(title: string, rows: Array<Record<string, string | number>>): void {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]);
  const cell = (value: string | number | undefined) => (value === undefined ? '' : String(value));
  const widths = columns.map((column) => Math.max(column.length, ...rows.map((row) => cell(row[column]).length)));
  const line = (values: string[]) => values.map((value, i) => (i === 0 ? value.padEnd(widths[i]) : value.padStart(widths[i]))).join('  ');
  console.log(`\n${title}`);
  console.log(line(columns));
  console.log(line(widths.map((width) => '-'.repeat(width))));
  for (const row of rows) console.log(line(columns.map((column) => cell(row[column]))));
}

/** The activity durations a bench's worker recorded (what the activity timeouts in workflows/ are chosen from). */
export function printActivityTimings(summary: ReturnType<ActivityTimings['summary']>): void {
  printTable(
    'Activity durations (worker-side, ms): the start-to-close and heartbeat timeouts are chosen from these',
    Object.entries(summary).map(([activity, t]) => ({ activity, count: t.count, 'p50 ms': t.p50, 'p99 ms': t.p99, 'max ms': t.max })),
  );
}
