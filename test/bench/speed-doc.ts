// `npm run docs:speed`: writes docs/speed.md from the JSON the benches saved in test/bench/results/ (gitignored):
// each path against its yardstick and, where the bench measures one, its floor, with the machine and the date
// the figures came from. A bench without a results file is "not measured on this checkout"; a field a bench
// no longer writes shows as "—". The page says nothing the JSON does not; the goals are issue 30's.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// Not imported from ./lib, which sets the benches' environment and loads autocannon.
const here = dirname(fileURLToPath(import.meta.url));
const resultsDir = join(here, 'results');

/** One bench's JSON as saved, read through `at` (any field may be missing in an older or newer file). */
type Json = Record<string, unknown>;

interface Row {
  path: string;
  ours: string;
  yardstick: string;
  against: string;
  floor: string;
  goal: string;
}

interface Bench {
  /** The results file's name without `.json`, as the bench saves it. */
  file: string;
  command: string;
  /** The paths it measures with their goals, listed even when it has not run here. */
  paths: Array<[path: string, goal: string]>;
  rows(r: Json): Row[];
}

const NONE = '—';

/** The value at a dotted path of a JSON object, or undefined. */
export function at(value: unknown, path: string): unknown {
  let node = value;
  for (const key of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function num(r: unknown, path: string): number | undefined {
  const v = at(r, path);
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** A number with its unit, or "—" when the bench did not write it. */
function fmt(value: number | undefined, unit = '', digits = 1): string {
  if (value === undefined) return NONE;
  const rounded = Number(value.toFixed(digits));
  return `${rounded.toLocaleString('en-US')}${unit}`;
}

const times = (a?: number, b?: number) => (a !== undefined && b !== undefined && b > 0 ? fmt(a / b, 'x', 2) : NONE);
const share = (a?: number, b?: number) => (a !== undefined && b !== undefined && b > 0 ? fmt((a / b) * 100, '%') : NONE);

/** Nearest-rank median, as lib.ts's percentile(values, 50). */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(sorted.length / 2) - 1)];
}

function chainOf(r: Json, local: boolean): Json | undefined {
  const chain = at(r, 'chain');
  return Array.isArray(chain) ? (chain.find((c) => at(c, 'local') === local) as Json | undefined) : undefined;
}

