// One file's subscription stack: the shared FerretDB and Temporal dev server, an API and a billing
// worker on the file's own task queue, a store with the subscription catalog; closed in reverse order.
import type { Worker } from '@temporalio/worker';
import { createTestWorker } from './worker';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from './env';
import { createTestStore, startTestApi, type TestApi, type TestStore } from './api';
import { seedCatalog, type TestCatalog } from './subscriptions';

export interface SubscriptionStack {
  mongo: TestMongo;
  temporal: TestTemporal;
  api: TestApi;
  store: TestStore;
  catalog: TestCatalog;
  taskQueue: string;
  close(): Promise<void>;
}

export async function startSubscriptionStack(name: string): Promise<SubscriptionStack> {
  const taskQueue = uniqueTaskQueue(name);
  const mongo = await testMongo();
  const temporal = await testTemporal();
  const api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  const store = await createTestStore(mongo.db);
  const catalog = await seedCatalog(mongo.db, store.store._id);
  const worker: Worker = await createTestWorker(mongo, temporal, taskQueue);
  const running = worker.run();
  return {
    mongo,
    temporal,
    api,
    store,
    catalog,
    taskQueue,
    async close() {
      worker.shutdown();
      await running.catch(() => undefined);
      await api.close();
      await temporal.close();
      await mongo.close();
    },
  };
}
