// The relay answers a list page with conditions beside the store (store/events.ts listEvents: {test: false}, a type or
// {$in: [types]}, a created range; through store/pagination.ts findPage, first page and cursor form) from its list index,
// applying the conditions to the rows it reads in list order (temporal-dev/ferretdb/internal/paths/list.go). Two engines get the same
// writes: one with that fast path, one with FERRETDB_RELAY_LISTS=off (FerretDB's own full scan, MongoDB's matching);
// every page must be the same BSON, byte for byte, and the first engine's log must show it answered the page itself, or
// passed it through where it must.
import { Double, Int32, Long, ObjectId, type Collection, type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../temporal-dev/wait';
import { bsonHex, countIn, exactTypes, pagesOnBoth, startRelayEngine, stopRelayEngines, type RelayEngine } from '../../support/relay-engines';
import { createdFilter, NEWEST_FIRST, OLDEST_FIRST, type CreatedRange, type ListFilter } from '../../../store/pagination';

const answeredLine = 'relay: list page answered from the index';
const passedLine = 'relay: list page passed through';
const otherPathsOff = { FERRETDB_RELAY_KEYS: 'off', FERRETDB_RELAY_ID_SETS: 'off', FERRETDB_RELAY_ID_PAGES: 'off' };

let fast: RelayEngine;
let slow: RelayEngine;
const dbName = 'listconds';

interface Listed extends Document {
  _id: string;
}

const collectionOf = (engine: RelayEngine, name: string): Collection<Listed> => engine.client.db(dbName).collection<Listed>(name, exactTypes);

async function onBoth(name: string, write: (c: Collection<Listed>) => Promise<unknown>): Promise<void> {
  await write(collectionOf(fast, name));
  await write(collectionOf(slow, name));
}

const bytes = (docs: Document[]): string[] => docs.map(bsonHex);
const { pageOnBoth, walk } = pagesOnBoth(() => [fast, slow], collectionOf);

const T0 = 1_800_000_000;
const TYPES = ['customer.created', 'order.paid', 'order.refunded', 'invoice.sent'];

/** An event: created ties (five a second) in int32, double and int64; ids of different lengths; two stores interleaved; odd `test` values. */
function event(i: number): Listed {
  const created = T0 + Math.floor(i / 5);
  return {
    _id: `evt_${i % 2 ? i : String(i).padStart(5, '0')}`,
    store_id: i % 4 === 3 ? 'st_b' : 'st_a',
    type: i % 50 === 7 ? 'rare.event' : TYPES[i % TYPES.length],
    api_version: i % 6 === 0 ? '2026-09-01' : '2026-11-01',
    created: i % 3 === 0 ? new Int32(created) : i % 3 === 1 ? new Double(created) : Long.fromNumber(created),
    // false mostly; true, an array holding false, missing, 0, "false" and null now and then: MongoDB's {test: false} takes the first two kinds only.
    test:
      i % 13 === 0
        ? true
        : i % 17 === 0
          ? [true, false]
          : i % 19 === 0
            ? undefined
            : i % 23 === 0
              ? new Int32(0)
              : i % 29 === 0
                ? 'false'
                : i % 31 === 0
                  ? null
                  : false,
    tags: i % 11 === 0 ? ['order.paid', 'x'] : [],
    data_json: `{"n":${i}}`,
  };
}

const withoutUndefined = (doc: Listed): Listed => Object.fromEntries(Object.entries(doc).filter(([, v]) => v !== undefined)) as Listed;

beforeAll(async () => {
  [fast, slow] = await Promise.all([
    startRelayEngine('ferretdb-listconds-on', { ...otherPathsOff, FERRETDB_RELAY_LISTS: 'on' }),
    startRelayEngine('ferretdb-listconds-off', { ...otherPathsOff, FERRETDB_RELAY_LISTS: 'off' }),
  ]);
  await onBoth('events', (c) => c.insertMany(Array.from({ length: 400 }, (_, i) => withoutUndefined(event(i)))));
  const before = countIn(fast, answeredLine);
  await waitFor(async () => (await pageOnBoth('events', 'st_a', { test: false }, NEWEST_FIRST, 10)) && countIn(fast, answeredLine) > before, {
    timeoutMs: 30_000,
    description: 'the relay to answer a page from its list index',
  });
}, 120_000);

afterAll(() => stopRelayEngines([fast, slow]));

describe('list pages with conditions from the relay index equal FerretDB full scan (MongoDB semantics)', () => {
  it("listEvents' filters: test, a type, types, created ranges, walked both ways in both orders: all answered", async () => {
    const range = (r: CreatedRange) => createdFilter(r);
    // Each filter with its page sizes (small ones where few match: every page is a full scan on the other engine).
    const filters: Array<[ListFilter, number[]]> = [
      [{ test: false }, [30]],
      [{ test: true }, [3, 20]],
      [{ test: false, type: 'order.paid' }, [25]],
      [{ test: false, type: 'rare.event' }, [1, 3]], // one in 50: pages read on through several chunks
      [{ test: false, type: { $in: ['order.paid', 'invoice.sent'] } }, [40]],
      [{ test: false, type: 'no.such.type' }, [5]],
      [{ test: false, ...range({ gte: T0 + 10, lte: T0 + 30 }) }, [4, 30]],
      [{ test: false, ...range({ gt: T0 + 10, lt: T0 + 12 }), type: { $in: ['order.paid', 'rare.event', 'customer.created'] } }, [2]],
      [{ ...range({ lt: T0 + 3 }), test: false }, [3]],
      [{ test: false, api_version: '2026-11-01', tags: 'order.paid' }, [3]], // an array field holding the value
    ];
    for (const [filter, limits] of filters) {
      for (const limit of limits) {
        const served = countIn(fast, answeredLine);
        const { finds } = await walk('events', 'st_a', filter, limit);
        expect(countIn(fast, answeredLine) - served, `${JSON.stringify(filter)} limit ${limit}`).toBe(finds);
      }
    }
    const served = countIn(fast, answeredLine);
    const { finds, seen } = await walk('events', 'st_b', { test: false, api_version: '2026-11-01' }, 1);
    expect(countIn(fast, answeredLine) - served).toBe(finds);
    expect(seen).toBeGreaterThan(0);
  }, 300_000);

  it('after updates and deletes, and with a cursor document since deleted or outside the filter', async () => {
    await onBoth('events', (c) => c.updateMany({ type: 'invoice.sent', store_id: 'st_a' }, { $set: { test: true } }));
    await onBoth('events', (c) => c.deleteMany({ type: 'order.refunded', store_id: 'st_a' }));
    await onBoth('events', (c) => c.updateOne({ _id: 'evt_00012' }, { $set: { created: new Int32(T0 + 1_000) } }));
    const first = await pageOnBoth('events', 'st_a', { test: false }, NEWEST_FIRST, 5);
    if (first === 'cursor_missing') throw new Error('no first page');
    expect(first.docs[0]!._id).toBe('evt_00012');
    // A cursor outside the filter (a test event): the page continues after its place.
    const outside = await collectionOf(slow, 'events').findOne({ store_id: 'st_a', test: true });
    await walk('events', 'st_a', { test: false, type: { $in: ['order.paid', 'customer.created'] } }, 7);
    const served = countIn(fast, answeredLine);
    await pageOnBoth('events', 'st_a', { test: false }, NEWEST_FIRST, 4, String(outside!._id));
    await pageOnBoth('events', 'st_a', { test: false }, OLDEST_FIRST, 4, String(outside!._id), true);
    // The raw cursor query with a deleted cursor's values.
    const cursor = first.docs[2]!;
    await onBoth('events', (c) => c.deleteOne({ _id: cursor._id }));
    const after = {
      $and: [
        { store_id: 'st_a', test: false, type: { $in: ['order.paid', 'customer.created'] } },
        { $or: [{ created: { $lt: cursor.created } }, { created: cursor.created, _id: { $lt: cursor._id } }] },
      ],
    };
    const [mine, theirs] = await Promise.all(
      [fast, slow].map((e) => collectionOf(e, 'events').find(after).sort({ created: -1, _id: -1 }).limit(6).toArray()),
    );
    expect(bytes(mine!)).toEqual(bytes(theirs!));
    expect(mine!.length).toBe(6);
    expect(countIn(fast, answeredLine) - served).toBe(3);
  }, 300_000);

  it('a store of 2,500 rows none of which match: the page reads them all in chunks and answers empty', async () => {
    const many = Array.from({ length: 2_500 }, (_, i) => ({ _id: `big_${i}`, store_id: 'st_big', created: new Int32(T0 + (i % 97)), test: true }));
    await onBoth('events', (c) => c.insertMany(many));
    await onBoth('events', (c) => c.insertOne({ _id: 'big_match', store_id: 'st_big', created: new Int32(T0 - 1), test: false }));
    const served = countIn(fast, answeredLine);
    const page = await pageOnBoth('events', 'st_big', { test: false }, NEWEST_FIRST, 10);
    expect(page !== 'cursor_missing' && page.docs.map((d) => d._id)).toEqual(['big_match']);
    await pageOnBoth('events', 'st_big', { test: false, type: 'x' }, OLDEST_FIRST, 100);
    expect(countIn(fast, answeredLine) - served).toBe(2);
  }, 120_000);

  it('filters the relay must not answer pass through to FerretDB unchanged', async () => {
    const sort = { created: -1, _id: -1 } as const;
    const filters: Document[] = [
      { store_id: 'st_a', test: new Int32(0) }, // a number
      { store_id: 'st_a', test: null },
      { store_id: 'st_a', test: { $ne: true } },
      { store_id: 'st_a', test: { $in: [false] } }, // $in of a bool
      { store_id: 'st_a', type: { $in: ['order.paid', null] } },
      { store_id: 'st_a', type: { $in: [] } },
      { store_id: 'st_a', type: /order/ },
      { store_id: 'st_a', 'data.n': 'x' },
      { store_id: 'st_a', created: new Int32(T0 + 3) }, // created equal to a number
      { store_id: 'st_a', created: { $gte: 'x' } },
      { store_id: 'st_a', created: { $gte: new Int32(T0), $ne: new Int32(T0 + 1) } },
      { store_id: 'st_a', created: { $gte: Long.fromNumber(T0) }, $or: [{ test: false }] },
      { store_id: 'st_a', _id: 'evt_1' },
      { store_id: { $in: ['st_a'] }, test: false },
      { test: false }, // no store
      { $and: [{ store_id: 'st_a', test: false }, { test: false }] },
    ];
    for (const [i, filter] of filters.entries()) {
      const served = countIn(fast, answeredLine);
      const [mine, theirs] = await Promise.all([fast, slow].map((e) => collectionOf(e, 'events').find(filter).sort(sort).limit(10).toArray()));
      expect(bytes(mine!), `filter ${i}`).toEqual(bytes(theirs!));
      expect(countIn(fast, answeredLine) - served, `filter ${i} was answered by the relay`).toBe(0);
    }
  }, 120_000);

  it('a collection holding a document SQLite would order unlike MongoDB passes through with conditions too', async () => {
    await onBoth('events', (c) => c.insertOne({ _id: 'evt_oid_store', store_id: new ObjectId(), created: new Int32(T0), test: false }));
    const [served, passed] = [countIn(fast, answeredLine), countIn(fast, passedLine)];
    await walk('events', 'st_a', { test: false, type: 'order.paid' }, 40);
    expect(countIn(fast, answeredLine) - served).toBe(0);
    expect(countIn(fast, passedLine) - passed).toBeGreaterThan(0);
    await onBoth('events', (c) => c.deleteOne({ _id: 'evt_oid_store' }));
    const again = countIn(fast, answeredLine);
    const { finds } = await walk('events', 'st_a', { test: false, type: 'order.paid' }, 40);
    expect(countIn(fast, answeredLine) - again).toBe(finds);
  }, 120_000);
});
