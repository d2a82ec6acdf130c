// Every side effect the workflows may perform, built from injected dependencies
// (database, payment provider, HTTP, clock) so tests pass real servers and only fake what is outside.
import type { Db } from 'mongodb';

export interface ActivityDeps {
  db: Db;
}

export function createActivities(deps: ActivityDeps) {
  const { db } = deps;
  return {
    /** Liveness probe used by the worker smoke test and the baseline benchmark. */
    async ping(): Promise<string> {
      await db.command({ ping: 1 });
      return 'pong';
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
