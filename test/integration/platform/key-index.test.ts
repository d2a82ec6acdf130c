// The relay answers a lookup by a unique key (findOne / find limit 1 whose filter is top-level string equalities on exactly
// the fields of a unique index, e.g. store/subscription-charges.ts findChargeByKey) from its SQLite index
// (temporal-dev/ferretdb/internal/paths/key.go). Two engines get the same writes: one with that fast path, one with
// FERRETDB_RELAY_KEYS=off (FerretDB's own full scan, MongoDB's matching); every answer must be the same BSON, byte for
// byte, and the first engine's log must show it answered the lookup itself, or passed it through where it must.
import { readFileSync } from 'node:fs';
import { Binary, BSON, Double, Int32, ObjectId, type Collection, type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../temporal-dev/wait';
import { countIn, exactTypes, type RelayEngine, startRelayEngine, stopRelayEngines } from '../../support/relay-engines';

const answeredLine = 'relay: key lookup answered from the index';
const passedLine = 'relay: key lookup passed through';

type Engine = RelayEngine;

const startEngine = (fast: boolean): Promise<Engine> =>
  startRelayEngine(fast ? 'ferretdb-keys-on' : 'ferretdb-keys-off', { FERRETDB_RELAY_KEYS: fast ? 'on' : 'off', FERRETDB_RELAY_LISTS: 'off' });

let fast: Engine;
let slow: Engine;
const dbName = 'keys';

interface Keyed extends Document {
  _id: string;
}

const collectionOf = (engine: Engine, name: string): Collection<Keyed> => engine.client.db(dbName).collection<Keyed>(name, exactTypes);

/** Applies the same write to both engines. */
async function onBoth(name: string, write: (c: Collection<Keyed>) => Promise<unknown>): Promise<void> {
  await write(collectionOf(fast, name));
  await write(collectionOf(slow, name));
}

const hex = (doc: Document | null): string | null => (doc === null ? null : Buffer.from(BSON.serialize(doc)).toString('hex'));

/** The same findOne on both engines, which must answer the same bytes; returns the fast engine's answer. */
async function findOnBoth(name: string, filter: Document): Promise<Keyed | null> {
  const mine = await collectionOf(fast, name).findOne(filter);
  const theirs = await collectionOf(slow, name).findOne(filter);
  expect(hex(mine), `${name} ${JSON.stringify(filter)}`).toEqual(hex(theirs));
  return mine;
}

/** Runs the lookups on both engines; returns how many the fast engine answered itself and how many it passed through. */
async function served(name: string, filters: Document[]): Promise<{ answered: number; passed: number; found: number }> {
  const [answered, passed] = [countIn(fast, answeredLine), countIn(fast, passedLine)];
  let found = 0;
  for (const filter of filters) if ((await findOnBoth(name, filter)) !== null) found++;
  return { answered: countIn(fast, answeredLine) - answered, passed: countIn(fast, passedLine) - passed, found };
}

/** Waits until the relay answers a lookup of this collection from its index (the indexer makes it a moment after the unique index). */
async function untilAnswered(name: string, filter: Document): Promise<void> {
  await waitFor(async () => (await served(name, [filter])).answered === 1, {
    timeoutMs: 30_000,
    description: `the relay to answer a lookup of ${name} from its key index`,
  });
}

/** Keys whose bytes differ only subtly: unicode, escapes, normalization forms, case, the empty string. */
const oddKeys = ['ключ', '日本語', 'a"b\\c', 'tab\there', 'line\nbreak', '😀', 'é', 'e\u0301', 'Case', 'case', '', ' ', '</script>', '\u2028'];

function charge(i: number, store: string, key: string): Keyed {
  return {
    _id: `sch_${store}_${i}`,
    store_id: store,
    key,
    amount: new Int32(i * 100),
    ratio: new Double(i / 3),
    at: new Date(1_800_000_000_000 + i),
  };
}

beforeAll(async () => {
  [fast, slow] = await Promise.all([startEngine(true), startEngine(false)]);
  await onBoth('charges', (c) => c.createIndex({ store_id: 1, key: 1 }, { unique: true }));
  const docs = [
    ...Array.from({ length: 60 }, (_, i) => charge(i, 'st_a', `key-${i}`)),
    ...Array.from({ length: 40 }, (_, i) => charge(i, 'st_b', `key-${i}`)), // the same keys in another store (ties on key)
    ...oddKeys.map((key, i) => charge(100 + i, 'st_a', key)),
  ];
  await onBoth('charges', (c) => c.insertMany(docs));
  await untilAnswered('charges', { store_id: 'st_a', key: 'key-1' });
}, 120_000);

afterAll(() => stopRelayEngines([fast, slow]));

describe('lookups by a unique key from the relay index equal FerretDB full scan (MongoDB semantics)', () => {
  it('present and absent keys, the same key in two stores, either field order, unicode and escaped strings: all answered', async () => {
    const filters: Document[] = [];
    for (let i = 0; i < 70; i += 3) filters.push({ store_id: 'st_a', key: `key-${i}` }, { key: `key-${i}`, store_id: 'st_b' });
    for (const key of oddKeys) filters.push({ store_id: 'st_a', key }, { store_id: 'st_b', key });
    filters.push({ store_id: 'st_none', key: 'key-1' }, { store_id: 'ST_A', key: 'key-1' }, { store_id: 'st_a', key: 'KEY-1' });
    const { answered, passed, found } = await served('charges', filters);
    expect(answered).toBe(filters.length);
    expect(passed).toBe(0);
    expect(found).toBe(20 + 14 + oddKeys.length); // key-0..57 in st_a (20), key-0..39 in st_b (14), each odd key in st_a
  }, 120_000);

  it('missing and null key fields keep the fast path and never match; find limit 1 and its reply equal too', async () => {
    await onBoth('charges', (c) =>
      c.insertMany([
        { _id: 'sch_missing_1', store_id: 'st_a' },
        { _id: 'sch_missing_2', store_id: 'st_a' },
        { _id: 'sch_null', store_id: 'st_a', key: null },
        { _id: 'sch_no_store', key: 'key-1' },
      ]),
    );
    const filters = [
      { store_id: 'st_a', key: 'null' },
      { store_id: 'st_a', key: '' },
      { store_id: 'st_a', key: 'key-1' },
      { store_id: '', key: 'key-1' },
    ];
    const { answered, found } = await served('charges', filters);
    expect(answered).toBe(filters.length);
    expect(found).toBe(2);
    // The raw command (limit 1, no singleBatch, a batchSize): the same first batch, a closed cursor and the namespace.
    const before = countIn(fast, answeredLine);
    const command = { find: 'charges', filter: { store_id: 'st_b', key: 'key-7' }, limit: 1, batchSize: 5 };
    const [mine, theirs] = await Promise.all([fast, slow].map((e) => e.client.db(dbName).command(command, exactTypes)));
    expect(countIn(fast, answeredLine) - before).toBe(1);
    const cursor = (r: Document) => ({ batch: (r.cursor.firstBatch as Document[]).map(hex), id: String(r.cursor.id), ns: r.cursor.ns });
    expect(cursor(mine!)).toEqual(cursor(theirs!));
    expect(mine!.cursor.firstBatch).toHaveLength(1);
    await onBoth('charges', (c) => c.deleteMany({ _id: { $in: ['sch_missing_1', 'sch_missing_2', 'sch_null', 'sch_no_store'] } }));
  }, 120_000);

  it('a collection holding one key field SQLite would compare unlike MongoDB passes through until it is gone', async () => {
    const oid = new ObjectId('65a1b2c3d4e5f60718293a4b');
    // Each odd value, and a string SQLite's ->> of it would equal (an ObjectId's hex, binData's base64, a regex's pattern).
    const odd: Array<[unknown, string]> = [
      [['arr-1', 'arr-2'], 'arr-2'], // MongoDB matches an array by its element
      [oid, oid.toHexString()],
      [new Int32(5), '5'],
      [new Double(2.5), '2.5'],
      [{ nested: 'x' }, '{"nested":"x"}'],
      [new Binary(Buffer.from('hi'), 0), 'aGk='],
      [/^pat$/, '^pat$'],
      [true, '1'],
      [new Date(0), '0'],
    ];
    for (const [value, lookalike] of odd) {
      await onBoth('charges', (c) => c.insertOne({ _id: 'sch_odd', store_id: 'st_a', key: value }));
      const { answered, passed, found } = await served('charges', [
        { store_id: 'st_a', key: lookalike },
        { store_id: 'st_a', key: 'key-3' },
      ]);
      expect({ answered, passed }, String(lookalike)).toEqual({ answered: 0, passed: 2 });
      expect(found, String(lookalike)).toBe(Array.isArray(value) ? 2 : 1);
      await onBoth('charges', (c) => c.deleteOne({ _id: 'sch_odd' }));
    }
    // An odd store_id counts too (every field of the key).
    await onBoth('charges', (c) => c.insertOne({ _id: 'sch_odd', store_id: ['st_a', 'st_c'], key: 'odd-store' }));
    expect((await served('charges', [{ store_id: 'st_c', key: 'odd-store' }])).passed).toBe(1);
    await onBoth('charges', (c) => c.deleteOne({ _id: 'sch_odd' }));
    const back = await served('charges', [{ store_id: 'st_a', key: 'key-3' }]);
    expect(back).toEqual({ answered: 1, passed: 0, found: 1 });
  }, 120_000);

  it('after updates and deletes the index answers what is there now', async () => {
    await onBoth('charges', (c) => c.updateOne({ _id: 'sch_st_a_4' }, { $set: { key: 'renamed-4', amount: new Int32(7) } }));
    await onBoth('charges', (c) => c.deleteOne({ _id: 'sch_st_a_5' }));
    await onBoth('charges', (c) => c.updateOne({ _id: 'sch_st_b_5' }, { $set: { store_id: 'st_a', key: 'key-5' } })); // takes the freed key
    const { answered, found } = await served('charges', [
      { store_id: 'st_a', key: 'key-4' },
      { store_id: 'st_a', key: 'renamed-4' },
      { store_id: 'st_a', key: 'key-5' },
      { store_id: 'st_b', key: 'key-5' },
    ]);
    expect(answered).toBe(4);
    expect(found).toBe(2);
    expect((await collectionOf(fast, 'charges').findOne({ store_id: 'st_a', key: 'key-5' }))?._id).toBe('sch_st_b_5');
  }, 120_000);

  it('lookups the relay must not answer pass through to FerretDB unchanged', async () => {
    const shapes: Array<(c: Collection<Keyed>) => Promise<unknown>> = [
      (c) => c.findOne({ store_id: 'st_a' }), // a subset of the key
      (c) => c.findOne({ key: 'key-1' }),
      (c) => c.findOne({ store_id: 'st_a', key: 'key-1', amount: new Int32(100) }), // more than the key
      (c) => c.findOne({ store_id: 'st_a', key: { $eq: 'key-1' } }),
      (c) => c.findOne({ store_id: 'st_a', key: { $in: ['key-1'] } }),
      (c) => c.findOne({ store_id: 'st_a', key: new Int32(1) }), // not a string
      (c) => c.findOne({ _id: 'sch_st_a_1', store_id: 'st_a', key: 'key-1' }),
      (c) => c.findOne({ store_id: 'st_a', key: 'key-1' }, { projection: { amount: 1 } }),
      (c) => c.findOne({ store_id: 'st_a', key: 'key-1' }, { sort: { _id: 1 } }),
      (c) => c.findOne({ store_id: 'st_a', key: 'key-1' }, { skip: 1 }),
      (c) => c.findOne({ store_id: 'st_a', key: 'key-1' }, { collation: { locale: 'simple' } }),
      (c) => c.find({ store_id: 'st_a', key: 'key-1' }).limit(2).toArray(),
      (c) => c.find({ store_id: 'st_a', key: 'key-1' }).toArray(), // no limit
      (c) => c.findOne({ 'store_id.x': 'st_a', key: 'key-1' }),
    ];
    for (const [i, shape] of shapes.entries()) {
      const answered = countIn(fast, answeredLine);
      const results = await Promise.allSettled([shape(collectionOf(fast, 'charges')), shape(collectionOf(slow, 'charges'))]);
      const outcome = (r: PromiseSettledResult<unknown>) =>
        r.status === 'rejected' ? `error ${String(r.reason)}` : hex(Array.isArray(r.value) ? { all: r.value } : (r.value as Document | null));
      expect(outcome(results[0]!), `shape ${i}`).toEqual(outcome(results[1]!));
      expect(countIn(fast, answeredLine) - answered, `shape ${i} was answered by the relay`).toBe(0);
    }
    // A non-unique index on exactly the filter's fields is not a key: the lookup asks for no index, and once the indexer has
    // passed (a probe's key, asked for after it, is answered) it still passes through.
    await onBoth('plain_index', (c) => c.createIndex({ code: 1 }));
    await onBoth('plain_index', (c) =>
      c.insertMany([
        { _id: 'a', code: 'x' },
        { _id: 'b', code: 'x' },
        { _id: 'c', code: 'y' },
      ]),
    );
    expect(await served('plain_index', [{ code: 'x' }, { code: 'y' }])).toEqual({ answered: 0, passed: 2, found: 2 });
    await onBoth('probe', (c) => c.createIndex({ code: 1 }, { unique: true }));
    await onBoth('probe', (c) => c.insertOne({ _id: 'p', code: 'p' }));
    await untilAnswered('probe', { code: 'p' });
    expect(await served('plain_index', [{ code: 'x' }, { code: 'y' }])).toEqual({ answered: 0, passed: 2, found: 2 });
  }, 120_000);

  it('a unique index created after the documents: passes through, then answered; dropped: passes through again', async () => {
    await onBoth('late', (c) => c.insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: `l${i}`, slug: `slug-${i}`, n: new Int32(i) }))));
    expect(await served('late', [{ slug: 'slug-3' }])).toEqual({ answered: 0, passed: 1, found: 1 });
    await onBoth('late', (c) => c.createIndex({ slug: 1 }, { unique: true, name: 'slug_unique' }));
    await untilAnswered('late', { slug: 'slug-4' });
    expect(await served('late', [{ slug: 'slug-5' }, { slug: 'slug-30' }])).toEqual({ answered: 2, passed: 0, found: 1 });
    const dropped = countIn(fast, 'relay index dropped');
    await onBoth('late', (c) => c.dropIndex('slug_unique'));
    expect((await served('late', [{ slug: 'slug-6' }])).answered).toBe(0);
    await waitFor(() => countIn(fast, 'relay index dropped') > dropped, { timeoutMs: 30_000, description: 'the relay to drop the key index' });
  }, 120_000);

  it('a dropped and recreated collection is answered from its new documents only', async () => {
    const make = async (prefix: string) => {
      await onBoth('again', (c) => c.createIndex({ store_id: 1, token: 1 }, { unique: true }));
      await onBoth('again', (c) =>
        c.insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: `${prefix}${i}`, store_id: 'st_a', token: `${prefix}-t${i}` }))),
      );
    };
    await make('first');
    await untilAnswered('again', { store_id: 'st_a', token: 'first-t1' });
    await onBoth('again', (c) => c.drop());
    expect((await served('again', [{ store_id: 'st_a', token: 'first-t1' }])).found).toBe(0);
    await make('second');
    await untilAnswered('again', { store_id: 'st_a', token: 'second-t2' });
    expect(
      await served('again', [
        { store_id: 'st_a', token: 'first-t2' },
        { store_id: 'st_a', token: 'second-t3' },
      ]),
    ).toEqual({
      answered: 2,
      passed: 0,
      found: 1,
    });
  }, 120_000);

  it('a unique key nobody looks up gets no index of ours (no write cost); the first lookup asks for one', async () => {
    const keyIndexesOf = (coll: string) =>
      readFileSync(fast.logFile, 'utf8')
        .split('\n')
        .filter((line) => line.includes('relay index created') && line.includes(`_ferretdb_${coll}`) && line.includes('_key_')).length;
    await onBoth('unlooked', (c) => c.createIndex({ store_id: 1, identifier: 1 }, { unique: true }));
    await onBoth('unlooked', (c) => c.insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: `u${i}`, store_id: 'st_a', identifier: `i${i}` }))));
    await onBoth('probe2', (c) => c.createIndex({ code: 1 }, { unique: true }));
    await onBoth('probe2', (c) => c.insertOne({ _id: 'p', code: 'p' }));
    await untilAnswered('probe2', { code: 'p' }); // the indexer has passed over the database since 'unlooked' got its unique key
    expect(keyIndexesOf('unlooked')).toBe(0);
    expect(await served('unlooked', [{ store_id: 'st_a', identifier: 'i3' }])).toEqual({ answered: 0, passed: 1, found: 1 });
    await untilAnswered('unlooked', { store_id: 'st_a', identifier: 'i4' });
    expect(keyIndexesOf('unlooked')).toBe(1);
  }, 120_000);
});
