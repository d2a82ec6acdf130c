// The database handle: opened once by the API server, the worker and the admin CLI, and passed to every
// room as `Database`, which only store/ reads or writes (DESIGN.md, rooms).
import { MongoClient, type Db } from 'mongodb';
import { logSlowCommands } from './slow-commands';

/** The application's database; outside store/ it is only held and handed on, never queried. */
export type Database = Db;

export interface DatabaseConnection {
  db: Database;
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** How long a database that cannot be reached is waited for, per operation (the driver's default is 30 s). */
  serverSelectionTimeoutMS?: number;
  /** MONGODB_SLOW_MS: log commands that take at least this long (store/slow-commands.ts); off when undefined. */
  slowCommandMs?: number;
}

/** Connects to `uri` and opens the database `name` on it. */
export async function connectDatabase(uri: string, name: string, options: ConnectOptions = {}): Promise<DatabaseConnection> {
  const { slowCommandMs, ...driverOptions } = options;
  const client = new MongoClient(uri, { ...driverOptions, monitorCommands: slowCommandMs !== undefined });
  if (slowCommandMs !== undefined) logSlowCommands(client, { slowMs: slowCommandMs });
  await client.connect();
  return { db: client.db(name), close: () => client.close() };
}
