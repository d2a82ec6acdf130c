// Helpers every suite uses to reach the servers the global setup started, with per-test isolation:
// a database per test file, a task queue per test, and deadline-bound waiting.
import { randomUUID } from 'node:crypto';
import { basename } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, makeTelemetryFilterString, type LogLevel } from '@temporalio/worker';
import { MongoClient, type Db } from 'mongodb';
import { expect, inject } from 'vitest';

import { waitFor as waitForCondition, type WaitForOptions } from '../../temporal-dev/wait';

export type { WaitForOptions };

/**
 * Tests wait 30 s by default, not the 10 s of startups: what they wait for is mostly a workflow or activity
 * effect, which a loaded 2-core CI delays by tens of seconds; a wait that succeeds returns at once, and
 * 30 s stays under the 60 s test timeout, so a failure still names what it waited for.
 */
export const TEST_WAIT_MS = 30_000;

export function waitFor<T>(fn: () => T | Promise<T>, options: WaitForOptions = {}): Promise<Exclude<T, false | null | undefined>> {
  return waitForCondition(fn, { timeoutMs: TEST_WAIT_MS, ...options });
}

export const testNamespace = process.env.TEMPORAL_NAMESPACE ?? 'default';

// Worker state changes logged at INFO drown the test output; LOG_LEVEL=INFO or DEBUG brings them back.
function installQuietRuntime(): void {
  const level = (process.env.LOG_LEVEL?.toUpperCase() ?? 'WARN') as LogLevel;
  try {
    Runtime.install({
      logger: new DefaultLogger(level),
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: level }), forward: {} } },
    });
  } catch {
    // Already installed in this process (another module got there first): keep that one.
  }
}
installQuietRuntime();

function shortId(): string {
  return randomUUID().replaceAll('-', '').slice(0, 10);
}

/** A database name unique to the calling test file (and call), safe for MongoDB and FerretDB. */
export function uniqueDbName(prefix?: string): string {
  const file = expect.getState().testPath;
  const stem = prefix ?? (file ? basename(file).replace(/\.test\.ts$/, '') : 'test');
  return `t_${stem.replace(/[^A-Za-z0-9]/g, '_').slice(0, 30)}_${shortId()}`;
}

export interface TestMongo {
  client: MongoClient;
  db: Db;
  /** Drops the test database (so external servers stay clean) and closes the client. */
  close(): Promise<void>;
}

export async function testMongo(dbName: string = uniqueDbName()): Promise<TestMongo> {
  const client = await MongoClient.connect(inject('mongoUri'));
  const db = client.db(dbName);
  return {
    client,
    db,
    close: async () => {
      await db.dropDatabase().catch(() => undefined);
      await client.close();
    },
  };
}

export interface TestTemporal {
  address: string;
  namespace: string;
  connection: Connection;
  client: Client;
  /** The connection kind a Worker needs. */
  nativeConnection: NativeConnection;
  close(): Promise<void>;
}

export async function testTemporal(): Promise<TestTemporal> {
  const address = inject('temporalAddress');
  const connection = await Connection.connect({ address });
  const nativeConnection = await NativeConnection.connect({ address });
  return {
    address,
    namespace: testNamespace,
    connection,
    client: new Client({ connection, namespace: testNamespace }),
    nativeConnection,
    close: async () => {
      await nativeConnection.close();
      await connection.close();
    },
  };
}

/** A task queue no other test (or earlier run against a shared server) polls. */
export function uniqueTaskQueue(name: string): string {
  return `${name}-${shortId()}`;
}

/**
 * A client of the shared dev server that connects only when first used: for suites that run no
 * workflow but whose API or services need a real client (what they start, on an unpolled queue, never runs).
 */
export function lazyTestClient(): { client: Client; close(): Promise<void> } {
  const connection = Connection.lazy({ address: inject('temporalAddress') });
  return { client: new Client({ connection, namespace: testNamespace }), close: () => connection.close() };
}
