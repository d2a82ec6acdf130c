// A FerretDB relay of its own for the differential tests of the relay's fast paths (list-index, key-index):
// the test starts two, one with a fast path on and one with it off, and compares their answers byte for byte.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MongoClient } from 'mongodb';
import { spawnGroup, type ChildGroup } from '../../temporal-dev/processes';
import { freePort } from '../../temporal-dev/servers';
import { ferretDbPath } from '../../temporal-dev/tools';
import { waitFor } from '../../temporal-dev/wait';

export interface RelayEngine {
  client: MongoClient;
  group: ChildGroup;
  dir: string;
  logFile: string;
}

/** Starts a relay named `name` with `env` added (the FERRETDB_RELAY_* switches), logging at debug level. */
export async function startRelayEngine(name: string, env: Record<string, string>): Promise<RelayEngine> {
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  const logFile = join(dir, 'ferretdb.log');
  const port = await freePort();
  const args = ['--listen-addr', `127.0.0.1:${port}`, '--sqlite-url', `${pathToFileURL(dir).href}/`, '--log-level', 'debug'];
  const group = spawnGroup(name, ferretDbPath(), args, { env: { ...process.env, ...env }, logFile });
  const client = new MongoClient(`mongodb://127.0.0.1:${port}/`, { serverSelectionTimeoutMS: 2_000 });
  await waitFor(() => client.db('admin').command({ ping: 1 }), {
    timeoutMs: 60_000,
    description: 'the test FerretDB to answer ping',
    abortIf: () => (group.hasExited() ? new Error(`FerretDB exited: ${readFileSync(logFile, 'utf8').slice(-2000)}`) : undefined),
  });
  return { client, group, dir, logFile };
}

/** How many times the engine's log holds `line` (the relay's "answered" and "passed through" lines). */
export const countIn = (engine: RelayEngine, line: string): number => readFileSync(engine.logFile, 'utf8').split(line).length - 1;

/** Stops the engines a test started (skipping one that never started) and removes their data. */
export async function stopRelayEngines(engines: Array<RelayEngine | undefined>): Promise<void> {
  for (const engine of engines) {
    if (!engine) continue;
    await engine.client.close();
    await engine.group.stop();
    rmSync(engine.dir, { recursive: true, force: true });
  }
}
