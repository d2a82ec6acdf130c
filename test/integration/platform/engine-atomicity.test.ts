// The local engine answers like MongoDB where FerretDB alone does not (temporal-dev/ferretdb/relay.go): it applies update,
// findAndModify and delete atomically under concurrent clients, and a write that breaks a unique index fails with code 11000.
// Writes whose filter is {_id, <more conditions>} take the relay's fast path (temporal-dev/ferretdb/internal/pinned): they give
// MongoDB's results whether or not the document matches, and the guarded decrement and compare-and-set probes cover it under
// concurrency. Finds with such a filter are rewritten to an aggregate and must give the same results as MongoDB's find.
import { MongoClient, MongoServerError, type Collection, type Db } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { uniqueDbName } from '../../support/env';

const clientCount = 10;

interface Counter {
  _id: string;
  n: number;
}

interface Versioned {
  _id: string;
  v: number;
}

interface Person {
  _id: string;
  email: string;
}

interface Item {
  _id: string;
  field: string;
  n: number;
  arr: string[];
  touched?: boolean;
}

interface Hits {
  _id?: string;
  key?: string;
  created: Date;
  hits: number;
}

// One MongoClient per simulated process, each with its own connection pool.
let clients: MongoClient[] = [];
let dbs: Db[] = [];

beforeAll(async () => {
  const dbName = uniqueDbName();
  clients = await Promise.all(Array.from({ length: clientCount }, () => MongoClient.connect(inject('mongoUri'), { maxPoolSize: 10 })));
  dbs = clients.map((client) => client.db(dbName));
});

afterAll(async () => {
  await dbs[0]?.dropDatabase().catch(() => undefined);
  await Promise.all(clients.map((client) => client.close()));
});

/** `count` calls spread round-robin over the clients, all started at once. */
function fromAllClients<T>(count: number, call: (db: Db, i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => call(dbs[i % clientCount], i)));
}

/** An upsert may race another one inserting the same key: MongoDB's documented answer is to retry it. */
async function retryOnDuplicateKey<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof MongoServerError && error.code === 11000) return call();
    throw error;
  }
}

describe('concurrent writes from separate clients', () => {
  it('counts every $inc: 10 clients x 50 on one document', async () => {
    await dbs[0].collection<Counter>('inc').insertOne({ _id: 'c', n: 0 });

    await fromAllClients(clientCount * 50, (db) => db.collection<Counter>('inc').updateOne({ _id: 'c' }, { $inc: { n: 1 } }));

    expect(await dbs[0].collection<Counter>('inc').findOne({ _id: 'c' })).toEqual({ _id: 'c', n: 500 });
  });

  it('lets a guarded decrement succeed exactly as often as there is stock', async () => {
    await dbs[0].collection<Counter>('stock').insertOne({ _id: 's', n: 100 });

    const results = await fromAllClients(500, (db) => db.collection<Counter>('stock').updateOne({ _id: 's', n: { $gte: 1 } }, { $inc: { n: -1 } }));

    expect(results.filter((result) => result.modifiedCount === 1)).toHaveLength(100);
    expect(await dbs[0].collection<Counter>('stock').findOne({ _id: 's' })).toEqual({ _id: 's', n: 0 });
  });

  it('lets a compare-and-set succeed exactly as often as the version moved', async () => {
    await dbs[0].collection<Versioned>('cas').insertOne({ _id: 'v', v: 0 });

    const wins = await Promise.all(
      dbs.map(async (db) => {
        const versions = db.collection<Versioned>('cas');
        let won = 0;
        for (let tries = 0; tries < 60; tries++) {
          const current = (await versions.findOne({ _id: 'v' }))!.v;
          if (await versions.findOneAndUpdate({ _id: 'v', v: current }, { $set: { v: current + 1 } })) won++;
        }
        return won;
      }),
    );

    const final = (await dbs[0].collection<Versioned>('cas').findOne({ _id: 'v' }))!.v;
    expect(final).toBeGreaterThan(0);
    expect(wins.reduce((sum, won) => sum + won, 0)).toBe(final);
  });

  it('upserts one document for a key 10 clients upsert at once (unique index on key)', async () => {
    await dbs[0].collection<Hits>('upsert_key').createIndex({ key: 1 }, { unique: true });

    await fromAllClients(clientCount, (db) =>
      retryOnDuplicateKey(() =>
        db
          .collection<Hits>('upsert_key')
          .findOneAndUpdate({ key: 'k' }, { $setOnInsert: { created: new Date() }, $inc: { hits: 1 } }, { upsert: true }),
      ),
    );

    const docs = await dbs[0].collection<Hits>('upsert_key').find({ key: 'k' }).toArray();
    expect(docs).toHaveLength(1);
    expect(docs[0].hits).toBe(10);
  });

  it('upserts one document for an _id 10 clients upsert at once', async () => {
    await fromAllClients(clientCount, (db) =>
      retryOnDuplicateKey(() =>
        db
          .collection<Hits>('upsert_id')
          .findOneAndUpdate({ _id: 'k' }, { $setOnInsert: { created: new Date() }, $inc: { hits: 1 } }, { upsert: true }),
      ),
    );

    const docs = await dbs[0].collection<Hits>('upsert_id').find({}).toArray();
    expect(docs).toHaveLength(1);
    expect(docs[0]).toMatchObject({ _id: 'k', hits: 10 });
  });
});

