// The real stack for webhook integration tests: the API on a free port, a billing worker on a unique
// task queue (shared dev server and FerretDB), and a local HTTPS receiver reached through the
// allowlist with the test CA. Receiver paths tell endpoints apart; each path can answer its own way.
import type { Worker } from '@temporalio/worker';
import { createBillingWorker } from '../../worker/main';
import type { HostResolver } from '../../adapters/webhooks/host-policy';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from './env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from './api';
import { startWebhookReceiver, testCa, type ReceivedHit, type Responder, type WebhookReceiver } from './webhook-receiver';

export interface WebhookStack {
  mongo: TestMongo;
  temporal: TestTemporal;
  taskQueue: string;
  api: TestApi;
  receiver: WebhookReceiver;
  store: TestStore;
  /** Answers for one receiver path (default 200). */
  responders: Map<string, Responder>;
  hitsOn(path: string): ReceivedHit[];
  /** Creates an endpoint through the API on a fresh receiver path; returns the API object (with secret) and the path. */
  createEndpoint(body?: Record<string, unknown>, key?: string): Promise<{ endpoint: any; path: string }>;
  close(): Promise<void>;
}

export async function startWebhookStack(options: { workerResolver?: HostResolver; apiResolver?: HostResolver } = {}): Promise<WebhookStack> {
  const mongo = await testMongo();
  const temporal = await testTemporal();
  const taskQueue = uniqueTaskQueue('webhooks');
  const ca = await testCa();
  const responders = new Map<string, Responder>();
  const receiver = await startWebhookReceiver({ respond: (hit) => (responders.get(hit.path) ?? (() => 200))(hit) });
  const worker: Worker = await createBillingWorker({
    connection: temporal.nativeConnection,
    namespace: temporal.namespace,
    taskQueue,
    db: mongo.db,
    temporal: temporal.client,
    activityDeps: { webhooks: { allowedHosts: ['localhost'], ca: ca.caCert, resolver: options.workerResolver } },
  });
  const running = worker.run();
  const api = await startTestApi({
    db: mongo.db,
    temporal: temporal.client,
    taskQueue,
    config: { webhookAllowedHosts: ['localhost'], webhookResolver: options.apiResolver },
  });
  const store = await createTestStore(mongo.db);
  let paths = 0;
  return {
    mongo,
    temporal,
    taskQueue,
    api,
    receiver,
    store,
    responders,
    hitsOn: (path) => receiver.hits.filter((hit) => hit.path === path),
    async createEndpoint(body = {}, key = store.key) {
      const path = `/hook-${++paths}`;
      const res = await call(api, key, 'POST', '/v1/webhook_endpoints', { json: { url: receiver.url(path), ...body } });
      if (res.status !== 201) throw new Error(`endpoint not created: ${res.status} ${JSON.stringify(res.body)}`);
      return { endpoint: res.body, path };
    },
    async close() {
      await api.close();
      worker.shutdown();
      await running.catch(() => undefined);
      await receiver.close();
      await temporal.close();
      await mongo.close();
    },
  };
}
