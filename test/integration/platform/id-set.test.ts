// The relay answers a find of documents by a set of ids (`{_id: {$in: [strings]}, <string/bool conditions>}`, no sort,
// e.g. store/webhook-deliveries.ts deliveriesByIds) by looking each id up in the _id expression index, in the table's
// rowid order, which is FerretDB's order for a find without sort (temporal-dev/ferretdb/internal/paths/idset.go). Two engines get the
// same writes: one with that fast path, one with FERRETDB_RELAY_ID_SETS=off (FerretDB's own full scan, MongoDB's
// matching); every reply must be the same BSON, byte for byte, and the first engine's log must show it answered it
// itself, or passed it through where it must.
import { Binary, Double, Int32, ObjectId, type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../temporal-dev/wait';
import { bsonHex as hex, countIn, differential, startRelayEngine, stopRelayEngines, type RelayEngine } from '../../support/relay-engines';

const answeredLine = 'relay: id set answered from the index';
const passedLine = 'relay: id set passed through';
const allOff = { FERRETDB_RELAY_LISTS: 'off', FERRETDB_RELAY_KEYS: 'off', FERRETDB_RELAY_ID_PAGES: 'off' };

let fast: RelayEngine;
let slow: RelayEngine;
const dbName = 'idsets';

interface Doc extends Document {
  _id: string | ObjectId;
}

const { collectionOf, onBoth, served, expectPassedThrough } = differential<Doc>(() => [fast, slow], dbName, {
  answered: answeredLine,
  passed: passedLine,
});

const find = (filter: Document, more: Document = {}): Document => ({ find: 'deliveries', filter, ...more });

/** A deterministic shuffle, so the table's rowid order is neither id order nor the order of any $in. */
function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1_103_515_245 + 12_345) % 2 ** 31;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Ids of different lengths (byte order differs from number order), three stores interleaved, odd field types. */
function delivery(i: number): Doc {
  return {
    _id: i % 3 === 0 ? `whd_${i}` : `whd_${String(i).padStart(5, '0')}`,
    store_id: ['st_a', 'st_b', 'st_c'][i % 3 === 2 ? 1 : i % 5 === 0 ? 2 : 0],
    event: `evt_${Math.floor(i / 4)}`,
    status: ['pending', 'succeeded', 'failed'][i % 3],
    test: i % 7 === 0,
    attempts: new Int32(i % 4),
    ratio: new Double(i / 3),
    body: `{"n":${i}}`,
  };
}
const ids = Array.from({ length: 240 }, (_, i) => String(delivery(i)._id));

beforeAll(async () => {
  [fast, slow] = await Promise.all([
    startRelayEngine('ferretdb-idsets-on', { ...allOff, FERRETDB_RELAY_ID_SETS: 'on' }),
    startRelayEngine('ferretdb-idsets-off', { ...allOff, FERRETDB_RELAY_ID_SETS: 'off' }),
  ]);
  await onBoth('deliveries', (c) =>
    c.insertMany(
      shuffled(
        Array.from({ length: 240 }, (_, i) => delivery(i)),
        7,
      ),
    ),
  );
  // The _id expression index comes from the indexer's next pass: until then the find passes through.
  await waitFor(async () => (await served([find({ _id: { $in: ids.slice(0, 5) }, store_id: 'st_a' })])).answered === 1, {
    timeoutMs: 30_000,
    description: 'the relay to answer an id set from the _id index',
  });
}, 120_000);

afterAll(() => stopRelayEngines([fast, slow]));