/** The benches, in the order of the README's former Speed table; goals are issue 30's. */
export const BENCHES: Bench[] = [
  {
    file: 'conventions',
    command: 'npm run bench:conventions',
    paths: [
      ['GET /v1/customers/{id}', '≥ 90% of the yardstick'],
      ['GET /v1/customers?limit=100', 'p50 ≤ 50 ms'],
    ],
    rows: (r) => {
      const apiMs = at(r, 'listSequential.apiMs');
      const listP50 = Array.isArray(apiMs) && apiMs.length ? median(apiMs as number[]) : undefined;
      return [
        {
          path: 'GET /v1/customers/{id}, 50 connections',
          ours: `${fmt(num(r, 'results.apiById.requestsPerSec'), ' req/s')}, p99 ${fmt(num(r, 'results.apiById.latencyMs.p99'), ' ms')}`,
          yardstick: `bare route, same reads: ${fmt(num(r, 'results.bareById.requestsPerSec'), ' req/s')}`,
          against: `${fmt(num(r, 'goals.byIdThroughputPercentOfBare'), '%')}, p99 ${fmt(num(r, 'goals.byIdP99TimesBare'), 'x', 2)}`,
          floor: `${fmt(num(r, 'goals.floorVsBare.throughputPercent'), '%')} of the yardstick; ours ${fmt(num(r, 'goals.byIdThroughputPercentOfFloor'), '%')} of it`,
          goal: '≥ 90% of the yardstick',
        },
        {
          path: `GET /v1/customers?limit=100, ${fmt(num(r, 'settings.customers'), '', 0)} customers`,
          ours: `p50 ${fmt(listP50, ' ms')} one at a time; ${fmt(num(r, 'results.apiList100.requestsPerSec'), ' req/s')} at 50 connections`,
          yardstick: `bare list route: ${fmt(num(r, 'results.bareList100.requestsPerSec'), ' req/s')}`,
          against: fmt(num(r, 'goals.listThroughputPercentOfBare'), '%'),
          floor: NONE,
          goal: 'p50 ≤ 50 ms',
        },
      ];
    },
  },
  {
    file: 'checkout',
    command: 'npm run bench:checkout',
    paths: [
      ['POST /v1/checkout/sessions', '≥ 80% of the yardstick'],
      ['hosted page GET /c/{id}', 'p99 ≤ 30 ms'],
    ],
    rows: (r) => [
      {
        path: 'POST /v1/checkout/sessions, 20 connections',
        ours: fmt(num(r, 'create.sessionsPerSec'), ' sessions/s'),
        yardstick: `bare workflow starts: ${fmt(num(r, 'starts.startsPerSec'), '/s')}`,
        against: fmt(num(r, 'createToBareStartsPercent'), '%'),
        floor: NONE,
        goal: '≥ 80% of the yardstick',
      },
      {
        path: 'hosted page GET /c/{id}, 10 connections',
        ours: `p99 ${fmt(num(r, 'page.latencyMs.p99'), ' ms')}`,
        yardstick: `bare route, one read by _id: p99 ${fmt(num(r, 'barePage.latencyMs.p99'), ' ms')}`,
        against: times(num(r, 'page.latencyMs.p99'), num(r, 'barePage.latencyMs.p99')),
        floor: NONE,
        goal: 'p99 ≤ 30 ms',
      },
    ],
  },
  {
    file: 'usage',
    command: 'npm run bench:usage',
    paths: [['meter batch, POST /v1/billing/meter_events/batch', '≥ 70% and ≥ 5,000 events/s']],
    rows: (r) => [
      {
        path: 'meter batch, 100 events a call, 8 clients',
        ours: fmt(num(r, 'ingestion.acceptedPerSec'), ' events/s', 0),
        yardstick: `raw insertMany, 1 writer: ${fmt(num(r, 'rawInsertMany.sequential.docsPerSec'), ' events/s', 0)}`,
        against: share(num(r, 'ingestion.acceptedPerSec'), num(r, 'rawInsertMany.sequential.docsPerSec')),
        floor: NONE,
        goal: '≥ 70% and ≥ 5,000 events/s',
      },
    ],
  },
  {
    file: 'charges',
    command: 'npm run bench:charges',
    paths: [
      ['one-off charge, one at a time', '≤ 1.3x'],
      ['one-off charges, 20 connections', '≤ 2x'],
    ],
    rows: (r) => {
      const chain = chainOf(r, true);
      return [
        {
          path: 'one-off charge, one at a time',
          ours: `p50 ${fmt(num(r, 'sequential.p50'), ' ms')}`,
          yardstick: `one workflow + one activity: p50 ${fmt(num(r, 'bareSequential.p50'), ' ms')}`,
          against: times(num(r, 'sequential.p50'), num(r, 'bareSequential.p50')),
          floor: `the charge's chain, no business code: ${times(num(chain, 'oneLane.p50'), num(r, 'bareSequential.p50'))}`,
          goal: '≤ 1.3x',
        },
        {
          path: 'one-off charges, 20 connections',
          ours: `${fmt(num(r, 'distinct.chargesPerSec'), ' charges/s')}, p50 ${fmt(num(r, 'distinct.latencyMs.p50'), ' ms')}`,
          yardstick: `20 lanes of it: p50 ${fmt(num(r, 'bare.p50'), ' ms')}`,
          against: fmt(num(r, 'p50OverYardstickP50'), 'x', 2),
          floor: `the chain at 20 lanes: ${times(num(chain, 'lanes.p50'), num(r, 'bare.p50'))}`,
          goal: '≤ 2x',
        },
      ];
    },
  },
  {
    file: 'webhooks',
    command: 'npm run bench:webhooks',
    paths: [['webhook deliveries', '≥ 0.70']],
    rows: (r) => [
      {
        path: 'webhook deliveries, a burst',
        ours: fmt(num(r, 'burst.deliveriesPerSec'), ' deliveries/s'),
        yardstick: `bare one-activity workflows: ${fmt(num(r, 'pingWorkflowsPerSec'), '/s')}`,
        against: fmt(num(r, 'ratioToPingThisRun'), '', 2),
        floor: `${fmt(num(r, 'floor.ratioToPing'), '', 2)} (the spec's work per delivery only)`,
        goal: '≥ 0.70',
      },
    ],
  },
  {
    file: 'test-clocks',
    command: 'npm run bench:test-clocks',
    paths: [['a test clock through three months', 'seconds']],
    rows: (r) => {
      const rows = at(r, 'rows');
      return (Array.isArray(rows) ? rows : []).map((row) => ({
        path: `test clock, three months, ${fmt(num(row, 'subscriptions'), '', 0)} subscriptions`,
        ours: `${fmt(num(row, 'advance1Ms'), ' ms', 0)} + ${fmt(num(row, 'advance2Ms'), ' ms', 0)}`,
        yardstick: NONE,
        against: NONE,
        floor: NONE,
        goal: 'seconds',
      }));
    },
  },
  {
    file: 'growth',
    command: 'npm run bench:growth',
    paths: [['list page and retrieve as a store grows', 'flat as the store grows']],
    rows: (r) => {
      const results = at(r, 'results');
      return (Array.isArray(results) ? results : []).map((row) => ({
        path: `a store of ${fmt(num(row, 'size'), '', 0)} customers, one request at a time`,
        ours: `list p50 ${fmt(num(row, 'figures.listFirst.p50'), ' ms')}, retrieve p50 ${fmt(num(row, 'figures.retrieve.p50'), ' ms')}`,
        yardstick: NONE,
        against: NONE,
        floor: NONE,
        goal: 'flat as the store grows',
      }));
    },
  },
  {
    file: 'key-lookup',
    command: 'npm run bench:keys',
    paths: [['a lookup by a unique key as a collection grows', 'flat as the collection grows']],
    rows: (r) => {
      const rows = at(r, 'rows');
      return (Array.isArray(rows) ? rows : []).map((row) => ({
        path: `findChargeByKey, ${fmt(num(row, 'size'), '', 0)} charges, ${String(at(row, 'engine') ?? '?')}`,
        ours: `p50 ${fmt(num(row, 'lookup.p50'), ' ms')}, p99 ${fmt(num(row, 'lookup.p99'), ' ms')}`,
        yardstick: NONE,
        against: NONE,
        floor: NONE,
        goal: 'flat as the collection grows',
      }));
    },
  },
  {
    file: 'baseline',
    command: 'npm run bench:baseline',
    paths: [['the bare stack (the other benches measure their yardsticks in their own runs)', 'measured only']],
    rows: (r) => [
      {
        path: 'bare stack: findOne route, insertMany',
        ours: `${fmt(num(r, 'findOne.requestsPerSec'), ' req/s')}; ${fmt(num(r, 'insertMany.docsPerSec'), ' docs/s', 0)}`,
        yardstick: NONE,
        against: NONE,
        floor: NONE,
        goal: 'measured only',
      },
    ],
  },
  {
    file: 'engine',
    command: 'npm run bench:engine',
    paths: [['the local engine: updates kept, reads and writes per second', 'every update kept']],
    rows: (r) => {
      const figures = at(r, 'figures');
      return (Array.isArray(figures) ? figures : []).map((f) => ({
        path: `engine: ${String(at(f, 'workload') ?? '?')}`,
        ours:
          `${fmt(num(f, 'opsPerSec'), ' ops/s')}, p99 ${fmt(num(f, 'latencyMs.p99'), ' ms')}` +
          (num(f, 'kept') === undefined ? '' : `, kept ${fmt(num(f, 'kept'), '', 0)} of ${fmt(num(f, 'ops'), '', 0)}`),
        yardstick: NONE,
        against: NONE,
        floor: NONE,
        goal: 'every update kept',
      }));
    },
  },
];

