// A billing worker in its own process for fault tests, whose provider dies with the process (SIGKILL,
// no cleanup) right after the provider approved a saved-card charge: the moment between the money
// being taken and the order being written. Configured by environment: MONGODB_URI, MONGODB_DB,
// TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE. Prints "ready" once polling.
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { MongoClient } from 'mongodb';
import { createTestConnection } from '../../adapters/provider/test-connection';
import type { PaymentProvider } from '../../adapters/provider/types';
import { createBillingWorker } from '../../worker/main';

const mongo = await MongoClient.connect(process.env.MONGODB_URI!);
const db = mongo.db(process.env.MONGODB_DB!);
const real = createTestConnection({ db });
const dyingProvider: PaymentProvider = {
  ...real,
  async chargeSavedCard(input) {
    const outcome = await real.chargeSavedCard(input);
    if (outcome.status === 'approved') {
      process.stdout.write(`approved ${outcome.transactionId}; dying\n`);
      process.kill(process.pid, 'SIGKILL');
    }
    return outcome;
  },
};
const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
const temporal = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }) });
const worker = await createBillingWorker({
  connection,
  taskQueue: process.env.TEMPORAL_TASK_QUEUE!,
  db,
  temporal,
  activityDeps: { provider: dyingProvider },
});
const running = worker.run();
process.stdout.write('ready\n');
await running;
