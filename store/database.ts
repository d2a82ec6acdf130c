// The database handle: opened once by the API server, the worker and the admin CLI, and passed to every
// room as `Database`, which only store/ reads or writes (DESIGN.md, rooms).
import { MongoClient, type Db } from 'mongodb';

/** The application's database; outside store/ it is only held and handed on, never queried. */
export type Database = Db;

export interface DatabaseConnection {
  db: Database;
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** How long a database that cannot be reached is waited for, per operation (the driver's default is 30 s). */
  serverSelectionTimeoutMS?: number;
}

/** Connects to `uri` and opens the database `name` on it. */
export async function connectDatabase(uri: string, name: string, options: ConnectOptions = {}): Promise<DatabaseConnection> {
  const client = new MongoClient(uri, options);
  await client.connect();
  return { db: client.db(name), close: () => client.close() };
}
