// What this tests: recovery of a webhook delivery when a worker dies (SIGKILL) holding the attempt
// activity after the receiver answered and the attempt was recorded. A second worker carries the
// delivery workflow past the attempt within 15 s of the kill; the delivery is succeeded, one attempt counted.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { emitEvent } from '../../../services/events/events';
import { ensureIndexes } from '../../../store/indexes';
import { createStore } from '../../../store/stores';
import { insertEndpoint } from '../../../store/webhook-endpoints';
import { deliveryIdFor, findDelivery } from '../../../store/webhook-deliveries';
import { stateQuery, webhookDeliveryWorkflowId } from '../../../workflows/webhook-delivery/messages';
import { crashScenario, RECOVERY_BOUND_MS, type CrashScenario } from '../../support/crash-recovery';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from '../../support/env';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver';

let mongo: TestMongo;
let temporal: TestTemporal;
let receiver: WebhookReceiver;
let scenario: CrashScenario | null = null;
const taskQueue = uniqueTaskQueue('crash-delivery');

beforeAll(async () => {
  mongo = await testMongo();
  await ensureIndexes(mongo.db);
  temporal = await testTemporal();
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await scenario?.stop();
  await receiver?.close();
  await temporal?.close();
  await mongo?.close();
});

it('a worker killed holding attemptWebhookDelivery: the delivery workflow takes the outcome on the survivor within 15 s, one attempt counted', async () => {
  const store = await createStore(mongo.db, { name: 'Crash delivery store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  const endpoint = await insertEndpoint(mongo.db, {
    storeId: store._id,
    url: receiver.url('/crash'),
    description: null,
    enabledEvents: ['*'],
    apiVersion: '2026-11-01',
  });
  scenario = await crashScenario(mongo, temporal, taskQueue, 'attemptWebhookDelivery');

  const event = await emitEvent(
    { db: mongo.db, temporal: temporal.client, taskQueue },
    { storeId: store._id, type: 'customer.created', object: { id: 'cust_crash', object: 'customer' } },
  );
  const deliveryId = deliveryIdFor(event._id, endpoint._id);
  await scenario.killWhenHeld();
  const { ms } = await scenario.recovered('webhook delivery', async () => {
    // The workflow stays open for resends; it has taken the attempt's result once its state says so.
    const state = await temporal.client.workflow.getHandle(webhookDeliveryWorkflowId(deliveryId)).query(stateQuery);
    return state.status === 'succeeded' ? state : null;
  });
  expect(ms).toBeLessThan(RECOVERY_BOUND_MS);

  expect(await findDelivery(mongo.db, store._id, deliveryId)).toMatchObject({ status: 'succeeded', attempts: 1, last_response_status: 200 });
  // At least once: the receiver got the event; a repeat of the unreported attempt is allowed, never a loss.
  expect(receiver.hits.length).toBeGreaterThanOrEqual(1);
  for (const hit of receiver.hits) expect(hit.event.id).toBe(event._id);
}, 180_000);