describe('documents by a set of ids from the _id index equal FerretDB full scan (order and matching)', () => {
  it('sets in any order, with absent, repeated and other stores ids, and string, bool and $in conditions: all answered', async () => {
    const sets = [
      shuffled(ids.slice(0, 40), 1),
      shuffled([...ids.slice(100, 130), 'whd_missing', 'whd_1', 'whd_1', ''], 2),
      [...ids].reverse().slice(0, 60),
      ['whd_3'],
      shuffled(ids, 3).slice(0, 90),
    ];
    const commands: Document[] = [];
    for (const set of sets) {
      commands.push(
        find({ _id: { $in: set }, store_id: 'st_a' }),
        find({ store_id: 'st_b', _id: { $in: set } }),
        find({ _id: { $in: set } }),
        find({ _id: { $in: set }, store_id: 'st_a', test: false }),
        find({ _id: { $in: set }, test: true, status: { $in: ['pending', 'failed'] } }),
        find({ _id: { $in: set }, store_id: 'st_none' }),
      );
    }
    const { answered, passed, found } = await served(commands);
    expect({ answered, passed }).toEqual({ answered: commands.length, passed: 0 });
    expect(found).toBeGreaterThan(100);
    // The app's own call: the driver's find().toArray(), then its documents.
    const [mine, theirs] = await Promise.all(
      [fast, slow].map((e) =>
        collectionOf(e, 'deliveries')
          .find({ _id: { $in: sets[0]! }, store_id: 'st_a' })
          .toArray(),
      ),
    );
    expect(mine!.map(hex)).toEqual(theirs!.map(hex));
  }, 120_000);

  it('after deletes, re-inserts (a new rowid), updates (the same rowid) and a cursor-sized result: the same order', async () => {
    await onBoth('deliveries', (c) => c.deleteMany({ _id: { $in: ['whd_00001', 'whd_3', 'whd_00010'] } }));
    await onBoth('deliveries', (c) => c.insertMany([delivery(3), delivery(10)]));
    await onBoth('deliveries', (c) => c.updateOne({ _id: 'whd_00002' }, { $set: { status: 'succeeded', store_id: 'st_a' } }));
    await onBoth('deliveries', (c) => c.updateMany({ event: 'evt_5' }, { $set: { test: true } }));
    const set = shuffled(ids.slice(0, 30), 4);
    const { answered, found } = await served([
      find({ _id: { $in: set }, store_id: 'st_a' }),
      find({ _id: { $in: set }, test: true }),
      find({ _id: { $in: set } }, { limit: 4 }),
      find({ _id: { $in: set } }, { batchSize: 50 }),
      find({ _id: { $in: set } }, { limit: 2, singleBatch: true }),
      find({ _id: { $in: set } }, { batchSize: 3, singleBatch: true }),
      find({ _id: { $in: ids.slice(0, 100) } }), // 99 documents: just under FerretDB's first batch of 101
    ]);
    expect(answered).toBe(7);
    expect(found).toBeGreaterThan(100);
  }, 120_000);

  it('array-valued, missing, null and other-typed fields match as in MongoDB', async () => {
    const oid = new ObjectId('65a1b2c3d4e5f60718293a4b');
    const odd: Doc[] = [
      { _id: 'odd_array', store_id: ['st_a', 'st_x'], test: [true, false], status: 'pending' },
      { _id: 'odd_nested', store_id: [{ id: 'st_a' }], test: [{}], status: ['failed', 'x'] }, // FerretDB refuses nested arrays
      { _id: 'odd_missing' },
      { _id: 'odd_null', store_id: null, test: null, status: null },
      { _id: 'odd_numbers', store_id: new Int32(0), test: new Int32(0), status: new Double(1) },
      { _id: 'odd_types', store_id: oid, test: 'false', status: /pending/ },
      { _id: 'odd_bin', store_id: new Binary(Buffer.from('st_a')), test: false, status: { pending: true } },
      { _id: 'odd_empty', store_id: [], test: [], status: '' },
      // An ObjectId _id is stored as the JSON string of its hex, which the _id index finds for that string (FerretDB's
      // unique index refuses a string _id of the same hex beside it): the string asked for must not match it.
      { _id: oid, store_id: 'st_a', test: false },
    ];
    await onBoth('deliveries', (c) => c.insertMany(odd));
    const set = [...odd.map((d) => (typeof d._id === 'string' ? d._id : d._id.toHexString())), 'whd_6', 'whd_00004'];
    const commands = [
      find({ _id: { $in: set } }),
      find({ _id: { $in: set }, store_id: 'st_a' }),
      find({ _id: { $in: set }, store_id: 'st_x' }),
      find({ _id: { $in: set }, test: false }),
      find({ _id: { $in: set }, test: true }),
      find({ _id: { $in: set }, status: 'pending' }),
      find({ _id: { $in: set }, status: { $in: ['failed', ''] } }),
      find({ _id: { $in: set }, store_id: '' }),
      find({ _id: { $in: set }, test: 'false' }),
    ];
    const { answered, passed } = await served(commands);
    expect({ answered, passed }).toEqual({ answered: commands.length, passed: 0 });
  }, 120_000);

  it('finds the relay must not answer pass through to FerretDB unchanged', async () => {
    const set = ids.slice(0, 20);
    const shapes: Document[] = [
      find({ _id: { $in: set } }, { sort: { _id: 1 } }),
      find({ _id: { $in: set } }, { projection: { status: 1 } }),
      find({ _id: { $in: set } }, { skip: 2 }),
      find({ _id: { $in: set } }, { batchSize: 5 }), // fills the first batch: FerretDB keeps a cursor
      find({ _id: { $in: ids.slice(0, 130) } }), // more than the first batch of 101
      find({ _id: { $in: [...set, new Int32(1)] } }),
      find({ _id: { $in: [...set, new ObjectId('65a1b2c3d4e5f60718293a4b')] } }),
      find({ _id: { $in: ['a<b', ...set] } }), // an id whose JSON Go escapes
      find({ _id: { $in: ['é', ...set] } }),
      find({ _id: { $in: [] } }),
      find({ _id: { $in: set, $nin: ['whd_0'] } }),
      find({ _id: { $in: set }, attempts: new Int32(1) }), // a number condition
      find({ _id: { $in: set }, status: null }),
      find({ _id: { $in: set }, 'body.n': 'x' }),
      find({ _id: { $in: set }, status: { $ne: 'pending' } }),
      find({ _id: { $in: set }, $or: [{ test: true }] }),
      find({ _id: { $in: set }, store_id: 'st_a' }, { collation: { locale: 'simple' } }),
      find({ _id: 'whd_0', store_id: 'st_a' }),
    ];
    await expectPassedThrough(shapes);
    // A capped collection is ordered by FerretDB's record id, not rowid: it passes through.
    for (const engine of [fast, slow]) await engine.client.db(dbName).createCollection('capped', { capped: true, size: 1 << 20 });
    await onBoth('capped', (c) => c.insertMany(shuffled(ids.slice(0, 20), 5).map((_id) => ({ _id, store_id: 'st_a' }))));
    const cappedFind = { find: 'capped', filter: { _id: { $in: ids.slice(0, 20) }, store_id: 'st_a' } };
    // Once its _id index exists (the indexer's next pass), it passes through for being capped.
    await waitFor(
      async () => {
        expect((await served([cappedFind])).answered).toBe(0);
        return countIn(fast, 'capped collection') > 0;
      },
      { timeoutMs: 30_000, description: 'a capped collection to pass through for being capped' },
    );
  }, 120_000);
});
