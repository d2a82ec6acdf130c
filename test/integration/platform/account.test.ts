// GET /v1/account over real HTTP on the real stack: the API and a billing worker, both against the
// suite's FerretDB and the Temporal dev server; the key's store and the key itself.
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestWorker } from '../../support/worker';
import type { pingWorkflow } from '../../../workflows';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';

let mongo: TestMongo;
let temporal: TestTemporal;
let taskQueue: string;
let worker: Worker;
let workerRun: Promise<void>;
let api: TestApi;
let store: TestStore;

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  taskQueue = uniqueTaskQueue('account');
  worker = await createTestWorker(mongo, temporal, taskQueue);
  workerRun = worker.run();
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue });
  store = await createTestStore(mongo.db, { name: 'Acme Brasil', slug: 'acme' });
});
afterAll(async () => {
  await api?.close();
  worker?.shutdown();
  await workerRun?.catch(() => undefined);
  await temporal?.close();
  await mongo?.close();
});

describe('the real stack', () => {
  it('the API answers GET /v1/account over HTTP while the worker it starts workflows on runs activities against the same FerretDB', async () => {
    const res = await call(api, store.key, 'GET', '/v1/account');
    expect([res.status, res.body.id]).toEqual([200, store.store._id]);
    // The API's own Temporal client, on the API's task queue: the worker answers with an activity that pings MongoDB.
    const client = api.app.deps.temporal!;
    const pong = await client.workflow.execute<typeof pingWorkflow>('pingWorkflow', {
      taskQueue: api.config.taskQueue,
      workflowId: `ping-${taskQueue}`,
    });
    expect([worker.getState(), pong]).toEqual(['RUNNING', 'pong']);
  });
});

describe('GET /v1/account', () => {
  it('answers 200 with the account object for a valid key', async () => {
    const res = await call(api, store.key, 'GET', '/v1/account');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: store.store._id,
      object: 'account',
      name: 'Acme Brasil',
      slug: 'acme',
      country: 'BR',
      currency: 'brl',
      timezone: 'America/Sao_Paulo',
      api_key: { id: store.keyId, name: 'test key', scopes: ['read', 'write'], default_version: '2026-11-01' },
      api_version: '2026-11-01',
      livemode: true,
    });
    expect(res.headers.get('request-id')).toMatch(/^req_[0-9a-f]{20}$/);
    expect(res.headers.get('service-version')).toBe('2026-11-01');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('accepts HTTP Basic with the key as user and an empty password', async () => {
    const basic = Buffer.from(`${store.key}:`).toString('base64');
    const res = await call(api, null, 'GET', '/v1/account', { headers: { authorization: `Basic ${basic}` } });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(store.store._id);
  });
});
