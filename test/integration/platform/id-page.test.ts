// The relay answers a store's documents after an _id (store/events.ts findEventsAfter, the `listen` stream's poll:
// `{store_id, _id: {$gt: X}, api_version, test: false}` sorted by _id, limit 50) from an SQLite index of its own on
// (plain, store_id, _id), made once asked for when FerretDB declares the index {store_id: 1, _id: 1}
// (temporal-dev/ferretdb/internal/paths/idpage.go). Two engines get the same writes: one with that fast path, one with
// FERRETDB_RELAY_ID_PAGES=off (FerretDB's own full scan and sort, MongoDB's semantics); every reply must be the same
// BSON, byte for byte, and the first engine's log must show it answered it itself, or passed it through where it must.
import { Int32, ObjectId, type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../temporal-dev/wait';
import { bsonHex as hex, countIn, differential, startRelayEngine, stopRelayEngines, type RelayEngine } from '../../support/relay-engines';

const answeredLine = 'relay: id page answered from the index';
const passedLine = 'relay: id page passed through';
const allOff = { FERRETDB_RELAY_LISTS: 'off', FERRETDB_RELAY_KEYS: 'off', FERRETDB_RELAY_ID_SETS: 'off' };

let fast: RelayEngine;
let slow: RelayEngine;
const dbName = 'idpages';

interface Doc extends Document {
  _id: string | ObjectId;
}

const { collectionOf, onBoth, commandOnBoth, served, expectPassedThrough } = differential<Doc>(() => [fast, slow], dbName, {
  answered: answeredLine,
  passed: passedLine,
});

/** findEventsAfter's command (the driver's find().sort().limit()), with other conditions or bounds when given. */
const after = (
  store: string,
  id: Document | string,
  more: Document = { api_version: '2026-11-01', test: false },
  limit = 50,
  dir = 1,
  coll = 'events',
) => ({
  find: coll,
  filter: { store_id: store, _id: typeof id === 'string' ? { $gt: id } : id, ...more },
  sort: { _id: dir },
  limit,
});

/** Events of three stores interleaved, ids of different lengths (byte order is not number order), odd `test` and `api_version` values. */
function event(i: number): Doc {
  return {
    _id: i % 3 === 0 ? `evt_${i}` : `evt_${String(i).padStart(5, '0')}`,
    store_id: i % 5 === 4 ? 'st_b' : i % 7 === 6 ? 'st_c' : 'st_a',
    api_version: i % 9 === 0 ? '2026-09-01' : i % 41 === 0 ? ['2026-11-01'] : '2026-11-01',
    test: i % 11 === 0 ? true : i % 13 === 0 ? new Int32(0) : i % 17 === 0 ? [false] : i % 19 === 0 ? null : false,
    created: new Int32(1_800_000_000 + Math.floor(i / 3)),
    data_json: `{"n":${i}}`,
  };
}

beforeAll(async () => {
  [fast, slow] = await Promise.all([
    startRelayEngine('ferretdb-idpages-on', { ...allOff, FERRETDB_RELAY_ID_PAGES: 'on' }),
    startRelayEngine('ferretdb-idpages-off', { ...allOff, FERRETDB_RELAY_ID_PAGES: 'off' }),
  ]);
  await onBoth('events', (c) => c.createIndex({ store_id: 1, _id: 1 }));
  await onBoth('events', (c) => c.insertMany(Array.from({ length: 300 }, (_, i) => event(300 - i))));
  // The first query asks for the index (and passes through); the indexer's next pass makes it.
  await waitFor(async () => (await served([after('st_a', '')])).answered === 1, {
    timeoutMs: 30_000,
    description: 'the relay to answer a page from its store_id, _id index',
  });
}, 120_000);

afterAll(() => stopRelayEngines([fast, slow]));

describe("a store's documents after an _id from the relay index equal FerretDB full scan (MongoDB semantics)", () => {
  it('the stream walked page by page from the start and from deleted or absent cursors, each store: all answered', async () => {
    const commands: Document[] = [];
    for (const store of ['st_a', 'st_b', 'st_c', 'st_none']) {
      let cursor = '';
      for (;;) {
        const batch = await commandOnBoth(after(store, cursor, undefined, 7));
        commands.push(after(store, cursor, undefined, 7));
        if (batch.length < 7) break;
        cursor = String(batch[batch.length - 1]!._id);
      }
    }
    for (const cursor of ['evt_00001x', 'evt_2', 'evt_', 'evt_99999', 'a', '~', 'evt_00150', 'evt_150']) {
      commands.push(after('st_a', cursor), after('st_a', cursor, {}, 3), after('st_b', cursor, { test: true }, 2));
    }
    commands.push(
      after('st_a', { $gte: 'evt_00100' }, { test: false }, 10),
      after('st_a', { $lt: 'evt_00100' }, { test: false }, 10, -1),
      after('st_a', { $lte: 'evt_00100', $gt: 'evt_00050' }, {}, 100, -1),
      after('st_a', { $gt: 'evt_00050', $lt: 'evt_00060' }, { api_version: { $in: ['2026-09-01', '2026-11-01'] } }, 100),
      after('st_a', { $gt: '' }, { test: false, api_version: 'none' }, 1), // nothing matches: reads the store to its end
    );
    const { answered, passed } = await served(commands);
    expect({ answered, passed }).toEqual({ answered: commands.length, passed: 0 });
    // The app's own call, through the driver.
    const [mine, theirs] = await Promise.all(
      [fast, slow].map((e) =>
        collectionOf(e, 'events')
          .find({ store_id: 'st_a', _id: { $gt: 'evt_00010' }, api_version: '2026-11-01', test: false })
          .sort({ _id: 1 })
          .limit(50)
          .toArray(),
      ),
    );
    expect(mine!.map(hex)).toEqual(theirs!.map(hex));
  }, 180_000);

  it('after inserts, updates and deletes; a result that fills the first batch passes through', async () => {
    await onBoth('events', (c) => c.insertMany(Array.from({ length: 40 }, (_, i) => event(400 + i))));
    await onBoth('events', (c) => c.deleteMany({ _id: { $in: ['evt_00401', 'evt_00010', 'evt_3'] } }));
    await onBoth('events', (c) => c.updateMany({ store_id: 'st_c' }, { $set: { store_id: 'st_a' } }));
    await onBoth('events', (c) => c.updateOne({ _id: 'evt_00020' }, { $set: { test: true } }));
    const { answered } = await served([after('st_a', 'evt_00005'), after('st_a', 'evt_00390', {}), after('st_c', ''), after('st_a', '', {}, 100)]);
    expect(answered).toBe(4);
    // limit 101 without batchSize: 101 documents fill FerretDB's first batch and it keeps a cursor open; the relay passes it through.
    const [before, passed] = [countIn(fast, answeredLine), countIn(fast, passedLine)];
    const [mine, theirs] = await Promise.all(
      [fast, slow].map((e) =>
        collectionOf(e, 'events')
          .find({ store_id: 'st_a', _id: { $gt: '' } })
          .sort({ _id: 1 })
          .limit(101)
          .toArray(),
      ),
    );
    expect(mine!.map(hex)).toEqual(theirs!.map(hex));
    expect(mine).toHaveLength(101);
    expect([countIn(fast, answeredLine) - before, countIn(fast, passedLine) - passed]).toEqual([0, 1]);
  }, 120_000);

  it('finds the relay must not answer pass through to FerretDB unchanged', async () => {
    const shapes: Document[] = [
      { ...after('st_a', 'evt_00010'), sort: { _id: 1, created: 1 } },
      { ...after('st_a', 'evt_00010'), sort: { created: 1 } },
      { ...after('st_a', 'evt_00010'), projection: { test: 1 } },
      { ...after('st_a', 'evt_00010'), skip: 1 },
      { find: 'events', filter: { store_id: 'st_a', _id: { $gt: 'evt_00010' } }, sort: { _id: 1 } }, // no limit
      after('st_a', { $gt: new Int32(5) }),
      after('st_a', { $in: ['evt_00010'] }),
      after('st_a', { $gt: 'evt_00010', $ne: 'evt_00011' }),
      after('st_a', 'evt_00010', { test: new Int32(0) }),
      after('st_a', 'evt_00010', { test: null }),
      after('st_a', 'evt_00010', { 'data.n': 'x' }),
      { ...after('st_a', 'evt_00010'), filter: { store_id: { $in: ['st_a'] }, _id: { $gt: 'evt_00010' } } },
      { ...after('st_a', 'evt_00010'), filter: { _id: { $gt: 'evt_00010' }, test: false } }, // no store
      { ...after('st_a', 'evt_00010'), filter: { store_id: 'st_a', test: false } }, // no _id range
      after('st_a', 'evt_00010', {}, 200),
    ];
    await expectPassedThrough(shapes);
  }, 120_000);

  it('a collection with a non-string store_id or _id passes through until it is gone; one without the index is never answered', async () => {
    for (const odd of <Doc[]>[
      { _id: new ObjectId('65a1b2c3d4e5f60718293a4b'), store_id: 'st_a', api_version: '2026-11-01', test: false },
      { _id: 'evt_odd', store_id: ['st_a', 'st_b'], api_version: '2026-11-01', test: false },
      { _id: 'evt_missing', api_version: '2026-11-01', test: false },
    ]) {
      await onBoth('events', (c) => c.insertOne(odd));
      expect(await served([after('st_a', ''), after('st_b', 'evt_00100')]), String(odd._id)).toMatchObject({ answered: 0, passed: 2 });
      await onBoth('events', (c) => c.deleteOne({ _id: odd._id }));
    }
    expect((await served([after('st_a', 'evt_00100')])).answered).toBe(1);
    // Without FerretDB's {store_id: 1, _id: 1} (here {store_id: 1, _id: -1}) the relay makes no index and passes through.
    await onBoth('other', (c) => c.createIndex({ store_id: 1, _id: -1 }));
    await onBoth('other', (c) => c.insertMany(Array.from({ length: 20 }, (_, i) => event(i))));
    const probe = countIn(fast, 'relay index created');
    await onBoth('probe', (c) => c.createIndex({ store_id: 1, _id: 1 }));
    await onBoth('probe', (c) => c.insertOne({ _id: 'p', store_id: 'st_a' }));
    await waitFor(async () => (await served([after('st_a', '', {}, 5, 1, 'probe')])).answered === 1, { timeoutMs: 30_000, description: 'the probe' });
    expect(countIn(fast, 'relay index created')).toBeGreaterThan(probe);
    expect(await served([after('st_a', '', {}, 5, 1, 'other'), after('st_a', 'evt_5', {}, 5, 1, 'other')])).toMatchObject({ answered: 0, passed: 2 });
    // FerretDB's index dropped: ours goes too.
    const dropped = countIn(fast, 'relay index dropped');
    await onBoth('probe', (c) => c.dropIndex('store_id_1__id_1'));
    expect((await served([after('st_a', '', {}, 5, 1, 'probe')])).answered).toBe(0);
    await waitFor(() => countIn(fast, 'relay index dropped') > dropped, { timeoutMs: 30_000, description: 'the relay to drop its index' });
  }, 120_000);
});
