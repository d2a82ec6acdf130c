// What this tests: the pack is never dropped in silence. line_items[0][quantity] is the pack (spec: "quantity
// is the pack") and gives the same answer as `pack` in every case: beside `offer` with no price in the item,
// 1 on an offer without packs (pack_unavailable, as pack 1 is), a quantity the offer lacks, and out of range.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testMongo, type TestMongo } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { seedCheckoutCatalog, type CheckoutCatalog } from '../../support/checkout-fixtures';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;
let catalog: CheckoutCatalog;

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  store = await createTestStore(mongo.db);
  catalog = await seedCheckoutCatalog(mongo.db, store.store._id);
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

const create = (json: Record<string, unknown>) => call(api, store.key, 'POST', '/v1/checkout/sessions', { json });
type Res = { status: number; body: any };
const answerOf = (res: Res) => (res.status === 201 ? [201, res.body.pack] : [res.status, res.body.error?.code]);

describe('line_items[0][quantity] is the pack', () => {
  it('beside offer, an item without a price sells the pack (not one unit)', async () => {
    const res = await create({ offer: catalog.oneOff._id, line_items: [{ quantity: 5 }] });
    expect([res.status, res.body.pack, res.body.amount_total]).toEqual([201, 5, null]);
    const form = await call(api, store.key, 'POST', '/v1/checkout/sessions', { form: `offer=${catalog.oneOff._id}&line_items[0][quantity]=10` });
    expect([form.status, form.body.pack]).toEqual([201, 10]);
  });

  it('the alias and the direct form give the same answer, case by case', async () => {
    const cases: [string, string, number][] = [
      ['1 on an offer without packs', catalog.monthly._id, 1],
      ['a pack the offer lacks', catalog.oneOff._id, 7],
      ['a pack the offer has', catalog.oneOff._id, 10],
      ['zero', catalog.oneOff._id, 0],
      ['over 999', catalog.oneOff._id, 1000],
    ];
    for (const [what, offer, units] of cases) {
      const direct = await create({ offer, pack: units });
      const aliasAlone = await create({ line_items: [{ price: offer, quantity: units }] });
      const aliasBesideOffer = await create({ offer, line_items: [{ quantity: units }] });
      expect([what, answerOf(aliasAlone)], what).toEqual([what, answerOf(direct)]);
      expect([what, answerOf(aliasBesideOffer)], what).toEqual([what, answerOf(direct)]);
      if (direct.status === 400) {
        expect([direct.body.error.param, aliasAlone.body.error.param, aliasBesideOffer.body.error.param]).toEqual([
          'pack',
          'line_items[0].quantity',
          'line_items[0].quantity',
        ]);
      }
    }
  });

  it('1 on an offer without packs is 400 pack_unavailable through the alias, as pack 1 is', async () => {
    const res = await create({ line_items: [{ price: catalog.monthly._id, quantity: 1 }] });
    expect([res.status, res.body.error?.code, res.body.error?.param]).toEqual([400, 'pack_unavailable', 'line_items[0].quantity']);
    // Without a quantity the offer sells without a pack.
    const plain = await create({ line_items: [{ price: catalog.monthly._id }] });
    expect([plain.status, plain.body.pack]).toEqual([201, null]);
  });

  it('pack takes precedence over the quantity', async () => {
    const res = await create({ offer: catalog.oneOff._id, pack: 5, line_items: [{ quantity: 10 }] });
    expect([res.status, res.body.pack]).toEqual([201, 5]);
  });
});
