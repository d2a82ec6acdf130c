// The local engine answers like MongoDB where FerretDB alone does not (temporal-dev/ferretdb/relay.go): it applies update,
// findAndModify and delete atomically under concurrent clients, and a write that breaks a unique index fails with code 11000.
import { MongoClient, MongoServerError, type Collection, type Db } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { uniqueDbName } from '../support/env';

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
        db.collection<Hits>('upsert_key').findOneAndUpdate({ key: 'k' }, { $setOnInsert: { created: new Date() }, $inc: { hits: 1 } }, { upsert: true }),
      ),
    );

    const docs = await dbs[0].collection<Hits>('upsert_key').find({ key: 'k' }).toArray();
    expect(docs).toHaveLength(1);
    expect(docs[0].hits).toBe(10);
  });

  it('upserts one document for an _id 10 clients upsert at once', async () => {
    await fromAllClients(clientCount, (db) =>
      retryOnDuplicateKey(() =>
        db.collection<Hits>('upsert_id').findOneAndUpdate({ _id: 'k' }, { $setOnInsert: { created: new Date() }, $inc: { hits: 1 } }, { upsert: true }),
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
