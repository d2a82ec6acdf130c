// What this tests: what authentication asks the database. A key of the wrong shape is refused
// before any lookup; a well-formed key costs one lookup by exact `_id` (the one filter FerretDB v1
// serves from an index), also when it is unknown, so guessing keys never makes the API scan.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MongoClient, type CommandStartedEvent, type Document } from 'mongodb';
import { testMongo, type TestMongo } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';

let mongo: TestMongo;
let monitored: MongoClient;
let api: TestApi;
let store: TestStore;
const keyQueries: Document[] = [];

beforeAll(async () => {
  mongo = await testMongo();
  store = await createTestStore(mongo.db);
  monitored = await MongoClient.connect(inject('mongoUri'), { monitorCommands: true });
  monitored.on('commandStarted', (event: CommandStartedEvent) => {
    if (event.command.find === 'api_keys') keyQueries.push(event.command.filter ?? {});
  });
  api = await startTestApi({ db: monitored.db(mongo.db.databaseName) });
});
afterAll(async () => {
  await api?.close();
  await monitored?.close();
  await mongo?.close();
});

describe('key lookups', () => {
  it('a key of the wrong shape answers 401 invalid_api_key without any key lookup', async () => {
    keyQueries.length = 0;
    for (const key of ['vk_live_short', `sk_live_${'a'.repeat(44)}`, `vk_live_${'a'.repeat(43)}-`]) {
      const res = await call(api, key, 'GET', '/v1/account');
      expect([res.status, res.body.error.code]).toEqual([401, 'invalid_api_key']);
    }
    expect(keyQueries).toEqual([]);
  });

  it('an unknown well-formed key and a known one are each one lookup by exact _id', async () => {
    keyQueries.length = 0;
    const unknown = await call(api, `vk_live_${'Z'.repeat(12)}${'b'.repeat(32)}`, 'GET', '/v1/account');
    const known = await call(api, store.key, 'GET', '/v1/account');
    expect([unknown.status, unknown.body.error.code, known.status]).toEqual([401, 'invalid_api_key', 200]);
    expect(keyQueries).toEqual([{ _id: `ak_${'Z'.repeat(12)}` }, { _id: store.keyId }]);
  });
});
