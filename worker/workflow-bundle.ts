// The workflow bundle, built once per distinct input and reused across processes: webpack (seconds, and
// far more on a loaded machine) runs only when no cached bundle's recorded inputs still hold. An entry
// records every path webpack read or looked for (the workflows, what they import, the SDK's own files)
// with its content hash, directory or absence, keyed by the workflows path, the interceptor modules and
// the bundler's version; any difference rebuilds. Entries are written to a temp file and renamed, so
// processes building at once never read half an entry; the cache keeps the newest MAX_CACHED_BUNDLES.
import { createHash, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { mkdir, readFile, readdir, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger, type BundleOptions, type WorkflowBundle } from '@temporalio/worker';

export const workflowsPath = fileURLToPath(new URL('../workflows', import.meta.url));
/** The same workflows with their Worker Versioning behaviours: what a versioned worker loads. */
export const versionedWorkflowsPath = fileURLToPath(new URL('../workflows/versioned.ts', import.meta.url));

/** Beside the project's other tool caches; per checkout, so a moved checkout starts empty. */
export const defaultBundleCacheDir = fileURLToPath(new URL('../node_modules/.cache/billing-workflow-bundles', import.meta.url));

/** Distinct inputs seen in practice: workflows/, versioned, with tracing, the versioning test's build B. */
export const MAX_CACHED_BUNDLES = 8;

/** Changed this close to the build's start, a file may have been read before or after the change. */
const CHANGE_SLACK_MS = 1_000;
/** A temp file this old was left by a process that died mid-write. */
const ABANDONED_TEMP_MS = 10 * 60_000;
const ENTRY_FORMAT = 1;
/** Inputs hashed at once (a bundle has hundreds): bounds the open files a check holds. */
export const INPUTS_READ_AT_ONCE = 32;

export interface BundleInputs {
  workflowsPath: string;
  workflowInterceptorModules?: string[];
}

export interface BundleCacheOptions {
  /** Where entries live; a test passes its own. */
  cacheDir?: string;
  /** One line per build (a hit prints nothing). */
  log?: (line: string) => void;
}

export interface ResolvedBundle {
  bundle: WorkflowBundle;
  /** 'cache' when webpack did not run. */
  source: 'cache' | 'built';
  /** Why it was built: no entry, or the first input that differs. */
  reason?: string;
}

/** A path's state as webpack saw it: a file's content hash, a directory, or absent. */
type InputState = string;
interface CacheEntry {
  format: number;
  key: string;
  inputs: Array<[path: string, state: InputState]>;
  code: string;
}

/** The bundle for `inputs`: the cached one when every recorded input is unchanged, else a fresh build (then cached). */
export async function cachedWorkflowBundle(inputs: BundleInputs, options: BundleCacheOptions = {}): Promise<ResolvedBundle> {
  const cacheDir = options.cacheDir ?? defaultBundleCacheDir;
  const key = await bundleKey(inputs);
  const entryPath = join(cacheDir, `${key}.json`);
  const entry = await readEntry(entryPath, key);
  const changed = entry ? await firstChangedInput(entry.inputs) : 'no cached bundle';
  if (entry && changed === undefined) {
    await utimes(entryPath, new Date(), new Date()).catch(() => undefined); // the newest survive pruning
    return { bundle: { code: entry.code }, source: 'cache' };
  }
  const reason = changed ?? 'no cached bundle';
  const started = Date.now();
  const { code, inputPaths } = await bundleRecordingInputs(inputs);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const cached = await storeEntry(cacheDir, entryPath, key, code, inputPaths, started);
  (options.log ?? console.log)(`workflow bundle: built ${shownInputs(inputs)} in ${seconds} s (${reason}; ${cached})`);
  return { bundle: { code }, source: 'built', reason };
}

/**
 * What decides the bundle besides the files webpack reads: the entry point, the interceptors, the bundler,
 * and the installed packages (webpack records no missed lookups inside node_modules, so an install counts).
 */
async function bundleKey({ workflowsPath: path, workflowInterceptorModules = [] }: BundleInputs): Promise<string> {
  const packages = (await inputState(installedPackagesRecord)).state;
  const facts = { format: ENTRY_FORMAT, workflowsPath: resolve(path), workflowInterceptorModules, bundler: bundlerVersions(), packages };
  return createHash('sha256').update(JSON.stringify(facts)).digest('hex').slice(0, 32);
}

/** npm rewrites it on every install, update or removal. */
const installedPackagesRecord = fileURLToPath(new URL('../node_modules/.package-lock.json', import.meta.url));

function bundlerVersions(): Record<string, string> {
  const require = createRequire(import.meta.url);
  const versionOf = (name: string) => (require(`${name}/package.json`) as { version: string }).version;
  return { '@temporalio/worker': versionOf('@temporalio/worker'), webpack: versionOf('webpack') };
}

/** The entry at `path`, or undefined when absent, unreadable, torn or of another format. */
async function readEntry(path: string, key: string): Promise<CacheEntry | undefined> {
  try {
    const entry = JSON.parse(await readFile(path, 'utf8')) as CacheEntry;
    return entry.format === ENTRY_FORMAT && entry.key === key && Array.isArray(entry.inputs) && typeof entry.code === 'string' ? entry : undefined;
  } catch {
    return undefined;
  }
}

/** The first recorded input whose state differs now ('<path> changed'), or undefined when all hold. */
async function firstChangedInput(inputs: CacheEntry['inputs']): Promise<string | undefined> {
  const now = await mapAtMost(INPUTS_READ_AT_ONCE, inputs, ([path]) => inputState(path));
  const index = inputs.findIndex(([, recorded], i) => now[i].state !== recorded);
  return index === -1 ? undefined : `${shownPath(inputs[index][0])} changed`;
}

async function inputState(path: string): Promise<{ state: InputState; mtimeMs: number }> {
  try {
    const info = await stat(path);
    if (info.isDirectory()) return { state: 'dir', mtimeMs: 0 };
    return {
      state: createHash('sha256')
        .update(await readFile(path))
        .digest('hex'),
      mtimeMs: info.mtimeMs,
    };
  } catch {
    return { state: 'absent', mtimeMs: 0 };
  }
}

/** `fn` over `items`, in order, with at most `limit` calls in flight. */
export async function mapAtMost<T, R>(limit: number, items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await fn(items[i]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

/** webpack's run, with every path it read (files, directories) or looked for and missed. */
async function bundleRecordingInputs(inputs: BundleInputs): Promise<{ code: string; inputPaths: string[] }> {
  const seen = new Set<string>();
  const { code } = await bundleWorkflowCode({
    workflowsPath: inputs.workflowsPath,
    workflowInterceptorModules: inputs.workflowInterceptorModules,
    logger: bundleLogger,
    webpackConfigHook: (config) => ({ ...config, plugins: [...(config.plugins ?? []), recordInputs(seen)] }),
  });
  return { code, inputPaths: [...seen].sort() };
}

/** Webpack's progress stays quiet; warnings and errors still print. */
const bundleLogger = new DefaultLogger('WARN');

type WebpackConfig = Parameters<NonNullable<BundleOptions['webpackConfigHook']>>[0];
type WebpackPlugin = NonNullable<WebpackConfig['plugins']>[number];

function recordInputs(seen: Set<string>): WebpackPlugin {
  return {
    apply(compiler) {
      compiler.hooks.afterCompile.tap('record-bundle-inputs', (compilation) => {
        for (const paths of [compilation.fileDependencies, compilation.contextDependencies, compilation.missingDependencies])
          for (const path of paths) seen.add(path);
      });
    },
  };
}

/** Writes the entry (temp file, then rename) unless an input changed during the build; says what it did. */
async function storeEntry(cacheDir: string, entryPath: string, key: string, code: string, paths: string[], started: number): Promise<string> {
  const states = await mapAtMost(INPUTS_READ_AT_ONCE, paths, (path) => inputState(path));
  const changedDuring = paths.find((_, i) => states[i].mtimeMs >= started - CHANGE_SLACK_MS);
  if (changedDuring) return `not cached: ${shownPath(changedDuring)} changed during the build`;
  const entry: CacheEntry = { format: ENTRY_FORMAT, key, inputs: paths.map((path, i) => [path, states[i].state]), code };
  try {
    await mkdir(cacheDir, { recursive: true });
    await writeFileAtomically(entryPath, JSON.stringify(entry));
    await pruneBundleCache(cacheDir);
    return `cached, ${paths.length} inputs`;
  } catch (error) {
    return `not cached: ${String(error)}`;
  }
}

/** Replaces `path` whole: a reader sees the old text or the new, never part of one; writers never share a temp file. */
export async function writeFileAtomically(path: string, text: string): Promise<void> {
  const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temp, text);
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

/** Keeps the `keep` most recently used entries and removes temp files abandoned by dead writers. */
export async function pruneBundleCache(cacheDir: string, keep = MAX_CACHED_BUNDLES): Promise<void> {
  const names = await readdir(cacheDir);
  const listed = await Promise.all(
    names.map(async (name) => ({ name, mtimeMs: (await stat(join(cacheDir, name)).catch(() => undefined))?.mtimeMs })),
  );
  const present = listed.filter((file): file is { name: string; mtimeMs: number } => file.mtimeMs !== undefined);
  const entries = present.filter(({ name }) => name.endsWith('.json')).sort((a, b) => b.mtimeMs - a.mtimeMs);
  const abandoned = present.filter(({ name, mtimeMs }) => name.endsWith('.tmp') && Date.now() - mtimeMs > ABANDONED_TEMP_MS);
  await Promise.all([...entries.slice(keep), ...abandoned].map(({ name }) => unlink(join(cacheDir, name)).catch(() => undefined)));
}

function shownInputs({ workflowsPath: path, workflowInterceptorModules: modules = [] }: BundleInputs): string {
  return modules.length === 0 ? shownPath(path) : `${shownPath(path)} with ${modules.map(shownPath).join(', ')}`;
}

function shownPath(path: string): string {
  const fromProject = relative(fileURLToPath(new URL('..', import.meta.url)), path);
  return fromProject.startsWith('..') ? path : fromProject;
}
