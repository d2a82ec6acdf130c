// A billing worker on the shared Temporal dev server (global setup) and a test file's own database:
// the wiring every integration file repeats, so each names only its task queue and what it fakes.
import type { Worker } from '@temporalio/worker';
import { createBillingWorker, type BillingWorkerOptions } from '../../worker/main';
import type { TestMongo, TestTemporal } from './env';

export function createTestWorker(
  mongo: TestMongo,
  temporal: TestTemporal,
  taskQueue: string,
  activityDeps: BillingWorkerOptions['activityDeps'] = {},
): Promise<Worker> {
  return createBillingWorker({
    connection: temporal.nativeConnection,
    namespace: temporal.namespace,
    taskQueue,
    db: mongo.db,
    temporal: temporal.client,
    activityDeps,
    // A test's teardown never waits without end on an activity it left behind: past this, shutdown is forced.
    shutdownForceTime: '20 seconds',
  });
}