describe('a write that breaks a unique index', () => {
  const people: Person[] = [
    { _id: 'a', email: 'a@example.com' },
    { _id: 'b', email: 'b@example.com' },
  ];
  let collection: Collection<Person>;

  beforeAll(async () => {
    collection = dbs[0].collection<Person>('unique_email');
    await collection.createIndex({ email: 1 }, { unique: true });
    await collection.insertMany(people.map((person) => ({ ...person })));
  });

  /** The write is rejected with DuplicateKey and changes nothing. */
  async function expectDuplicateKey(write: Promise<unknown>): Promise<void> {
    await expect(write).rejects.toMatchObject({ code: 11000 });
    expect(await collection.find().sort({ _id: 1 }).toArray()).toEqual(people);
  }

  it('fails updateOne setting a taken value with code 11000', async () => {
    await expectDuplicateKey(collection.updateOne({ _id: 'b' }, { $set: { email: 'a@example.com' } }));
  });

  it('fails findOneAndUpdate setting a taken value with code 11000', async () => {
    await expectDuplicateKey(collection.findOneAndUpdate({ _id: 'b' }, { $set: { email: 'a@example.com' } }));
  });

  it('fails an upsert inserting a taken value with code 11000', async () => {
    await expectDuplicateKey(collection.updateOne({ _id: 'c' }, { $set: { email: 'a@example.com' } }, { upsert: true }));
  });

  it('fails replaceOne with a taken value with code 11000', async () => {
    await expectDuplicateKey(collection.replaceOne({ _id: 'b' }, { email: 'a@example.com' }));
  });
});

// A document and a sibling with the same fields, and conditions besides _id that the pinned one matches or not.
const item: Item = { _id: 'pinned', field: 'value', n: 2, arr: ['x', 'y'] };
const sibling: Item = { _id: 'sibling', field: 'value', n: 2, arr: ['x', 'y'] };
const conditions: Array<{ name: string; matching: object; notMatching: object }> = [
  { name: 'field: value', matching: { field: 'value' }, notMatching: { field: 'other' } },
  { name: 'n: {$gte}', matching: { n: { $gte: 1 } }, notMatching: { n: { $gte: 3 } } },
  { name: 'arr contains', matching: { arr: 'x' }, notMatching: { arr: 'z' } },
  { name: '$exists: false', matching: { missing: { $exists: false } }, notMatching: { field: { $exists: false } } },
  {
    name: '$or',
    matching: { $or: [{ field: 'other' }, { n: 2 }] },
    notMatching: { $or: [{ field: 'other' }, { n: 3 }] },
  },
];
const cases = conditions.flatMap(({ name, matching, notMatching }) => [
  { name: `${name}, matching`, condition: matching, matches: true },
  { name: `${name}, not matching`, condition: notMatching, matches: false },
]);

