// The relay answers a list's page (store/pagination.ts findPage: {store_id} or {$and: [{store_id}, cursor]}, sorted by
// created then _id, limit n+1) from its SQLite index (temporal-dev/ferretdb/internal/paths/list.go). Two engines get the same writes:
// one with that fast path, one with FERRETDB_RELAY_LISTS=off (FerretDB's own full scan, MongoDB's semantics); every page
// must be the same BSON, byte for byte, and the first engine's log must show it answered the page itself (or passed through).
import { Binary, Double, Int32, Long, ObjectId, Timestamp, type Collection, type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../temporal-dev/wait';
import {
  bsonHex,
  countIn,
  exactTypes,
  pageBytes,
  pagesOnBoth,
  startRelayEngine,
  stopRelayEngines,
  type RelayEngine,
} from '../../support/relay-engines';
import { findPage, NEWEST_FIRST } from '../../../store/pagination';

const answeredLine = 'relay: list page answered from the index';
const passedLine = 'relay: list page passed through';

type Engine = RelayEngine;

const startEngine = (fast: boolean): Promise<Engine> =>
  startRelayEngine(fast ? 'ferretdb-lists-on' : 'ferretdb-lists-off', { FERRETDB_RELAY_LISTS: fast ? 'on' : 'off' });

let fast: Engine;
let slow: Engine;
const dbName = 'lists';

/** Documents with our string ids (any other field, of any type). */
interface Listed extends Document {
  _id: string;
}

const collectionOf = (engine: Engine, name: string, db = dbName): Collection<Listed> => engine.client.db(db).collection<Listed>(name, exactTypes);

/** Applies the same write to both engines. */
async function onBoth(name: string, write: (c: Collection<Listed>) => Promise<unknown>): Promise<void> {
  await write(collectionOf(fast, name));
  await write(collectionOf(slow, name));
}

const bytes = (docs: Document[]): string[] => docs.map(bsonHex);
const { pageOnBoth, walk } = pagesOnBoth(() => [fast, slow], collectionOf);

/** A document with every BSON type sjson stores, and `created` ties (seven per second) in int32, double and int64. */
function customer(i: number): Listed {
  const created = 1_800_000_000 + Math.floor(i / 7);
  const typed = i % 3 === 0 ? new Int32(created) : i % 3 === 1 ? new Double(created) : Long.fromNumber(created);
  return {
    _id: `cus_${i % 2 ? i : String(i).padStart(4, '0')}`, // ids of different lengths: byte order, not number order
    store_id: i % 4 === 3 ? 'st_b' : 'st_a', // other stores' documents interleaved
    created: i % 11 === 5 ? new Double(created + 0.5) : typed,
    email: `c${i}@example.com`,
    nested: { n: new Int32(i), list: [new Int32(1), 'x', null, { deep: true }], empty: {} },
    tags: [],
    at: new Date(1_800_000_000_000 + i),
    long: Long.fromNumber(i * 1e12),
    ratio: new Double(i / 3),
    nothing: null,
    flag: i % 2 === 0,
    bin: new Binary(Buffer.from([i % 256, 1, 2]), 0),
    oid: new ObjectId('65a1b2c3d4e5f60718293a4b'),
    ts: new Timestamp({ t: 1_800_000_000, i }),
    pattern: /^c\d+$/i,
    text: `üñí ${i} 日本`,
  };
}

beforeAll(async () => {
  [fast, slow] = await Promise.all([startEngine(true), startEngine(false)]);
  await onBoth('customers', (c) => c.insertMany(Array.from({ length: 200 }, (_, i) => customer(i))));
  // The index is made by the relay's indexer a moment after the collection exists: wait until a page is answered from it.
  const before = countIn(fast, answeredLine);
  await waitFor(async () => (await pageOnBoth('customers', 'st_a', {}, NEWEST_FIRST, 10)) && countIn(fast, answeredLine) > before, {
    timeoutMs: 30_000,
    description: 'the relay to answer a page from its list index',
  });
}, 120_000);

afterAll(() => stopRelayEngines([fast, slow]));

describe('list pages from the relay index equal FerretDB full scan (MongoDB semantics)', () => {
  it('every page of each store, both orders, forwards and backwards, limits 1, 7 and 100: all answered from the index', async () => {
    for (const limit of [1, 7, 100]) {
      // Limit 1 on the smaller store only: each page is a full scan on the engine without the fast path.
      for (const store of limit === 1 ? ['st_b'] : ['st_a', 'st_b', 'st_none']) {
        const served = countIn(fast, answeredLine);
        const { finds, seen } = await walk('customers', store, {}, limit);
        // findPage asks for limit + 1 (101 at most: the first batch), so every one of them is served by the relay.
        expect(countIn(fast, answeredLine) - served, `${store} limit ${limit}`).toBe(finds);
        // Forwards in each order, every document of the store once.
        expect(seen).toBe(2 * (await collectionOf(slow, 'customers').countDocuments({ store_id: store })));
      }
    }
  }, 300_000);

  it('after deletes and updates (the index follows every write), and with a cursor document since deleted', async () => {
    await onBoth('customers', (c) =>
      c.deleteMany({ 'nested.n': { $in: [new Int32(0), new Int32(7), new Int32(8), new Int32(100), new Int32(199)] } }),
    );
    await onBoth('customers', (c) => c.updateOne({ _id: 'cus_0010' }, { $set: { created: new Int32(1_900_000_000) } }));
    await onBoth('customers', (c) => c.updateOne({ _id: 'cus_11' }, { $set: { created: new Double(1_700_000_000.25) } }));
    const served = countIn(fast, answeredLine);
    const first = await pageOnBoth('customers', 'st_a', {}, NEWEST_FIRST, 5);
    if (first === 'cursor_missing') throw new Error('no first page');
    expect(first.docs[0]!._id).toBe('cus_0010');
    await walk('customers', 'st_a', {}, 50);
    // The cursor read by a client, then deleted: the app gets cursor_missing; the raw query with its values still pages.
    const cursor = first.docs[2]!;
    await onBoth('customers', (c) => c.deleteOne({ _id: cursor._id }));
    expect(await pageOnBoth('customers', 'st_a', {}, NEWEST_FIRST, 5, String(cursor._id))).toBe('cursor_missing');
    const after = {
      $and: [{ store_id: 'st_a' }, { $or: [{ created: { $lt: cursor.created } }, { created: cursor.created, _id: { $lt: cursor._id } }] }],
    };
    const [mine, theirs] = await Promise.all(
      [fast, slow].map((e) => collectionOf(e, 'customers').find(after).sort({ created: -1, _id: -1 }).limit(4).toArray()),
    );
    expect(bytes(mine!)).toEqual(bytes(theirs!));
    expect(mine!.length).toBe(4);
    expect(countIn(fast, answeredLine) - served).toBeGreaterThan(10);
  }, 300_000);

  it('queries the relay must not answer pass through to FerretDB unchanged', async () => {
    const sort = { created: -1, _id: -1 } as const;
    const shapes: Array<(c: Collection<Listed>) => Promise<Document[]>> = [
      (c) =>
        c
          .find({ store_id: 'st_a', 'nested.n': new Int32(5) })
          .sort(sort)
          .limit(10)
          .toArray(), // a condition it does not take (list-conditions.test.ts)
      (c) => c.find({ store_id: 'st_a' }).sort(sort).limit(102).toArray(), // more than a first batch
      (c) => c.find({ store_id: 'st_a' }).sort(sort).toArray(), // no limit: unbounded
      (c) => c.find({ store_id: 'st_a' }).sort(sort).skip(3).limit(10).toArray(),
      (c) => c.find({ store_id: 'st_a' }).sort(sort).limit(10).project({ email: 1 }).toArray(),
      (c) => c.find({ store_id: 'st_a' }).sort({ _id: -1 }).limit(10).toArray(),
      (c) => c.find({ store_id: 'st_a' }).sort({ created: -1, _id: 1 }).limit(10).toArray(),
      (c) =>
        c
          .find({ store_id: { $in: ['st_a'] } })
          .sort(sort)
          .limit(10)
          .toArray(),
      (c) => c.find({ store_id: 'st_a' }).sort(sort).limit(10).batchSize(3).toArray(),
    ];
    for (const [i, shape] of shapes.entries()) {
      const served = countIn(fast, answeredLine);
      const [mine, theirs] = await Promise.all([shape(collectionOf(fast, 'customers')), shape(collectionOf(slow, 'customers'))]);
      expect(bytes(mine!), `shape ${i}`).toEqual(bytes(theirs!));
      expect(countIn(fast, answeredLine) - served, `shape ${i} was answered by the relay`).toBe(0);
    }
  }, 120_000);

  it('a collection holding one document SQLite would order unlike MongoDB passes through until it is gone', async () => {
    const docs = Array.from({ length: 30 }, (_, i) => ({ _id: `ord_${i}`, store_id: 'st_a', created: new Int32(1_800_000_000 + (i % 4)) }));
    await onBoth('orders', (c) => c.insertMany(docs));
    await waitFor(
      async () => {
        const served = countIn(fast, answeredLine);
        await pageOnBoth('orders', 'st_a', {}, NEWEST_FIRST, 10);
        return countIn(fast, answeredLine) > served;
      },
      { timeoutMs: 30_000, description: 'the orders list index' },
    );
    // A string `created` sorts after every number in MongoDB; an array store_id matches by its element.
    for (const odd of <Listed[]>[
      { _id: 'ord_text', store_id: 'st_a', created: 'later' },
      { _id: 'ord_array', store_id: ['st_a', 'st_b'], created: new Int32(1_800_000_001) },
      { _id: 'ord_missing', store_id: 'st_a' },
    ]) {
      await onBoth('orders', (c) => c.insertOne(odd));
      const [served, passed] = [countIn(fast, answeredLine), countIn(fast, passedLine)];
      await walk('orders', 'st_a', {}, 4);
      expect(countIn(fast, answeredLine) - served, String(odd._id)).toBe(0);
      expect(countIn(fast, passedLine) - passed, String(odd._id)).toBeGreaterThan(0);
      await onBoth('orders', (c) => c.deleteOne({ _id: odd._id }));
    }
    const served = countIn(fast, answeredLine);
    const { finds } = await walk('orders', 'st_a', {}, 4);
    expect(countIn(fast, answeredLine) - served).toBe(finds);
  }, 120_000);

  it('keeps read pools for at most 16 databases, closing the least recently used, and still answers every one', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `lists_pool_${i}`);
    const docs = Array.from({ length: 5 }, (_, i) => ({ _id: `cus_${i}`, store_id: 'st_a', created: new Int32(1_800_000_000 + (i % 2)) }));
    const page = async (db: string) => {
      const request = { storeId: 'st_a', filter: {}, order: NEWEST_FIRST, limit: 3, backwards: false };
      const [mine, theirs] = [
        await findPage(collectionOf(fast, 'customers', db), request),
        await findPage(collectionOf(slow, 'customers', db), request),
      ];
      expect(pageBytes(mine), db).toEqual(pageBytes(theirs));
    };
    const closed = countIn(fast, 'relay: list read pool closed');
    for (const db of names) {
      for (const engine of [fast, slow]) await collectionOf(engine, 'customers', db).insertMany(docs);
      // Each database's index comes from the indexer's next pass.
      await waitFor(
        async () => {
          const served = countIn(fast, answeredLine);
          await page(db);
          return countIn(fast, answeredLine) > served;
        },
        { timeoutMs: 30_000, description: `the list index of ${db}` },
      );
    }
    expect(countIn(fast, 'relay: list read pool closed') - closed).toBeGreaterThanOrEqual(names.length - 16);
    const served = countIn(fast, answeredLine);
    for (const db of names) await page(db); // the closed pools open again
    expect(countIn(fast, answeredLine) - served).toBe(names.length);
  }, 180_000);
});
