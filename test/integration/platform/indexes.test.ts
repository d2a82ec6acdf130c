// The declared indexes: created at start on the local engine (options it refuses dropped), idempotently.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INDEXES, ensureIndexes } from '../../../store/indexes';
import { testMongo, type TestMongo } from '../../support/env';

let mongo: TestMongo;

beforeAll(async () => {
  mongo = await testMongo();
});

afterAll(async () => {
  await mongo.close();
});

const sameKey = (a: Record<string, unknown>, b: Record<string, unknown>) => JSON.stringify(a) === JSON.stringify(b);

describe('ensureIndexes', () => {
  it('creates every declared index, and running it again (a second process starting) changes nothing', async () => {
    await ensureIndexes(mongo.db);
    await ensureIndexes(mongo.db);
    for (const declared of INDEXES) {
      const existing = await mongo.db.collection(declared.collection).listIndexes().toArray();
      expect(
        existing.some((found) => sameKey(found.key, declared.key)),
        `${declared.collection} ${JSON.stringify(declared.key)}`,
      ).toBe(true);
    }
  });

  it('keeps uniqueness where it was declared without an option the engine may refuse', async () => {
    await ensureIndexes(mongo.db);
    const customers = mongo.db.collection('customers');
    await customers.insertOne({ _id: 'cus_a' as never, store_id: 'st_1', email: 'a@example.com', email_scope: '' });
    await expect(customers.insertOne({ _id: 'cus_b' as never, store_id: 'st_1', email: 'a@example.com', email_scope: '' })).rejects.toMatchObject({
      code: 11000,
    });
    // A test clock's customers are another scope: the same e-mail once more there, and only once.
    await customers.insertOne({ _id: 'cus_c' as never, store_id: 'st_1', email: 'a@example.com', email_scope: 'clock_1', test_clock: 'clock_1' });
    await expect(
      customers.insertOne({ _id: 'cus_d' as never, store_id: 'st_1', email: 'a@example.com', email_scope: 'clock_1', test_clock: 'clock_1' }),
    ).rejects.toMatchObject({ code: 11000 });
  });

  it("retires customers' store+email unique key once, giving documents written before it their email scope", async () => {
    const db = mongo.client.db(`${mongo.db.databaseName}_old`);
    try {
      const customers = db.collection('customers');
      await customers.createIndex({ store_id: 1, email: 1 }, { unique: true });
      await customers.insertMany([
        { _id: 'cus_old' as never, store_id: 'st_1', email: 'b@example.com' },
        { _id: 'cus_oldclock' as never, store_id: 'st_1', email: 'c@example.com', test_clock: 'clock_9' },
      ]);
      await ensureIndexes(db);
      expect((await customers.listIndexes().toArray()).map((i) => i.name)).not.toContain('store_id_1_email_1');
      expect(
        await customers
          .find({}, { projection: { email_scope: 1 } })
          .sort({ _id: 1 })
          .toArray(),
      ).toEqual([
        { _id: 'cus_old', email_scope: '' },
        { _id: 'cus_oldclock', email_scope: 'clock_9' },
      ]);
      await expect(customers.insertOne({ _id: 'cus_new' as never, store_id: 'st_1', email: 'b@example.com', email_scope: '' })).rejects.toMatchObject(
        { code: 11000 },
      );
    } finally {
      await db.dropDatabase();
    }
  });

  it('lets stores without a slug coexist while a set slug stays findable', async () => {
    await ensureIndexes(mongo.db);
    const stores = mongo.db.collection('stores');
    await stores.insertMany([
      { _id: 'st_x' as never, slug: null },
      { _id: 'st_y' as never, slug: null },
      { _id: 'st_z' as never, slug: 'zeta' },
    ]);
    expect(await stores.findOne({ slug: 'zeta' })).toMatchObject({ _id: 'st_z' });
  });
});
