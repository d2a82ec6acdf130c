// What this tests: docs/speed.md's generator (test/bench/speed-doc.ts) reads the fields the benches save:
// a bench's path against its yardstick and floor, where and when it was measured, "not measured on this
// checkout" for a bench without a results file, and "—" for a field a results file lacks.
import { describe, expect, it } from 'vitest';
import { speedPage } from '../bench/speed-doc';

const machine = { cpus: 2, cpuModel: 'Test CPU', memoryGiB: 7.8, node: 'v20.20.2', platform: 'linux-x64', loadAverage1m: 0.92 };
const webhooks = {
  benchmark: 'webhooks',
  takenAt: '2026-11-28T15:43:00.000Z',
  machine,
  loadAverage1mAfter: 1.4,
  pingWorkflowsPerSec: 38.3,
  burst: { deliveriesPerSec: 31.3 },
  ratioToPingThisRun: 0.82,
  floor: { skips: '…', ratioToPing: 0.98 },
};
const conventions = {
  benchmark: 'conventions',
  takenAt: '2026-11-28T15:29:00.000Z',
  machine,
  settings: { customers: 10_000 },
  results: {
    apiById: { requestsPerSec: 860, latencyMs: { p50: 40, p99: 105 } },
    bareById: { requestsPerSec: 1000, latencyMs: { p50: 35, p99: 100 } },
  },
  listSequential: { bareMs: [5, 6, 7], apiMs: [9, 10, 9.6] },
  goals: { byIdThroughputPercentOfBare: 86, byIdP99TimesBare: 1.05, floorVsBare: { throughputPercent: 88.4 }, byIdThroughputPercentOfFloor: 97.2 },
};

const rowOf = (page: string, start: string) => page.split('\n').find((line) => line.startsWith(`| ${start}`));

describe('docs/speed.md from the benches’ results', () => {
  const page = speedPage(
    new Map<string, Record<string, unknown>>([
      ['webhooks', webhooks],
      ['conventions', conventions],
      ['engine-off', { benchmark: 'engine' }],
    ]),
  );

  it('puts a measured path beside its yardstick and floor', () => {
    expect(rowOf(page, 'webhook deliveries')).toBe(
      "| webhook deliveries, a burst | 31.3 deliveries/s | bare one-activity workflows: 38.3/s | 0.82 | 0.98 (the spec's work per delivery only) | ≥ 0.70 |",
    );
    expect(rowOf(page, 'GET /v1/customers/{id}')).toContain(
      '| 860 req/s, p99 105 ms | bare route, same reads: 1,000 req/s | 86%, p99 1.05x | 88.4% of the yardstick; ours 97.2% of it |',
    );
  });

  it('shows "—" for a field the results file lacks', () => {
    expect(rowOf(page, 'GET /v1/customers?limit=100')).toContain('| p50 9.6 ms one at a time; — at 50 connections | bare list route: — |');
  });

  it('says which benches were not measured on this checkout, with their command and goal', () => {
    expect(rowOf(page, 'POST /v1/checkout/sessions')).toBe(
      '| POST /v1/checkout/sessions | not measured on this checkout (`npm run bench:checkout`) | — | — | — | ≥ 80% of the yardstick |',
    );
    expect(page).toContain('Not measured: `checkout`, `usage`');
  });

  it('names the machine, the date and the load of each measured bench, and lists other results files', () => {
    expect(page).toContain(
      '| `webhooks.json` | `npm run bench:webhooks` | 2026-11-28T15:43:00.000Z | 2 × Test CPU, 7.8 GiB, v20.20.2 | 0.92 → 1.4 |',
    );
    expect(page).toContain('Other results files, not in the table: `engine-off.json`.');
  });

  it('says when no bench has been run at all', () => {
    expect(speedPage(new Map())).toContain('No bench has been run on this checkout');
  });
});
