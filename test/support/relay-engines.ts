// A FerretDB relay of its own for the differential tests of the relay's fast paths (list-index, key-index):
// the test starts two, one with a fast path on and one with it off, and compares their answers byte for byte.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BSON, MongoClient, type Collection, type Document, type Filter } from 'mongodb';
import { expect } from 'vitest';
import { findPage, NEWEST_FIRST, OLDEST_FIRST, type ListFilter, type ListOrder, type PageResult } from '../../store/pagination';
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

/** Values kept as their BSON types (Int32 vs Double vs Long), so serializing a read document gives its exact bytes. */
export const exactTypes = { promoteValues: false, promoteLongs: false, promoteBuffers: false } as const;

/** A document's exact BSON bytes, as hex. */
export const bsonHex = (doc: Document): string => Buffer.from(BSON.serialize(doc)).toString('hex');

/**
 * A differential suite's helpers over its two engines (`engines()` returns them once beforeAll has started them: the
 * fast path on, then off): the same writes to both, the same command on both (replies equal byte for byte), and how
 * many commands the fast engine answered itself or passed through, read from its log lines.
 */
export function differential<D extends Document>(
  engines: () => [fast: RelayEngine, slow: RelayEngine],
  dbName: string,
  lines: { answered: string; passed: string },
) {
  const collectionOf = (engine: RelayEngine, name: string): Collection<D> => engine.client.db(dbName).collection<D>(name, exactTypes);

  async function onBoth(name: string, write: (c: Collection<D>) => Promise<unknown>): Promise<void> {
    for (const engine of engines()) await write(collectionOf(engine, name));
  }

  /** The same command on both engines: the whole reply must be the same bytes. Returns the fast engine's first batch. */
  async function commandOnBoth(command: Document): Promise<Document[]> {
    const [mine, theirs] = await Promise.all(engines().map((e) => e.client.db(dbName).command(command, exactTypes)));
    expect(bsonHex(mine!), JSON.stringify(command)).toEqual(bsonHex(theirs!));
    return mine!.cursor.firstBatch as Document[];
  }

  /** Runs the commands on both engines; how many the fast one answered itself, passed through, and the documents found. */
  async function served(commands: Document[]): Promise<{ answered: number; passed: number; found: number }> {
    const [fast] = engines();
    const [answered, passed] = [countIn(fast, lines.answered), countIn(fast, lines.passed)];
    let found = 0;
    for (const command of commands) found += (await commandOnBoth(command)).length;
    return { answered: countIn(fast, lines.answered) - answered, passed: countIn(fast, lines.passed) - passed, found };
  }

  /** Each find command through the driver on both engines: the same documents (or the same error), none answered by the fast one. */
  async function expectPassedThrough(commands: Document[]): Promise<void> {
    const [fast] = engines();
    for (const [i, command] of commands.entries()) {
      const answered = countIn(fast, lines.answered);
      const { find: name, filter, ...options } = command;
      const results = await Promise.allSettled(
        engines().map((e) =>
          collectionOf(e, String(name))
            .find(filter as Filter<D>, options)
            .toArray(),
        ),
      );
      const outcome = (r: PromiseSettledResult<Document[]>) => (r.status === 'rejected' ? `error ${String(r.reason)}` : r.value.map(bsonHex));
      expect(outcome(results[0]!), `shape ${i}`).toEqual(outcome(results[1]!));
      expect(countIn(fast, lines.answered) - answered, `shape ${i} was answered by the relay`).toBe(0);
    }
  }

  return { collectionOf, onBoth, commandOnBoth, served, expectPassedThrough };
}

/** A page's documents as exact bytes (or its cursor_missing), for comparing engines. */
export const pageBytes = (page: PageResult<Document>) => (page === 'cursor_missing' ? page : { docs: page.docs.map(bsonHex), hasMore: page.hasMore });

/** findPage's pages over two engines (list-index, list-conditions): every page must be equal on both. */
export function pagesOnBoth<D extends Document>(
  engines: () => [fast: RelayEngine, slow: RelayEngine],
  collectionOf: (engine: RelayEngine, name: string) => Collection<D>,
) {
  /** The same page from both engines, which must be equal; returns the fast engine's. */
  async function pageOnBoth(
    name: string,
    storeId: string,
    filter: ListFilter,
    order: ListOrder,
    limit: number,
    cursorId?: string,
    backwards = false,
  ) {
    const request = { storeId, filter, order, limit, cursorId, backwards };
    const [fast, slow] = engines();
    const mine = await findPage(collectionOf(fast, name), request);
    const theirs = await findPage(collectionOf(slow, name), request);
    expect(pageBytes(mine), `${name} ${storeId} ${JSON.stringify(filter)} limit ${limit} after ${cursorId} backwards ${backwards}`).toEqual(
      pageBytes(theirs),
    );
    return mine;
  }

  /** Every page of a store under a filter, forwards then back from the end, in both orders; returns the finds made and documents seen. */
  async function walk(name: string, storeId: string, filter: ListFilter, limit: number): Promise<{ finds: number; seen: number }> {
    let finds = 0;
    let seen = 0;
    for (const order of [NEWEST_FIRST, OLDEST_FIRST]) {
      let cursorId: string | undefined;
      let last: string | undefined;
      for (;;) {
        const page = await pageOnBoth(name, storeId, filter, order, limit, cursorId);
        finds++;
        if (page === 'cursor_missing') throw new Error('cursor missing while walking');
        seen += page.docs.length;
        if (page.docs.length > 0) last = String(page.docs[page.docs.length - 1]!._id);
        if (!page.hasMore) break;
        cursorId = last;
      }
      // Back from the last document: ending_before.
      let before = last;
      while (before !== undefined) {
        const page = await pageOnBoth(name, storeId, filter, order, limit, before, true);
        finds++;
        if (page === 'cursor_missing' || !page.hasMore || page.docs.length === 0) break;
        before = String(page.docs[0]!._id);
      }
    }
    return { finds, seen };
  }

  return { pageOnBoth, walk };
}
