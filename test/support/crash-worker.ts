// A billing worker in its own process for crash-recovery tests. When it runs the activity named by
// CRASH_HOLD_ACTIVITY, it does the activity's work, prints "holding <type>" and then never reports
// the result (still heartbeating, as a live worker would) until the test SIGKILLs it: the worst moment
// for a crash, the work done and Temporal not told. Configured like worker/main.ts: MONGODB_URI,
// MONGODB_DB, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, WEBHOOK_*. Prints "ready".
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type ActivityInterceptorsFactory } from '@temporalio/worker';
import { MongoClient } from 'mongodb';
import { createBillingWorker } from '../../worker/main';

const hold = process.env.CRASH_HOLD_ACTIVITY!;
const holdAfterWork: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    async execute(input, next) {
      const result = await next(input);
      if (ctx.info.activityType !== hold) return result;
      process.stdout.write(`holding ${hold}\n`);
      return new Promise(() => undefined);
    },
  },
});

const mongo = await MongoClient.connect(process.env.MONGODB_URI!);
const address = process.env.TEMPORAL_ADDRESS!;
const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
const connection = await NativeConnection.connect({ address });
const temporal = new Client({ connection: await Connection.connect({ address }), namespace });
const worker = await createBillingWorker({
  connection,
  namespace,
  taskQueue: process.env.TEMPORAL_TASK_QUEUE!,
  db: mongo.db(process.env.MONGODB_DB!),
  temporal,
  interceptors: { activity: [holdAfterWork] },
});
const running = worker.run();
process.stdout.write('ready\n');
await running;