describe('a write whose filter is {_id, <more conditions>}', () => {
  let collections = 0;

  /** A fresh collection holding the item and a sibling the write must never touch (from another client than the write's). */
  async function seeded(): Promise<{ items: Collection<Item>; read: Collection<Item> }> {
    const name = `pinned_${collections++}`;
    await dbs[0].collection<Item>(name).insertMany([{ ...item }, { ...sibling }]);
    return { items: dbs[1].collection<Item>(name), read: dbs[2].collection<Item>(name) };
  }

  async function expectDocs(read: Collection<Item>, expected: Item[]): Promise<void> {
    expect(await read.find().sort({ _id: 1 }).toArray()).toEqual(expected);
  }

  const touched: Item = { ...item, touched: true };

  it.each(cases)('updateOne with $name', async ({ condition, matches }) => {
    const { items, read } = await seeded();

    const result = await items.updateOne({ _id: item._id, ...condition }, { $set: { touched: true } });

    expect({ matchedCount: result.matchedCount, modifiedCount: result.modifiedCount, upsertedCount: result.upsertedCount }).toEqual({
      matchedCount: matches ? 1 : 0,
      modifiedCount: matches ? 1 : 0,
      upsertedCount: 0,
    });
    await expectDocs(read, [matches ? touched : item, sibling]);
  });

  it.each(cases)('findOneAndUpdate (returnDocument before) with $name', async ({ condition, matches }) => {
    const { items, read } = await seeded();

    const result = await items.findOneAndUpdate(
      { _id: item._id, ...condition },
      { $set: { touched: true } },
      { returnDocument: 'before', includeResultMetadata: true },
    );

    expect(result.value).toEqual(matches ? item : null);
    expect(result.lastErrorObject).toEqual({ n: matches ? 1 : 0, updatedExisting: matches });
    await expectDocs(read, [matches ? touched : item, sibling]);
  });

  it.each(cases)('findOneAndUpdate (returnDocument after) with $name', async ({ condition, matches }) => {
    const { items, read } = await seeded();

    const value = await items.findOneAndUpdate({ _id: item._id, ...condition }, { $set: { touched: true } }, { returnDocument: 'after' });

    expect(value).toEqual(matches ? touched : null);
    await expectDocs(read, [matches ? touched : item, sibling]);
  });

  it.each(cases)('deleteOne with $name', async ({ condition, matches }) => {
    const { items, read } = await seeded();

    const result = await items.deleteOne({ _id: item._id, ...condition });

    expect(result.deletedCount).toBe(matches ? 1 : 0);
    await expectDocs(read, matches ? [sibling] : [item, sibling]);
  });

  it.each(cases)('findOneAndDelete with $name', async ({ condition, matches }) => {
    const { items, read } = await seeded();

    const result = await items.findOneAndDelete({ _id: item._id, ...condition }, { includeResultMetadata: true });

    expect(result.value).toEqual(matches ? item : null);
    expect(result.lastErrorObject).toEqual({ n: matches ? 1 : 0 });
    await expectDocs(read, matches ? [sibling] : [item, sibling]);
  });

  it('upserts with {_id, field}: inserts from the filter when nothing matches, updates when it does', async () => {
    const { items, read } = await seeded();

    const inserted = await items.updateOne({ _id: 'new', field: 'value' }, { $set: { n: 1, arr: [] } }, { upsert: true });
    expect({ matched: inserted.matchedCount, modified: inserted.modifiedCount, upsertedId: inserted.upsertedId }).toEqual({
      matched: 0,
      modified: 0,
      upsertedId: 'new',
    });
    const updated = await items.updateOne({ _id: 'new', field: 'value' }, { $inc: { n: 1 } }, { upsert: true });
    expect({ matched: updated.matchedCount, modified: updated.modifiedCount, upsertedCount: updated.upsertedCount }).toEqual({
      matched: 1,
      modified: 1,
      upsertedCount: 0,
    });
    const after = await items.findOneAndUpdate(
      { _id: 'new2', field: 'value' },
      { $set: { n: 5, arr: [] } },
      { upsert: true, returnDocument: 'after' },
    );
    expect(after).toEqual({ _id: 'new2', field: 'value', n: 5, arr: [] });

    await expectDocs(read, [{ _id: 'new', field: 'value', n: 2, arr: [] }, { _id: 'new2', field: 'value', n: 5, arr: [] }, item, sibling]);
  });

  it('updates many with {_id, field}: the one matching document or none', async () => {
    const { items, read } = await seeded();

    const none = await items.updateMany({ _id: item._id, field: 'other' }, { $set: { touched: true } });
    expect({ matched: none.matchedCount, modified: none.modifiedCount }).toEqual({ matched: 0, modified: 0 });
    const one = await items.updateMany({ _id: item._id, field: 'value' }, { $set: { touched: true } });
    expect({ matched: one.matchedCount, modified: one.modifiedCount }).toEqual({ matched: 1, modified: 1 });

    await expectDocs(read, [touched, sibling]);
  });
});

