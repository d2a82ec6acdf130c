// What this tests: recovery of the hosted checkout payment when a worker dies (SIGKILL) holding the
// charge activity after the provider approved: money taken, Temporal not told. A second worker runs
// the activity again under the attempt's key within 15 s of the kill (the provider answers the first
// result): the session completes with one provider charge, one order and one checkout.session.completed.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_CHARGES_COLLECTION } from '../../../adapters/provider/test-connection';
import { collections } from '../../../store/collections';
import { findCheckoutSession } from '../../../store/checkout-sessions';
import { checkoutAttemptKey } from '../../../workflows/checkout-session/messages';
import { startTestApi, type TestApi, type TestStore } from '../../support/api';
import { buyerForm, createSession, createTestStore, seedCheckoutCatalog } from '../../support/checkout-fixtures';
import { crashScenario, RECOVERY_BOUND_MS, type CrashScenario } from '../../support/crash-recovery';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from '../../support/env';

let mongo: TestMongo;
let temporal: TestTemporal;
let api: TestApi;
let store: TestStore;
let scenario: CrashScenario | null = null;
const taskQueue = uniqueTaskQueue('crash-checkout');

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  // The page waits up to 60 s for the outcome, so the buyer's submit sees the recovered result.
  api = await startTestApi({ db: mongo.db, temporal: temporal.client, taskQueue, config: { checkoutPayWaitMs: 60_000 } });
  store = await createTestStore(mongo.db);
});

afterAll(async () => {
  await scenario?.stop();
  await api?.close();
  await temporal?.close();
  await mongo?.close();
});

it('a worker killed holding chargeCheckoutAttempt after the approval: the session completes on the survivor within 15 s, charged once', async () => {
  const catalog = await seedCheckoutCatalog(mongo.db, store.store._id);
  scenario = await crashScenario(mongo, temporal, taskQueue, 'chargeCheckoutAttempt');
  const created = await createSession(api, store, { offer: catalog.oneOff._id });
  expect(created.status).toBe(201);
  const id: string = created.body.id;

  const paying = fetch(`${api.url}/c/${id}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(buyerForm({ method: 'card', card_number: '4242424242424242' })).toString(),
  });
  await scenario.killWhenHeld();
  const { ms } = await scenario.recovered('checkout payment', async () => {
    const session = await findCheckoutSession(mongo.db, store.store._id, id);
    return session?.status === 'complete' ? session : null;
  });
  expect(ms).toBeLessThan(RECOVERY_BOUND_MS);

  const answer = await paying;
  expect(answer.status).toBeLessThan(500);
  expect((await findCheckoutSession(mongo.db, store.store._id, id))?.payment_status).toBe('paid');
  expect(await mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ key: checkoutAttemptKey(id, 1) })).toBe(1);
  expect(await mongo.db.collection(TEST_CHARGES_COLLECTION).countDocuments({ key: { $regex: id } })).toBe(1);
  expect(await mongo.db.collection('orders').countDocuments({ checkout_session: id })).toBe(1);
  const completed = () =>
    collections(mongo.db).events.countDocuments({ store_id: store.store._id, type: 'checkout.session.completed', data_json: { $regex: id } });
  expect(await completed()).toBe(1);
}, 180_000);
