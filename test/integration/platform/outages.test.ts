// What this tests: a dependency that does not answer gets a quick, typed answer. With the database or
// the Temporal frontend unreachable, requests answer 503 api_error service_unavailable with Retry-After
// in a few seconds (never a 500 or a 30-second hang); /healthz stays 200 and /readyz says which is down.
import { Client, Connection } from '@temporalio/client';
import { MongoClient } from 'mongodb';
import net from 'node:net';
import { once } from 'node:events';
import { startApiProcess } from '../../support/app-processes';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../api/app';
import { loadApiConfig } from '../../../api/config';
import { apiTemporalInterceptors, DEPENDENCY_WAIT_MS } from '../../../api/outages';
import { createTestConnection } from '../../../adapters/provider/test-connection';
import { freePort } from '../../../temporal-dev/servers';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from '../../support/env';
import { seedCatalog, type TestCatalog } from '../../support/subscriptions';

let mongo: TestMongo;
let temporal: TestTemporal;
let healthy: TestApi;
let store: TestStore;
let catalog: TestCatalog;

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  healthy = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue: uniqueTaskQueue('outages') });
  store = await createTestStore(mongo.db);
  catalog = await seedCatalog(mongo.db, store.store._id);
});

afterAll(async () => {
  await healthy?.close();
  await temporal?.close();
  await mongo?.close();
});

/** A Temporal client of a frontend that is not there, configured as the API process configures its own. */
async function unreachableTemporal(): Promise<Client> {
  const connection = Connection.lazy({
    address: `127.0.0.1:${await freePort()}`,
    connectTimeout: DEPENDENCY_WAIT_MS,
    interceptors: apiTemporalInterceptors(),
  });
  return new Client({ connection });
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

const get = (url: string) =>
  fetch(url).then(async (res) => ({ status: res.status, body: (await res.json()) as { status: string; checks?: Record<string, string> } }));

describe('all dependencies up', () => {
  it('/healthz and /readyz answer 200 without a key', async () => {
    expect(await get(`${healthy.url}/healthz`)).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await get(`${healthy.url}/readyz`)).toEqual({ status: 200, body: { status: 'ready', checks: { mongodb: 'ok', temporal: 'ok' } } });
  });
});

describe('Temporal unreachable', () => {
  it('a call that needs Temporal answers 503 service_unavailable with Retry-After within seconds; /readyz names temporal; /healthz stays 200', async () => {
    const api = await startTestApi({ db: mongo.db, temporal: await unreachableTemporal(), taskQueue: uniqueTaskQueue('outages-temporal') });
    try {
      const { value: res, ms } = await timed(() => call(api, store.key, 'POST', '/v1/checkout/sessions', { json: { offer: catalog.monthly._id } }));
      expect(res.status).toBe(503);
      expect(res.body.error).toMatchObject({ type: 'api_error', code: 'service_unavailable', param: null, message: expect.any(String) });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(ms).toBeLessThan(8_000);
      // What does not need Temporal still works.
      expect((await call(api, store.key, 'GET', '/v1/account')).status).toBe(200);
      const ready = await get(`${api.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.body.checks).toMatchObject({ mongodb: 'ok', temporal: expect.not.stringMatching(/^ok$/) });
      expect((await get(`${api.url}/healthz`)).status).toBe(200);
    } finally {
      await api.close();
    }
  }, 30_000);
});

describe('MongoDB unreachable', () => {
  it('an authenticated request answers 503 service_unavailable with Retry-After within seconds; /readyz names mongodb; /healthz stays 200', async () => {
    const dead = new MongoClient(`mongodb://127.0.0.1:${await freePort()}/`, { serverSelectionTimeoutMS: DEPENDENCY_WAIT_MS });
    const port = await freePort();
    const config = { ...loadApiConfig({ NODE_ENV: 'test', PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` }), trustProxy: ['loopback'] };
    const db = dead.db('nowhere');
    const app = await buildApp({ db, config, temporal: temporal.client, provider: createTestConnection({ db }) }, { logger: false });
    await app.listen({ port, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${port}`;
    try {
      const { value: res, ms } = await timed(() => call({ url }, store.key, 'GET', '/v1/account'));
      expect(res.status).toBe(503);
      expect(res.body.error).toMatchObject({ type: 'api_error', code: 'service_unavailable', param: null, message: expect.any(String) });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(ms).toBeLessThan(8_000);
      const ready = await get(`${url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.body.checks).toMatchObject({ mongodb: expect.not.stringMatching(/^ok$/), temporal: 'ok' });
      expect((await get(`${url}/healthz`)).status).toBe(200);
    } finally {
      await app.close();
      await dead.close();
    }
  }, 30_000);
});

describe('bounded shutdown', () => {
  it('on SIGTERM the API process exits within its 10 s drain even while a client holds a request open (a body that never ends)', async () => {
    const api = await startApiProcess({ MONGODB_DB: mongo.db.databaseName });
    const socket = net.connect(Number(new URL(api.url).port), '127.0.0.1');
    await once(socket, 'connect');
    socket.on('error', () => undefined);
    socket.write(
      `POST /v1/customers HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${store.key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"email":`,
    );
    const started = performance.now();
    process.kill(api.group.pid, 'SIGTERM');
    await api.group.exited;
    const ms = performance.now() - started;
    socket.destroy();
    // Without the bound the open request holds the close until the server's own timeouts (30 s and more).
    expect(ms).toBeLessThan(15_000);
  }, 60_000);
});
