// Every side effect the workflows may perform, built from injected dependencies
// (database, payment provider, Temporal client, clock) so tests pass real servers and only fake
// what is truly outside. Each area adds its activities with one spread line below.
import type { Db } from 'mongodb';
import type { Client } from '@temporalio/client';
import type { PaymentProvider } from './provider/types';

export interface ActivityDeps {
  db: Db;
  provider: PaymentProvider;
  /** For activities that start or message other workflows (event fan-out, charges); null where none run. */
  temporal: Client | null;
  /** Task queue the workflows that activities start run on. */
  taskQueue: string;
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
