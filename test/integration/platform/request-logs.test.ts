// The request log: every call's key, method, path, status, request id and time, readable through the
// admin CLI (`npm run admin -- logs --store X --json`), and entries older than 30 days swept.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { testMongo, waitFor, type TestMongo } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { runAdmin } from '../../../admin/cli';
import { collections, type RequestLogDoc } from '../../../store/collections';
import { REQUEST_LOG_RETENTION_MS, sweepRequestLogs, writeRequestLogs } from '../../../store/request-logs';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  store = await createTestStore(mongo.db);
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

async function adminLogs(args: string[]): Promise<RequestLogDoc[]> {
  const { code, output } = await runAdmin(['logs', '--store', store.store._id, ...args, '--json'], {
    MONGODB_URI: inject('mongoUri'),
    MONGODB_DB: mongo.db.databaseName,
  });
  expect(code).toBe(0);
  return JSON.parse(output);
}

describe('request logs', () => {
  it('record which key made each call, with method, path, status, request id and time, readable through the admin CLI', async () => {
    const reader = await store.makeKey(['read']);
    const revoked = await store.makeKey(['read']);
    await collections(mongo.db).apiKeys.updateOne({ _id: revoked.id }, { $set: { revoked_at: 1 } });
    const started = Math.floor(Date.now() / 1000);
    const calls = [
      await call(api, store.key, 'GET', '/v1/account?expand=x'),
      await call(api, reader.key, 'GET', '/v1/customers/cust_missing'),
      await call(api, reader.key, 'POST', '/v1/customers', { json: {} }),
      await call(api, revoked.key, 'GET', '/v1/account'),
    ];
    const ids = calls.map((c) => c.headers.get('request-id')!);

    const logs = await waitFor(
      async () => {
        const entries = await adminLogs([]);
        return ids.every((id) => entries.some((e) => e._id === id)) ? entries : null;
      },
      { timeoutMs: 10_000, description: 'the request log batch to be written' },
    );
    const byId = new Map(logs.map((l) => [l._id, l]));
    expect(ids.map((id) => byId.get(id)).map((l) => [l!.api_key, l!.method, l!.path, l!.status])).toEqual([
      [store.keyId, 'GET', '/v1/account', 400],
      [reader.id, 'GET', '/v1/customers/cust_missing', 404],
      [reader.id, 'POST', '/v1/customers', 403],
      [revoked.id, 'GET', '/v1/account', 401],
    ]);
    for (const id of ids) {
      expect(byId.get(id)!.created).toBeGreaterThanOrEqual(started);
      expect(byId.get(id)!.store_id).toBe(store.store._id);
    }

    const onlyReader = await adminLogs(['--key', reader.id]);
    expect(onlyReader.map((l) => l._id).sort()).toEqual([ids[1], ids[2]].sort());
  });

  it('the admin CLI prints a readable line per call without --json', async () => {
    const res = await call(api, store.key, 'GET', '/v1/account');
    const id = res.headers.get('request-id')!;
    const text = await waitFor(
      async () => {
        const { output } = await runAdmin(['logs', '--store', store.store._id], {
          MONGODB_URI: inject('mongoUri'),
          MONGODB_DB: mongo.db.databaseName,
        });
        return output.includes(id) ? output : null;
      },
      { timeoutMs: 10_000 },
    );
    expect(text.split('\n').find((line) => line.includes(id))).toMatch(new RegExp(`${store.keyId}\\s+GET /v1/account\\s+200`));
  });

  it('entries older than 30 days are swept; younger ones stay', async () => {
    const now = Date.now();
    const entry = (id: string, ageMs: number): RequestLogDoc => ({
      _id: id,
      store_id: store.store._id,
      api_key: store.keyId,
      method: 'GET',
      path: '/v1/account',
      status: 200,
      duration_ms: 1,
      ip: '127.0.0.1',
      created: Math.floor((now - ageMs) / 1000),
    });
    await writeRequestLogs(mongo.db, [
      entry('req_old000000000000000001', REQUEST_LOG_RETENTION_MS + 60_000),
      entry('req_young00000000000000001', REQUEST_LOG_RETENTION_MS - 60_000),
    ]);
    expect(REQUEST_LOG_RETENTION_MS).toBe(30 * 24 * 3600 * 1000);
    expect(await sweepRequestLogs(mongo.db, now)).toBeGreaterThanOrEqual(1);
    const left = (await adminLogs(['--limit', '1000'])).map((l) => l._id);
    expect(left).toContain('req_young00000000000000001');
    expect(left).not.toContain('req_old000000000000000001');
  });

  it('every written entry carries expires_at, a Date 30 days after it was made, for the TTL index', async () => {
    const created = Math.floor(Date.now() / 1000);
    const id = 'req_ttl000000000000000001';
    await writeRequestLogs(mongo.db, [
      {
        _id: id,
        store_id: store.store._id,
        api_key: store.keyId,
        method: 'GET',
        path: '/v1/account',
        status: 200,
        duration_ms: 1,
        ip: '127.0.0.1',
        created,
      },
    ]);
    const stored = await mongo.db.collection('request_logs').findOne({ _id: id as never });
    expect(stored?.expires_at).toEqual(new Date(created * 1000 + REQUEST_LOG_RETENTION_MS));
  });
});
