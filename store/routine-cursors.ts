// Where a routine's walk over a collection stopped: one document per walk, holding the last id it
// passed, so the next run starts after it.
import type { Database } from './database';

interface RoutineCursorDoc {
  _id: string;
  last: string;
}

// Named for its first (and only) routine; the usage routine's walk over subscriptions keeps its cursor there.
const cursorsOf = (db: Database) => db.collection<RoutineCursorDoc>('usage_routine');

/** The last id the walk `name` passed; null before its first run. */
export async function findRoutineCursor(db: Database, name: string): Promise<string | null> {
  return (await cursorsOf(db).findOne({ _id: name }))?.last ?? null;
}

export async function saveRoutineCursor(db: Database, name: string, last: string): Promise<void> {
  await cursorsOf(db).updateOne({ _id: name }, { $set: { last } }, { upsert: true });
}