describe('a find whose filter is {_id, <more conditions>} (rewritten to an aggregate by the relay)', () => {
  let collections = 0;

  /** A fresh collection holding the item and its sibling, written by one client and read by another. */
  async function seeded(): Promise<{ name: string; read: Collection<Item> }> {
    const name = `pinned_find_${collections++}`;
    await dbs[0].collection<Item>(name).insertMany([{ ...item }, { ...sibling }]);
    return { name, read: dbs[2].collection<Item>(name) };
  }

  const projections: Array<{ name: string; projection?: Record<string, 0 | 1 | boolean>; expected: Partial<Item> }> = [
    { name: 'no projection', expected: item },
    { name: 'inclusion', projection: { field: 1, n: true }, expected: { _id: item._id, field: item.field, n: item.n } },
    { name: 'inclusion without _id', projection: { _id: 0, n: 1 }, expected: { n: item.n } },
    { name: 'exclusion', projection: { arr: 0, n: false }, expected: { _id: item._id, field: item.field } },
  ];
  const readCases = cases.flatMap((c) => projections.map((p) => ({ ...c, ...p, name: `${c.name}, ${p.name}` })));

  it.each(readCases)('findOne and find().toArray() with $name', async ({ condition, matches, projection, expected }) => {
    const { read } = await seeded();
    const filter = { _id: item._id, ...condition };

    expect(await read.findOne(filter, { projection })).toEqual(matches ? expected : null);
    expect(await read.find(filter, { projection }).toArray()).toEqual(matches ? [expected] : []);
    expect(await read.find(filter, { projection, limit: 1, batchSize: 1, sort: { n: -1 } }).toArray()).toEqual(matches ? [expected] : []);
  });

  it("answers with the find's cursor: ns db.collection, id 0", async () => {
    const { name } = await seeded();
    const db = dbs[2];

    const reply = await db.command({ find: name, filter: { _id: item._id, field: 'value' }, batchSize: 1 });

    expect(reply.cursor).toEqual({ firstBatch: [item], id: 0, ns: `${db.databaseName}.${name}` });
  });

  it('passes a find with skip or hint through to FerretDB, which still answers it', async () => {
    const { read } = await seeded();

    expect(await read.find({ _id: item._id, field: 'value' }, { skip: 1 }).toArray()).toEqual([]);
    expect(await read.find({ _id: item._id, field: 'value' }, { skip: 0 }).toArray()).toEqual([item]);
    expect(await read.find({ _id: item._id, field: 'value' }).hint({ _id: 1 }).toArray()).toEqual([item]);
    expect(await read.find({ _id: item._id, field: 'value' }, { projection: { 'arr.0': 1 } }).toArray()).toHaveLength(1);
  });
});
