// What this tests: the workflow bundle cache (worker/workflow-bundle.ts) on fixture workflows in a temp
// directory. A bundle is served from the cache only while every file webpack read or looked for is
// unchanged (an edit to an imported file, a new file that wins a lookup, a torn entry: rebuilt); another
// workflows path gets a bundle of its own; a file written during the build leaves nothing cached; two
// processes building at once both get the bundle and leave one whole entry (an entry is only ever replaced
// whole); the cache keeps 8 entries; a check hashes at most 32 inputs at once.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import {
  cachedWorkflowBundle,
  INPUTS_READ_AT_ONCE,
  mapAtMost,
  MAX_CACHED_BUNDLES,
  pruneBundleCache,
  writeFileAtomically,
} from '../../../worker/workflow-bundle';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const run = promisify(execFile);
/** Each case runs webpack two to four times: seconds each on a quiet machine, far more under load. */
const BUILDS_TIMEOUT_MS = 240_000;

const fixtures: string[] = [];
afterEach(() => {
  for (const dir of fixtures.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Fixture {
  dir: string;
  workflows: string;
  cacheDir: string;
  /** Writes a fixture file dated a minute ago (as if edited before the worker started). */
  write(path: string, text: string, options?: { backdate: boolean }): void;
  bundle(workflowsPath?: string): ReturnType<typeof cachedWorkflowBundle>;
  logs: string[];
}

/** wf/index.ts exports a workflow returning wf/greeting.ts's word; node_modules is the project's. */
function makeFixture(greeting: string, options = { backdate: true }): Fixture {
  const dir = mkdtempSync(join(tmpdir(), 'workflow-bundle-'));
  fixtures.push(dir);
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  mkdirSync(join(dir, 'wf'));
  const logs: string[] = [];
  const write = (path: string, text: string, { backdate } = { backdate: true }) => {
    writeFileSync(join(dir, path), text);
    const minuteAgo = new Date(Date.now() - 60_000);
    if (backdate) utimesSync(join(dir, path), minuteAgo, minuteAgo);
  };
  write('wf/greeting.ts', `export const greeting = '${greeting}';\n`, options);
  write('wf/index.ts', "import { greeting } from './greeting';\nexport async function greet(): Promise<string> {\n  return greeting;\n}\n", options);
  const workflows = join(dir, 'wf');
  const cacheDir = join(dir, 'cache');
  const bundle = (workflowsPath = workflows) => cachedWorkflowBundle({ workflowsPath }, { cacheDir, log: (line) => logs.push(line) });
  return { dir, workflows, cacheDir, write, bundle, logs };
}

const cacheFiles = (cacheDir: string) => readdirSync(cacheDir).sort();

describe('serving a cached bundle', () => {
  it(
    'unchanged inputs are served from the cache; an edit to a file the workflows import rebuilds with the new code',
    async () => {
      const fixture = makeFixture('greeting-one');
      const first = await fixture.bundle();
      expect(first.source).toBe('built');
      expect(first.bundle.code).toContain('greeting-one');

      const again = await fixture.bundle();
      expect(again.source).toBe('cache');
      expect(again.bundle.code).toBe(first.bundle.code);

      fixture.write('wf/greeting.ts', "export const greeting = 'greeting-two';\n");
      const edited = await fixture.bundle();
      expect(edited).toMatchObject({ source: 'built', reason: `${join(fixture.workflows, 'greeting.ts')} changed` });
      expect(edited.bundle.code).toContain('greeting-two');
      expect(edited.bundle.code).not.toContain('greeting-one');
      expect((await fixture.bundle()).source).toBe('cache');
    },
    BUILDS_TIMEOUT_MS,
  );

  it(
    'a new file that now wins a lookup webpack made (wf.ts beside wf/) rebuilds',
    async () => {
      const fixture = makeFixture('greeting-one');
      expect((await fixture.bundle()).source).toBe('built');
      fixture.write('wf.ts', "export async function greet(): Promise<string> {\n  return 'shadowing-file';\n}\n");
      const shadowed = await fixture.bundle();
      expect(shadowed).toMatchObject({ source: 'built', reason: `${join(fixture.dir, 'wf.ts')} changed` });
      expect(shadowed.bundle.code).toContain('shadowing-file');
      expect(shadowed.bundle.code).not.toContain('greeting-one');
    },
    BUILDS_TIMEOUT_MS,
  );

  it(
    'another workflows path (a build B) gets a bundle of its own, and the first stays cached',
    async () => {
      const fixture = makeFixture('greeting-one');
      fixture.write('build-b.ts', "export async function greet(): Promise<string> {\n  return 'build-b';\n}\n");
      expect((await fixture.bundle()).source).toBe('built');
      const buildB = await fixture.bundle(join(fixture.dir, 'build-b.ts'));
      expect(buildB.source).toBe('built');
      expect(buildB.bundle.code).toContain("'build-b'");
      expect(buildB.bundle.code).not.toContain('greeting-one');
      const buildA = await fixture.bundle();
      expect(buildA.source).toBe('cache');
      expect(buildA.bundle.code).toContain('greeting-one');
      expect(cacheFiles(fixture.cacheDir).filter((name) => name.endsWith('.json'))).toHaveLength(2);
    },
    BUILDS_TIMEOUT_MS,
  );

  it(
    'a torn entry is rebuilt, neither served nor thrown',
    async () => {
      const fixture = makeFixture('greeting-one');
      await fixture.bundle();
      const [entry] = cacheFiles(fixture.cacheDir);
      const whole = readFileSync(join(fixture.cacheDir, entry), 'utf8');
      writeFileSync(join(fixture.cacheDir, entry), whole.slice(0, whole.length / 2));
      const rebuilt = await fixture.bundle();
      expect(rebuilt).toMatchObject({ source: 'built', reason: 'no cached bundle' });
      expect(rebuilt.bundle.code).toContain('greeting-one');
      expect((await fixture.bundle()).source).toBe('cache');
    },
    BUILDS_TIMEOUT_MS,
  );

  it(
    'a file written during the build (here: just before it) leaves nothing cached, so the next start builds again',
    async () => {
      const fixture = makeFixture('greeting-one', { backdate: false });
      expect((await fixture.bundle()).source).toBe('built');
      expect(fixture.logs[0]).toMatch(/not cached: .*changed during the build/);
      expect(await fixture.bundle()).toMatchObject({ source: 'built', reason: 'no cached bundle' });
    },
    BUILDS_TIMEOUT_MS,
  );
});

describe('several processes, one cache', () => {
  it(
    'two processes building at once into an empty cache both get the bundle and leave one whole entry, no temp file',
    async () => {
      const fixture = makeFixture('greeting-one');
      const child = () =>
        run(process.execPath, ['--import', 'tsx', 'test/support/workflow-bundle-child.ts', fixture.workflows, fixture.cacheDir, 'greeting-one'], {
          cwd: root,
          timeout: BUILDS_TIMEOUT_MS / 2,
        });
      const outcomes = (await Promise.all([child(), child()])).map(({ stdout }) => JSON.parse(stdout.trim().split('\n').at(-1)!));
      for (const outcome of outcomes) {
        expect(outcome.hasMarker).toBe(true);
        // Each either found the other's entry or built and stored its own (a failed write says 'not cached').
        if (outcome.source === 'built') expect(outcome.log).toMatch(/; cached, \d+ inputs\)$/);
      }
      expect(cacheFiles(fixture.cacheDir)).toEqual([expect.stringMatching(/^[0-9a-f]{32}\.json$/)]);
      const after = await fixture.bundle();
      expect(after.source).toBe('cache');
      expect(after.bundle.code).toContain('greeting-one');
    },
    BUILDS_TIMEOUT_MS,
  );

  it('an entry is replaced whole: 8 writers at once, each writing 2 MB five times into one path, and a reader meanwhile never sees part of one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'workflow-bundle-write-'));
    fixtures.push(dir);
    const path = join(dir, 'entry.json');
    const texts = Array.from({ length: 8 }, (_, writer) => JSON.stringify({ writer, code: String(writer).repeat(2_000_000) }));
    writeFileSync(path, texts[0]);
    let writing = true;
    // Bounded by the writers: it stops once they have all finished (JSON.parse throws on a torn text).
    const reader = (async () => {
      let reads = 0;
      for (; writing; reads++) JSON.parse(await readFile(path, 'utf8'));
      return reads;
    })();
    const writeFiveTimes = async (text: string) => {
      for (let round = 0; round < 5; round++) await writeFileAtomically(path, text);
    };
    await Promise.all(texts.map(writeFiveTimes)).finally(() => (writing = false));
    expect(await reader).toBeGreaterThan(0);
    expect(texts).toContain(readFileSync(path, 'utf8'));
    expect(cacheFiles(dir)).toEqual(['entry.json']);
  });

  it('the cache keeps its 8 most recently used entries and removes temp files a dead writer left', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'workflow-bundle-prune-'));
    fixtures.push(cacheDir);
    const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000);
    const entries = Array.from({ length: 12 }, (_, i) => `${String(i).padStart(32, '0')}.json`);
    entries.forEach((name, i) => {
      writeFileSync(join(cacheDir, name), '{}');
      utimesSync(join(cacheDir, name), at(i), at(i)); // entry 0 used last
    });
    writeFileSync(join(cacheDir, 'abandoned.json.1.aa.tmp'), '{');
    utimesSync(join(cacheDir, 'abandoned.json.1.aa.tmp'), at(60), at(60));
    writeFileSync(join(cacheDir, 'writing.json.2.bb.tmp'), '{');

    await pruneBundleCache(cacheDir);

    expect(MAX_CACHED_BUNDLES).toBe(8);
    expect(cacheFiles(cacheDir)).toEqual([...entries.slice(0, 8), 'writing.json.2.bb.tmp'].sort());
  });
});

describe('checking the inputs of a bundle', () => {
  it('hashes at most 32 inputs at once and keeps their order', async () => {
    const paths = Array.from({ length: 500 }, (_, i) => i);
    let inFlight = 0;
    let most = 0;
    const results = await mapAtMost(INPUTS_READ_AT_ONCE, paths, async (i) => {
      most = Math.max(most, ++inFlight);
      await new Promise<void>((resolve) => setImmediate(resolve));
      inFlight--;
      return i * 2;
    });
    expect(INPUTS_READ_AT_ONCE).toBe(32);
    expect(most).toBe(32);
    expect(results).toEqual(paths.map((i) => i * 2));
  });
});