const escapeCell = (text: string) => text.replace(/\|/g, '\\|');

function table(header: string[], rows: string[][]): string[] {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((row) => `| ${row.map(escapeCell).join(' | ')} |`)];
}

/** Where and when a results file's figures were taken. */
function provenance(r: Json): string[] {
  const cpus = num(r, 'machine.cpus');
  const machine =
    cpus === undefined
      ? NONE
      : `${cpus} × ${String(at(r, 'machine.cpuModel') ?? '?')}, ${fmt(num(r, 'machine.memoryGiB'), ' GiB')}, ${String(at(r, 'machine.node') ?? '?')}`;
  const load = `${fmt(num(r, 'machine.loadAverage1m'), '', 2)} → ${fmt(num(r, 'loadAverage1mAfter'), '', 2)}`;
  return [String(at(r, 'takenAt') ?? NONE), machine, load];
}

/** The page, from the results found (file name without `.json` → its parsed JSON). */
export function speedPage(results: ReadonlyMap<string, Json>): string {
  const measured = BENCHES.filter((b) => results.has(b.file));
  const missing = BENCHES.filter((b) => !results.has(b.file));
  const rows = BENCHES.flatMap((b) => {
    const r = results.get(b.file);
    if (!r) return b.paths.map(([path, goal]) => [path, `not measured on this checkout (\`${b.command}\`)`, NONE, NONE, NONE, goal]);
    return b.rows(r).map((row) => [row.path, row.ours, row.yardstick, row.against, row.floor, row.goal]);
  });
  const known = new Set(BENCHES.map((b) => b.file));
  const others = [...results.keys()].filter((name) => !known.has(name)).sort();
  const lines = [
    '# Speed',
    '',
    'Generated by `npm run docs:speed` from `test/bench/results/*.json`; do not edit. Back to the [README](../README.md).',
    '',
    'Each path against its yardstick (the bare stack doing the same reads or starts, measured in the same run) and,',
    "where the bench measures one, its floor (the yardstick plus only the spec's work). How to run each bench and",
    "what it measures: [benchmarks](benchmarks.md). The goals are issue 30's.",
    '',
    measured.length === 0
      ? 'No bench has been run on this checkout (the results folder is gitignored): every row is "not measured". The last figures recorded by hand are in [the history](history/benchmarks.md).'
      : `Measured on this checkout: ${measured.map((b) => `\`${b.file}\``).join(', ')}.` +
        (missing.length
          ? ` Not measured: ${missing.map((b) => `\`${b.file}\``).join(', ')} (\`npm run bench:…\`, then \`npm run docs:speed\`).`
          : ''),
    '',
    ...table(['path', 'ours', 'yardstick', 'against it', 'floor', 'goal'], rows),
    '',
    '## Where the figures came from',
    '',
    'Figures compare only on the same machine at a similar load (1-minute load average at the start → the end).',
    '',
    ...(measured.length === 0
      ? ['No results file on this checkout.']
      : table(
          ['bench', 'command', 'taken at (UTC)', 'machine', 'load'],
          measured.map((b) => [`\`${b.file}.json\``, `\`${b.command}\``, ...provenance(results.get(b.file)!)]),
        )),
    ...(others.length ? ['', `Other results files, not in the table: ${others.map((name) => `\`${name}.json\``).join(', ')}.`] : []),
    '',
  ];
  return lines.join('\n');
}

/** The results files found in `dir` (a missing or unreadable file is skipped with a warning). */
export function readResults(dir: string): Map<string, Json> {
  const results = new Map<string, Json>();
  if (!existsSync(dir)) return results;
  for (const name of readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    try {
      results.set(name.slice(0, -'.json'.length), JSON.parse(readFileSync(join(dir, name), 'utf8')) as Json);
    } catch (error) {
      console.warn(`skipped ${name}: ${(error as Error).message}`);
    }
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const target = resolve(here, '../../docs/speed.md');
  const results = readResults(resultsDir);
  writeFileSync(target, speedPage(results));
  console.log(`wrote docs/speed.md from ${results.size} results file(s)`);
}
