// Keyed once-only events: a fact emitted again by key (in turn or at once) writes one event, an attempt
// that died after emitting is not emitted twice, one that died before emitting is, and each claim carries `created`
// (a Date, what the claims' TTL index deletes by).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEventOnce } from '../../../services/events/emit-once';
import { emitEvent } from '../../../services/events/events';
import { collections } from '../../../store/collections';
import { createTestStore, type TestStore } from '../../support/api';
import { testMongo, type TestMongo } from '../../support/env';

let mongo: TestMongo;
let store: TestStore;

beforeAll(async () => {
  mongo = await testMongo();
  store = await createTestStore(mongo.db);
});
afterAll(async () => {
  await mongo?.close();
});

const claims = () => mongo.db.collection<{ _id: string; state: string; event_id: string | null; created: Date }>('event_emissions');
const input = (objectId: string) => ({ storeId: store.store._id, type: 'customer.updated', object: { id: objectId, object: 'customer' } });
const eventsAbout = async (objectId: string) =>
  (await collections(mongo.db).events.find({ store_id: store.store._id, type: 'customer.updated' }).toArray()).filter(
    (e) => JSON.parse(e.data_json).object.id === objectId,
  );

describe('emitEventOnce by key', () => {
  it('emitting the same fact three times writes one event; the claim is done, names it and carries created as a Date', async () => {
    const before = Date.now();
    for (let i = 0; i < 3; i++) await emitEventOnce({ db: mongo.db }, 'cus_once:updated', input('cus_once'));
    const events = await eventsAbout('cus_once');
    expect(events).toHaveLength(1);
    const claim = await claims().findOne({ _id: `${store.store._id}:cus_once:updated` });
    expect([claim?.state, claim?.event_id]).toEqual(['done', events[0]._id]);
    expect(claim?.created).toBeInstanceOf(Date);
    expect(claim!.created.getTime()).toBeGreaterThanOrEqual(before - 1000);
  });

  it('a retry after an attempt that emitted and died before marking its claim done emits nothing new', async () => {
    const created = new Date(Date.now() - 5_000);
    await claims().insertOne({ _id: `${store.store._id}:cus_died_after:updated`, state: 'emitting', event_id: null, created });
    // The attempt that died wrote the fact's events under the ids its claim fixes.
    const emitted = await emitEvent(
      { db: mongo.db },
      { ...input('cus_died_after'), fact: { key: `${store.store._id}:cus_died_after:updated`, ms: created.getTime() } },
    );
    await emitEventOnce({ db: mongo.db }, 'cus_died_after:updated', input('cus_died_after'));
    expect((await eventsAbout('cus_died_after')).map((e) => e._id)).toEqual([emitted._id]);
    const claim = await claims().findOne({ _id: `${store.store._id}:cus_died_after:updated` });
    expect([claim?.state, claim?.event_id, claim?.created]).toEqual(['done', emitted._id, created]);
  });

  it('ten executions emitting one fact at the same moment write one event (the subscription hand-off retried while its first try still runs)', async () => {
    await Promise.all(Array.from({ length: 10 }, () => emitEventOnce({ db: mongo.db }, 'cus_racing:updated', input('cus_racing'))));
    expect(await eventsAbout('cus_racing')).toHaveLength(1);
  });

  it('a retry after an attempt that died before emitting emits the event once', async () => {
    await claims().insertOne({
      _id: `${store.store._id}:cus_died_before:updated`,
      state: 'emitting',
      event_id: null,
      created: new Date(Date.now() - 5_000),
    });
    await emitEventOnce({ db: mongo.db }, 'cus_died_before:updated', input('cus_died_before'));
    await emitEventOnce({ db: mongo.db }, 'cus_died_before:updated', input('cus_died_before'));
    expect(await eventsAbout('cus_died_before')).toHaveLength(1);
  });
});
