// What this tests: reading all of a store's documents as list pages (findEveryPage), which is how event
// fan-out reads a store's webhook endpoints: every document of the store in list order across pages, none
// of another store's, and a read whose page cursor is deleted meanwhile starts over instead of failing or
// skipping; and fan-out with other stores' endpoints present sees exactly its store's 16, read as a list page
// the relay answers from its index (a {store_id} find with no order was a scan of every store's endpoints).
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Collection, Db } from 'mongodb';
import { waitFor } from '../../support/env';
import { countIn, startRelayEngine, stopRelayEngines, type RelayEngine } from '../../support/relay-engines';
import { ensureIndexes } from '../../../store/indexes';
import { findEveryPage, OLDEST_FIRST } from '../../../store/pagination';
import { createStore } from '../../../store/stores';
import { endpointsForFanOut, ENDPOINTS_PER_STORE, insertEndpoint } from '../../../store/webhook-endpoints';

interface Row {
  _id: string;
  store_id: string;
  created: number;
}

const answeredLine = 'relay: list page answered from the index';
let engine: RelayEngine;
let db: Db;
beforeAll(async () => {
  engine = await startRelayEngine('ferretdb-every-page', {});
  db = engine.client.db('every_page');
  await ensureIndexes(db);
}, 120_000);
afterAll(() => stopRelayEngines([engine]));

/** 250 rows of store A (created out of id order, some equal) and 30 of store B. */
async function seeded(): Promise<{ rows: Collection<Row>; expected: string[] }> {
  const rows = db.collection<Row>(`every_page_${Date.now()}`);
  await rows.createIndex({ store_id: 1, created: 1, _id: 1 });
  const a = Array.from({ length: 250 }, (_, i) => ({
    _id: `row_${String(i).padStart(3, '0')}`,
    store_id: 'store_a',
    created: 1_000 + ((i * 7) % 50),
  }));
  const b = Array.from({ length: 30 }, (_, i) => ({ _id: `other_${i}`, store_id: 'store_b', created: 1_000 + i }));
  await rows.insertMany([...a, ...b]);
  const expected = [...a].sort((x, y) => x.created - y.created || (x._id < y._id ? -1 : 1)).map((r) => r._id);
  return { rows, expected };
}

it("reads every document of the store in list order across pages, and none of another store's", async () => {
  const { rows, expected } = await seeded();
  const all = await findEveryPage(rows, { storeId: 'store_a', filter: {}, order: OLDEST_FIRST });
  expect(all.map((r) => r._id)).toEqual(expected);
});

it('starts over when the page cursor is deleted between two pages, returning what is there at the end', async () => {
  const { rows, expected } = await seeded();
  let deleted: string | undefined;
  // The collection as the read sees it: the first cursor lookup finds its document just deleted.
  const racing = new Proxy(rows, {
    get(target, key) {
      if (key === 'findOne' && deleted === undefined) {
        return async (filter: { _id: string }) => {
          deleted = filter._id;
          await target.deleteOne({ _id: filter._id });
          return target.findOne(filter);
        };
      }
      const value = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const all = await findEveryPage(racing, { storeId: 'store_a', filter: {}, order: OLDEST_FIRST });
  expect(deleted).toBe(expected[99]);
  expect(all.map((r) => r._id)).toEqual(expected.filter((id) => id !== deleted));
});

it("fan-out sees exactly the store's endpoints, oldest first, with other stores' endpoints around", async () => {
  const storeOf = (name: string) => createStore(db, { name, country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  const [mine, other] = [await storeOf('Fan-out'), await storeOf('Neighbour')];
  // One a second apart: the list order (created, then id) is the order they were made.
  const add = (storeId: string, n: number) =>
    insertEndpoint(
      db,
      { storeId, url: `https://example.com/${n}`, description: null, enabledEvents: ['*'], apiVersion: '2026-11-01' },
      Date.UTC(2026, 10, 1) + n * 1_000,
    );
  const made: string[] = [];
  for (let n = 0; n < ENDPOINTS_PER_STORE; n++) {
    await add(other._id, n);
    made.push((await add(mine._id, n))._id);
  }
  // The relay's indexer makes the list index a moment after the collection has rows: wait for the first answer from it.
  const before = countIn(engine, answeredLine);
  const fanOut = await waitFor(
    async () => {
      const endpoints = await endpointsForFanOut(db, mine._id);
      return countIn(engine, answeredLine) > before && endpoints;
    },
    { timeoutMs: 30_000, description: 'the fan-out read answered from the list index' },
  );
  expect(fanOut.map((e) => e._id)).toEqual(made);
});
