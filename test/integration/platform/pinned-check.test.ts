// A write pinned to one document (`{_id: X, <more conditions>}`: updateOne, findOneAndUpdate, deleteOne) is checked
// inside the relay's lock before it reaches FerretDB (temporal-dev/ferretdb/pinned.go). The relay decides that check from
// the document in SQLite when its matcher can tell (temporal-dev/ferretdb/pinnedread.go, pinnedmatch.go) and asks
// FerretDB's aggregate otherwise. Two engines get the same writes: one with that fast path, one with
// FERRETDB_RELAY_PINNED_READS=off (every check FerretDB's aggregate, MongoDB's matching); every reply must be the same
// BSON, byte for byte, the documents must end the same, and the first engine's log must show which writes it decided
// from SQLite and which it passed to the aggregate.
import { BSONRegExp, Decimal128, Double, Int32, Long, ObjectId, type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../temporal-dev/wait';
import { bsonHex as hex, countIn, exactTypes, startRelayEngine, stopRelayEngines, type RelayEngine } from '../../support/relay-engines';

const answeredLine = 'relay: pinned check answered from SQLite';
const passedLine = 'relay: pinned check passed to the aggregate';
const allOff = { FERRETDB_RELAY_LISTS: 'off', FERRETDB_RELAY_KEYS: 'off', FERRETDB_RELAY_ID_SETS: 'off', FERRETDB_RELAY_ID_PAGES: 'off' };

let fast: RelayEngine;
let slow: RelayEngine;
const dbName = 'pinned';
const coll = 'docs';

type Id = string | ObjectId;
const oid = new ObjectId('65a1b2c3d4e5f60718293a4b');
const big = Long.fromString('9007199254740993'); // 2^53 + 1: no double holds it

// Each field's values: every kind the matcher must tell apart (numbers of each type, strings that look like numbers,
// bools, null, missing, arrays, a document).
const missing = Symbol('missing');
const storeIds = ['st_a', 'st_b', ['st_a', 'st_x'], null, missing, new Int32(1)];
const statuses = ['pending', 'failed', 'delivering', ['pending'], null, missing, 'PENDING', new Double(1)];
const numbers = [
  new Int32(1),
  Long.fromNumber(1),
  new Double(1),
  new Double(1.5),
  '1',
  true,
  null,
  missing,
  [new Int32(2), new Double(1)],
  [],
  big,
  new Double(2 ** 53),
  new Int32(0),
  new Double(-0),
  Long.fromNumber(-3),
  { a: new Int32(1) },
];
const flags = [true, false, new Int32(0), new Int32(1), missing, null, [true], 'true'];

function doc(i: number, _id: Id = `pc_${String(i).padStart(3, '0')}`): Document {
  const fields: Document = { _id };
  const set = (key: string, values: unknown[], at: number) => {
    const v = values[at % values.length];
    if (v !== missing) fields[key] = v;
  };
  set('store_id', storeIds, i);
  set('status', statuses, Math.floor(i / 2));
  set('n', numbers, i);
  set('flag', flags, i * 3 + 1);
  return fields;
}

const plain = Array.from({ length: 48 }, (_, i) => doc(i));
const odd = [doc(48, oid), doc(49, 'pc_odd<id>'), doc(50, 'pc_é')];
/** The documents as the model of both engines: deletes that matched are applied to it. */
const model = new Map<string, Document>();
const keyOf = (id: Id) => (typeof id === 'string' ? `s:${id}` : `o:${id.toHexString()}`);

/** Ids to pin: every document, absent ones, and the ObjectId's hex as a string (stored as the same JSON). */
const ids: Id[] = [...[...plain, ...odd].map((d) => d._id as Id), 'pc_absent', new ObjectId('65a1b2c3d4e5f60718293a4c'), oid.toHexString()];

// Conditions the matcher takes (answered from SQLite unless a range meets an array) and some it does not.
const supported: Document[] = [
  { store_id: 'st_a' },
  { status: { $in: ['pending', 'failed'] } },
  { flag: true },
  { flag: false },
  { n: new Int32(1) },
  { n: Long.fromNumber(1) },
  { n: new Double(1) },
  { n: new Double(1.5) },
  { n: big },
  { n: new Double(2 ** 53) },
  { n: new Double(0) },
  { n: '1' },
  { flag: new Int32(1) },
  { n: { $gt: new Int32(0) } },
  { n: { $gte: new Double(1), $lt: Long.fromNumber(2) } },
  { n: { $lte: new Int32(-3) } },
  { n: { $gt: new Double(2 ** 53) } },
  { status: { $ne: 'pending' } },
  { n: { $ne: new Int32(1) } },
  { flag: { $ne: true } },
  { status: null },
  { n: { $ne: null } },
  { store_id: 'st_a', status: 'pending', n: new Int32(1) },
  { store_id: 'st_b', status: { $in: ['pending', 'failed'] }, n: Long.fromNumber(0) },
];
const unsupported: Document[] = [
  { n: { $in: [new Int32(1), new Int32(2)] } },
  { 'n.a': new Int32(1) },
  { n: { $exists: true } },
  { $or: [{ n: new Int32(1) }, { flag: true }] },
  { n: { $eq: new Int32(1) } },
  { status: { $nin: ['pending'] } },
  { n: { $gt: new Int32(0), $ne: new Int32(5) } },
  { status: new BSONRegExp('pend') },
  { n: { $gt: '0' } },
  { n: { a: new Int32(1) } },
  { store_id: 'st_a', n: { $in: [new Int32(1)] } },
];

const rangeOps = new Set(['$gt', '$gte', '$lt', '$lte']);

/** Whether the fast engine decides this write from SQLite: a shape it takes, an _id of one spelling, no range on an array. */
function answeredFromSqlite(id: Id, conditions: Document, shapeTaken: boolean): boolean {
  if (!shapeTaken) return false;
  if (typeof id === 'string' && (!/^[\x20-\x7e]*$/.test(id) || /["\\<>&]/.test(id))) return false;
  if (typeof id === 'string' && /^[0-9a-f]{24}$/.test(id) && model.has(keyOf(new ObjectId(id)))) return false; // the ObjectId's row: not X's type
  const stored = model.get(keyOf(id));
  if (!stored) return true;
  return Object.entries(conditions).every(
    ([field, cond]) =>
      !(Array.isArray(stored[field]) && typeof cond === 'object' && cond !== null && Object.keys(cond as object).some((k) => rangeOps.has(k))),
  );
}

/** The same command on both engines: the replies (or errors) must be the same bytes. Returns the fast engine's reply. */
async function writeOnBoth(command: Document): Promise<Document | undefined> {
  const outcomes = await Promise.all(
    [fast, slow].map((e) =>
      e.client
        .db(dbName)
        .command(command, exactTypes)
        .then(
          (reply) => ({ reply, bytes: hex(reply) }),
          (error: unknown) => ({ reply: undefined, bytes: `error ${String(error)}` }),
        ),
    ),
  );
  const same = (bytes: string) => bytes.replace(/127\.0\.0\.1:\d+/g, '<relay>'); // a connection FerretDB closed names its port
  expect(same(outcomes[0]!.bytes), JSON.stringify(command)).toEqual(same(outcomes[1]!.bytes));
  return outcomes[0]!.reply;
}

type Write = (filter: Document) => Document;
const updateOne: Write = (q) => ({ update: coll, updates: [{ q, u: { $inc: { hits: new Int32(1) } } }] });
const findOneAndUpdate: Write = (query) => ({ findAndModify: coll, query, update: { $inc: { hits: new Int32(1) } }, new: true });
const deleteOne: Write = (q) => ({ delete: coll, deletes: [{ q, limit: 1 }] });
const findOneAndDelete: Write = (query) => ({ findAndModify: coll, query, remove: true });

/** Each write on both engines; checks how many the fast engine decided from SQLite and passed to the aggregate. */
async function writesOnBoth(writes: Array<{ id: Id; conditions: Document; taken: boolean; command: Document }>) {
  const expected = { answered: 0, passed: 0 };
  const before = { answered: countIn(fast, answeredLine), passed: countIn(fast, passedLine) };
  let matched = 0;
  for (const w of writes) {
    expected[answeredFromSqlite(w.id, w.conditions, w.taken) ? 'answered' : 'passed']++;
    const reply = await writeOnBoth(w.command);
    const n = Number(reply?.n ?? reply?.lastErrorObject?.n ?? 0);
    matched += n;
    if (n > 0 && ('delete' in w.command || w.command.remove === true)) model.delete(keyOf(w.id));
  }
  const seen = { answered: countIn(fast, answeredLine) - before.answered, passed: countIn(fast, passedLine) - before.passed };
  expect(seen).toEqual(expected);
  return { ...seen, matched };
}

/** Every pinned write of `write` over the ids and conditions, _id first or last in the filter. */
function pinnedWrites(write: Write, conditionsList: Document[], taken: boolean, pick: (i: number) => boolean = () => true) {
  return conditionsList.flatMap((conditions, c) =>
    ids
      .filter((_, i) => pick(i + c))
      .map((id, i) => ({
        id,
        conditions,
        taken,
        command: write((i + c) % 2 === 0 ? { _id: id, ...conditions } : { ...conditions, _id: id }),
      })),
  );
}

/** The delivery a test claims and records, one compare-and-set at a time. */
const claimed = { _id: 'whd_claim', store_id: 'st_a', status: 'pending', attempts: new Int32(0), resend_token: null };

/** Every document of both engines, in _id order: the same bytes. */
async function expectSameDocuments(name = coll): Promise<Document[]> {
  const [mine, theirs] = await Promise.all(
    [fast, slow].map((e) => e.client.db(dbName).collection(name).find({}, exactTypes).sort({ _id: 1 }).toArray()),
  );
  expect(mine!.map(hex)).toEqual(theirs!.map(hex));
  return mine!;
}

beforeAll(async () => {
  [fast, slow] = await Promise.all([
    startRelayEngine('ferretdb-pinned-on', { ...allOff, FERRETDB_RELAY_PINNED_READS: 'on' }),
    startRelayEngine('ferretdb-pinned-off', { ...allOff, FERRETDB_RELAY_PINNED_READS: 'off' }),
  ]);
  const all = [...plain, ...odd];
  for (const engine of [fast, slow]) {
    const db = engine.client.db(dbName);
    await db.collection(coll).insertMany(all.map((d) => ({ ...d })));
    await db.collection<{ _id: string }>('deliveries').insertOne({ ...claimed });
    await db.collection<{ _id: string; v: number }>('versions').insertOne({ _id: 'ver', v: 0 });
  }
  for (const d of all) model.set(keyOf(d._id as Id), d);
  // The _id expression index comes from the indexer's next pass: until then checks go to the aggregate.
  for (const name of [coll, 'deliveries', 'versions']) {
    await waitFor(
      async () => {
        const answered = countIn(fast, answeredLine);
        await writeOnBoth({ update: name, updates: [{ q: { _id: 'pc_absent', store_id: 'st_a' }, u: { $set: { x: 1 } } }] });
        return countIn(fast, answeredLine) > answered;
      },
      { timeoutMs: 30_000, description: `the relay to decide a pinned check on ${name} from SQLite` },
    );
  }
}, 120_000);

afterAll(() => stopRelayEngines([fast, slow]));

describe('pinned writes decided from SQLite equal those checked by FerretDB aggregate', () => {
  it('updateOne over every supported condition and every kind of stored value: the same replies, decided from SQLite', async () => {
    const { answered, passed, matched } = await writesOnBoth(pinnedWrites(updateOne, supported, true));
    expect(answered).toBeGreaterThan(1000);
    expect(passed).toBeGreaterThan(0); // ranges on arrays, odd ids
    expect(matched).toBeGreaterThan(100);
    await expectSameDocuments();
  }, 300_000);

  it('findOneAndUpdate (the document after) over the same: the same replies and documents', async () => {
    const { answered, matched } = await writesOnBoth(pinnedWrites(findOneAndUpdate, supported, true, (i) => i % 3 === 0));
    expect(answered).toBeGreaterThan(300);
    expect(matched).toBeGreaterThan(30);
    await expectSameDocuments();
  }, 300_000);

  it('conditions the matcher does not take go to the aggregate, with the same replies', async () => {
    const { answered, passed } = await writesOnBoth([
      ...pinnedWrites(updateOne, unsupported, false, (i) => i % 2 === 0),
      ...pinnedWrites(findOneAndUpdate, unsupported, false, (i) => i % 5 === 0),
      // FerretDB closes the connection on a decimal128 (both engines alike): a few, as each costs a reconnect.
      ...pinnedWrites(updateOne, [{ n: Decimal128.fromString('1') }], false, (i) => i % 20 === 0),
    ]);
    expect(answered).toBe(0);
    expect(passed).toBeGreaterThan(200);
    await expectSameDocuments();
  }, 300_000);

  it('the driver own updateOne, findOneAndUpdate and deleteOne (document sequences): the same results', async () => {
    const answered = countIn(fast, answeredLine);
    const pinned = supported.slice(0, 12).map((conditions, i) => ({ id: ids[(i * 7) % ids.length]!, conditions }));
    for (const { id, conditions } of pinned) {
      const filter = { _id: id, ...conditions };
      const [mine, theirs] = await Promise.all(
        [fast, slow].map(async (e) => {
          const c = e.client.db(dbName).collection<{ _id: Id }>(coll);
          const updated = await c.updateOne(filter, { $inc: { hits: 1 } });
          const found = await c.findOneAndUpdate(filter, { $inc: { hits: 1 } }, { returnDocument: 'after', ...exactTypes });
          return { modified: updated.modifiedCount, matched: updated.matchedCount, found: found && hex(found) };
        }),
      );
      expect(mine, JSON.stringify(filter)).toEqual(theirs);
    }
    const expected = pinned.filter(({ id, conditions }) => answeredFromSqlite(id, conditions, true)).length;
    expect(expected).toBeGreaterThan(8);
    expect(countIn(fast, answeredLine) - answered).toBe(2 * expected);
    await expectSameDocuments();
  }, 300_000);

  it('deleteOne and findOneAndDelete over supported and unsupported conditions: the same replies, the same documents left', async () => {
    const { matched } = await writesOnBoth([
      ...pinnedWrites(deleteOne, supported.slice(0, 12), true, (i) => i % 4 === 0),
      ...pinnedWrites(findOneAndDelete, supported.slice(12), true, (i) => i % 4 === 1),
      ...pinnedWrites(deleteOne, unsupported.slice(0, 4), false, (i) => i % 4 === 2),
    ]);
    expect(matched).toBeGreaterThan(5);
    // Deleted documents are gone for the checks that follow: no match, decided from SQLite.
    const { answered, passed } = await writesOnBoth(pinnedWrites(updateOne, supported.slice(0, 4), true));
    expect(answered).toBeGreaterThan(passed);
    await expectSameDocuments();
  }, 300_000);

  it('each check sees the write before it: a delivery claimed, recorded, claimed again, one compare-and-set at a time', async () => {
    const claim = (attempt: number) => ({
      findAndModify: 'deliveries',
      query: { _id: 'whd_claim', store_id: 'st_a', status: { $in: ['pending', 'failed'] }, attempts: new Int32(attempt - 1) },
      update: { $set: { status: 'delivering', attempts: new Int32(attempt) } },
      new: true,
    });
    const record = (attempt: number, status: string) => ({
      findAndModify: 'deliveries',
      query: { _id: 'whd_claim', status: 'delivering', attempts: new Int32(attempt) },
      update: { $set: { status } },
      new: true,
    });
    const answered = countIn(fast, answeredLine);
    const outcomes: string[] = [];
    for (const [i, command] of [
      claim(1),
      claim(1),
      record(1, 'failed'),
      record(1, 'failed'),
      claim(2),
      claim(1),
      record(2, 'succeeded'),
      claim(3),
    ].entries()) {
      const reply = await writeOnBoth(command);
      outcomes.push(`${i}:${String(reply?.lastErrorObject?.n)}`);
    }
    expect(outcomes).toEqual(['0:1', '1:0', '2:1', '3:0', '4:1', '5:0', '6:1', '7:0']);
    expect(countIn(fast, answeredLine) - answered).toBe(8);
    const markCounted = {
      update: 'deliveries',
      updates: [
        {
          q: { _id: 'whd_claim', store_id: 'st_a', status: 'succeeded', resend_token: null, failure_counted: { $ne: true } },
          u: { $set: { failure_counted: true } },
        },
      ],
    };
    expect((await writeOnBoth(markCounted))?.nModified).toEqual(new Int32(1));
    expect((await writeOnBoth(markCounted))?.nModified).toEqual(new Int32(0));
    await expectSameDocuments('deliveries');
  }, 120_000);

  it('concurrent compare-and-set from many connections: one winner per round, decided from SQLite', async () => {
    const versions = fast.client.db(dbName).collection<{ _id: string; v: number }>('versions');
    const answered = countIn(fast, answeredLine);
    const rounds = 10;
    const contenders = 8;
    for (let round = 0; round < rounds; round++) {
      const results = await Promise.all(
        Array.from({ length: contenders }, () =>
          versions.findOneAndUpdate({ _id: 'ver', v: round }, { $inc: { v: 1 } }, { returnDocument: 'after' }),
        ),
      );
      expect(results.filter((r) => r !== null).length, `round ${round}`).toBe(1);
    }
    expect((await versions.findOne({ _id: 'ver' }))?.v).toBe(rounds);
    expect(countIn(fast, answeredLine) - answered).toBe(rounds * contenders);
  }, 120_000);
});
