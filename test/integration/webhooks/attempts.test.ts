// What this tests: one delivery attempt (the delivery workflow's activity) run directly against the
// database and a local HTTPS receiver, as Temporal runs it when a worker dies or an execution overlaps a
// retry: a retried attempt whose outcome is recorded makes no POST and leaves the wait to the schedule;
// the claim, the outcome record, the resend reset and the exhaustion count are compare-and-set, also
// between processes (one MongoClient each); a success resets the endpoint's failures even when they rose
// during its POST, and writes nothing to the endpoint when there is nothing to reset.
import { MongoClient, type Db } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { emitEvent } from '../../../services/events/events';
import { ensureIndexes } from '../../../store/indexes';
import { createStore } from '../../../store/stores';
import {
  AUTO_DISABLE_AFTER,
  AUTO_DISABLED_REASON,
  countEndpointExhaustion,
  endpointsCollection,
  findEndpoint,
  insertEndpoint,
} from '../../../store/webhook-endpoints';
import {
  claimAttempt,
  deliveriesCollection,
  ensureDelivery,
  findDelivery,
  markFailureCounted,
  recordAttemptOutcome,
  failureChanges,
  type WebhookDeliveryDoc,
} from '../../../store/webhook-deliveries';
import { attemptWebhookDelivery, type AttemptInput } from '../../../services/webhooks/attempts';
import { createWebhookHttpClient, type WebhookHttpClient } from '../../../adapters/webhooks/http';
import { RETRY_DELAYS_MS } from '../../../domain/webhook-retry';
import { testMongo, type TestMongo } from '../../support/env';
import { startWebhookReceiver, testCa, type Responder, type WebhookReceiver } from '../../support/webhook-receiver';

let mongo: TestMongo;
/** Other processes' connections to the same database. */
let clients: MongoClient[] = [];
let receiver: WebhookReceiver;
let http: WebhookHttpClient;
const responders = new Map<string, Responder>();

/** The database as the i-th of several processes sees it (each its own MongoClient). */
const dbOf = (i: number): Db => clients[i % clients.length].db(mongo.db.databaseName);

beforeAll(async () => {
  mongo = await testMongo();
  clients = await Promise.all(Array.from({ length: 4 }, () => MongoClient.connect(inject('mongoUri'))));
  await ensureIndexes(mongo.db);
  receiver = await startWebhookReceiver({ respond: (hit) => (responders.get(hit.path) ?? (() => 200))(hit) });
  http = createWebhookHttpClient({ allowedHosts: ['localhost'], ca: (await testCa()).caCert });
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await receiver?.close();
  await mongo?.close();
});

let paths = 0;

/** A store, an endpoint on its own receiver path answering with `respond`, and one pending delivery to it. */
async function delivery(respond: Responder) {
  const store = await createStore(mongo.db, { name: 'Attempt store', country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  const path = `/attempt-${++paths}`;
  responders.set(path, respond);
  const endpoint = await insertEndpoint(mongo.db, {
    storeId: store._id,
    url: receiver.url(path),
    description: null,
    enabledEvents: ['*'],
    apiVersion: '2026-11-01',
  });
  // No Temporal client: the event is written and its delivery created here, run by hand below.
  const event = await emitEvent(
    { db: mongo.db },
    { storeId: store._id, type: 'customer.created', object: { id: 'cust_attempt', object: 'customer' } },
  );
  const doc = await ensureDelivery(mongo.db, event, endpoint._id);
  const input = (extra: Partial<AttemptInput>): AttemptInput => ({
    deliveryId: doc._id,
    storeId: store._id,
    endpointId: endpoint._id,
    reset: false,
    jitter: 0,
    ...extra,
  });
  return {
    storeId: store._id,
    endpointId: endpoint._id,
    deliveryId: doc._id,
    hits: () => receiver.hits.filter((hit) => hit.path === path),
    run: (extra: Partial<AttemptInput>, db: Db = mongo.db) => attemptWebhookDelivery({ db, http }, input(extra)),
    record: () => findDelivery(mongo.db, store._id, doc._id) as Promise<WebhookDeliveryDoc>,
    set: (fields: Partial<WebhookDeliveryDoc>) => deliveriesCollection(mongo.db).updateOne({ _id: doc._id }, { $set: fields }),
  };
}

describe('a retried attempt', () => {
  it('finds its outcome recorded (failed): returns it without a POST and with the rest of the wait, not attempt N + 1', async () => {
    const d = await delivery(() => 500);
    const first = await d.run({ attempt: 1 });
    expect(first).toMatchObject({ outcome: 'failed', nextAttemptInMs: RETRY_DELAYS_MS[0], state: { status: 'failed', attempts: 1 } });

    // The worker died after saving `failed`, before the activity completed: Temporal runs it again.
    const retried = await d.run({ attempt: 1 });
    expect(retried).toMatchObject({ outcome: 'failed', state: { status: 'failed', attempts: 1, last_error: 'HTTP 500' } });
    expect(retried.nextAttemptInMs).toBeGreaterThan(RETRY_DELAYS_MS[0] - 1_000);
    expect(retried.nextAttemptInMs).toBeLessThanOrEqual(RETRY_DELAYS_MS[0] + 1_000);
    expect(d.hits()).toHaveLength(1);
    expect(await d.record()).toMatchObject({ status: 'failed', attempts: 1 });

    // The workflow, after the wait, asks for attempt 2.
    expect(await d.run({ attempt: 2 })).toMatchObject({ outcome: 'failed', state: { attempts: 2 } });
    expect(d.hits()).toHaveLength(2);
  });

  it('left delivering (its worker died mid-POST) makes the same attempt again, not the next one', async () => {
    const d = await delivery(() => 200);
    await d.set({ status: 'delivering', attempts: 3, next_attempt_at: null });
    expect(await d.run({ attempt: 3 })).toMatchObject({ outcome: 'succeeded', state: { status: 'succeeded', attempts: 3 } });
    expect(d.hits()).toHaveLength(1);
  });

  it('of a resend resets once: the retry finds its resend applied and attempt 1 recorded, and POSTs nothing', async () => {
    const d = await delivery(() => 500);
    await d.set({ status: 'exhausted', attempts: 8, next_attempt_at: null, failure_counted: true });
    expect(await d.run({ reset: true, resendToken: 'resend-1', attempt: 1 })).toMatchObject({ outcome: 'failed', state: { attempts: 1 } });
    const retried = await d.run({ reset: true, resendToken: 'resend-1', attempt: 1 });
    expect(retried).toMatchObject({ outcome: 'failed', state: { status: 'failed', attempts: 1 } });
    expect(retried.nextAttemptInMs).toBeGreaterThan(RETRY_DELAYS_MS[0] - 1_000);
    expect(d.hits()).toHaveLength(1);

    // A later resend is a new token: reset again, attempt 1 again.
    expect(await d.run({ reset: true, resendToken: 'resend-2', attempt: 1 })).toMatchObject({ outcome: 'failed', state: { attempts: 1 } });
    expect(d.hits()).toHaveLength(2);
  });
});

describe('compare-and-set on the delivery', () => {
  it('claims attempt N only from N - 1 attempts; otherwise reports the record as it is', async () => {
    const d = await delivery(() => 200);
    await d.set({ status: 'failed', attempts: 2 });
    expect(await claimAttempt(mongo.db, d.storeId, d.deliveryId, 2)).toMatchObject({ kind: 'recorded', doc: { status: 'failed', attempts: 2 } });
    expect(await claimAttempt(mongo.db, d.storeId, d.deliveryId, 5)).toMatchObject({ kind: 'recorded', doc: { status: 'failed', attempts: 2 } });
    expect(await claimAttempt(mongo.db, 'store_other', d.deliveryId, 3)).toEqual({ kind: 'gone' });

    const claims = await Promise.all(Array.from({ length: 5 }, (_, i) => claimAttempt(dbOf(i), d.storeId, d.deliveryId, 3)));
    expect(claims.map((c) => c.kind)).toEqual(Array(5).fill('claimed'));
    expect(await d.record()).toMatchObject({ status: 'delivering', attempts: 3 });
  });

  it('keeps the first outcome of an attempt and never writes a stale one over a later attempt', async () => {
    const d = await delivery(() => 200);
    const failed = failureChanges({ ok: false, responseStatus: 502, error: 'HTTP 502', durationMs: 5 }, Date.now() + 60_000);
    await d.set({ status: 'delivering', attempts: 2 });
    expect((await recordAttemptOutcome(mongo.db, d.deliveryId, 2, failed)).applied).toBe(true);

    const late = failureChanges({ ok: false, responseStatus: 503, error: 'HTTP 503', durationMs: 7 }, Date.now() + 60_000);
    const duplicate = await recordAttemptOutcome(mongo.db, d.deliveryId, 2, late);
    expect(duplicate).toMatchObject({ applied: false, doc: { last_error: 'HTTP 502' } });
    expect(await d.record()).toMatchObject({ status: 'failed', attempts: 2, last_error: 'HTTP 502', last_response_status: 502 });

    await d.set({ status: 'delivering', attempts: 3 });
    expect((await recordAttemptOutcome(mongo.db, d.deliveryId, 2, late)).applied).toBe(false);
    expect(await d.record()).toMatchObject({ status: 'delivering', attempts: 3, last_error: 'HTTP 502' });
  });

  it('counts an exhaustion once however many callers mark it at the same time', async () => {
    const d = await delivery(() => 200);
    await d.set({ status: 'exhausted', attempts: 8, failure_counted: false });
    const exhausted = await d.record();
    const marks = await Promise.all(Array.from({ length: 8 }, (_, i) => markFailureCounted(dbOf(i), d.storeId, exhausted)));
    expect(marks.filter(Boolean)).toHaveLength(1);
    expect((await d.record()).failure_counted).toBe(true);
    // Even a caller holding the record as it was before the count.
    expect(await markFailureCounted(mongo.db, d.storeId, exhausted)).toBe(false);

    // After a resend, its exhaustion is a new one: counted once more.
    await d.set({ resend_token: 'resend-1', failure_counted: false });
    const again = await d.record();
    const resentMarks = await Promise.all([markFailureCounted(dbOf(0), d.storeId, again), markFailureCounted(dbOf(1), d.storeId, again)]);
    expect(resentMarks.filter(Boolean)).toHaveLength(1);
    expect(await markFailureCounted(mongo.db, d.storeId, again)).toBe(false);

    // A caller still holding the record from before the resend cannot count the resend's exhaustion.
    await d.set({ failure_counted: false });
    expect(await markFailureCounted(mongo.db, d.storeId, exhausted)).toBe(false);
    expect((await d.record()).failure_counted).toBe(false);
  });

  it('two overlapping executions of the last attempt both POST but add one exhaustion to the endpoint', async () => {
    // Both requests are held until both arrived, so both executions are past their claim.
    const d = await delivery(heldUntilBoth());
    await d.set({ status: 'delivering', attempts: 8, next_attempt_at: null });
    const [a, b] = await Promise.all([d.run({ attempt: 8 }, dbOf(0)), d.run({ attempt: 8 }, dbOf(1))]);

    expect([a.outcome, b.outcome]).toEqual(['exhausted', 'exhausted']);
    expect(d.hits()).toHaveLength(2);
    expect(await d.record()).toMatchObject({ status: 'exhausted', attempts: 8, failure_counted: true });
    expect((await findEndpoint(mongo.db, d.storeId, d.endpointId))!.consecutive_failures).toBe(1);

    // And a retry after that finds it recorded and counted.
    expect(await d.run({ attempt: 8 })).toMatchObject({ outcome: 'exhausted' });
    expect(d.hits()).toHaveLength(2);
    expect((await findEndpoint(mongo.db, d.storeId, d.endpointId))!.consecutive_failures).toBe(1);
  });
});

/** Holds each request until two have arrived (or 5 s passed), then answers 500. */
function heldUntilBoth(): Responder {
  let arrived = 0;
  let release: () => void = () => undefined;
  const both = new Promise<void>((resolve) => (release = resolve));
  const deadline = new Promise<void>((resolve) => setTimeout(resolve, 5_000).unref());
  return async () => {
    arrived += 1;
    if (arrived === 2) release();
    await Promise.race([both, deadline]);
    return 500;
  };
}

describe('endpoint failures', () => {
  it('a success sets consecutive_failures to 0 even when another delivery exhausted during its POST', async () => {
    let endpointId = '';
    const d = await delivery(async () => {
      // Another delivery to the endpoint is counted exhausted while this POST is in flight.
      await endpointsCollection(mongo.db).updateOne({ _id: endpointId }, { $inc: { consecutive_failures: 1 } });
      return 200;
    });
    endpointId = d.endpointId;
    expect((await findEndpoint(mongo.db, d.storeId, d.endpointId))!.consecutive_failures).toBe(0);

    expect(await d.run({ attempt: 1 })).toMatchObject({ outcome: 'succeeded' });
    expect((await findEndpoint(mongo.db, d.storeId, d.endpointId))!.consecutive_failures).toBe(0);
  });

  it('a success on an endpoint with no failures writes nothing to it; one with failures is reset to 0', async () => {
    // What each update of the endpoint matched, as the database answered it (n: 0 = nothing written).
    const monitored = await MongoClient.connect(inject('mongoUri'), { monitorCommands: true });
    const endpoints = endpointsCollection(mongo.db).collectionName;
    const updates = new Set<number>();
    const matched: number[] = [];
    monitored.on('commandStarted', (e) => void (e.command.update === endpoints && updates.add(e.requestId)));
    monitored.on('commandSucceeded', (e) => void (updates.delete(e.requestId) && matched.push((e.reply as { n: number }).n)));
    try {
      const d = await delivery(() => 200);
      const db = monitored.db(mongo.db.databaseName);
      expect(await d.run({ attempt: 1 }, db)).toMatchObject({ outcome: 'succeeded' });
      expect(matched).toEqual([0]);
      expect((await findEndpoint(mongo.db, d.storeId, d.endpointId))!.consecutive_failures).toBe(0);

      await endpointsCollection(mongo.db).updateOne({ _id: d.endpointId }, { $set: { consecutive_failures: 3 } });
      await d.set({ status: 'failed', attempts: 1 });
      expect(await d.run({ attempt: 2 }, db)).toMatchObject({ outcome: 'succeeded' });
      expect(matched).toEqual([0, 1]);
      expect((await findEndpoint(mongo.db, d.storeId, d.endpointId))!.consecutive_failures).toBe(0);
    } finally {
      await monitored.close();
    }
  });

  it('exhaustions of many deliveries to one endpoint at the same time are all counted, and the 20th disables it', async () => {
    const d = await delivery(() => 500);
    const counted = await Promise.all(
      Array.from({ length: AUTO_DISABLE_AFTER }, (_, i) => countEndpointExhaustion(dbOf(i), d.storeId, d.endpointId)),
    );
    expect(counted.map((endpoint) => endpoint!.consecutive_failures).sort((a, b) => a - b)).toEqual(
      Array.from({ length: AUTO_DISABLE_AFTER }, (_, i) => i + 1),
    );
    expect(await findEndpoint(mongo.db, d.storeId, d.endpointId)).toMatchObject({
      status: 'disabled',
      consecutive_failures: AUTO_DISABLE_AFTER,
      disabled_reason: AUTO_DISABLED_REASON,
    });
  });

  it('an endpoint the team disabled keeps its disabling (no automatic reason) when exhaustions pass the limit', async () => {
    const d = await delivery(() => 500);
    await endpointsCollection(mongo.db).updateOne(
      { _id: d.endpointId },
      { $set: { status: 'disabled', disabled_reason: null, consecutive_failures: AUTO_DISABLE_AFTER - 1 } },
    );
    await Promise.all([0, 1, 2].map((i) => countEndpointExhaustion(dbOf(i), d.storeId, d.endpointId)));
    expect(await findEndpoint(mongo.db, d.storeId, d.endpointId)).toMatchObject({
      status: 'disabled',
      consecutive_failures: AUTO_DISABLE_AFTER + 2,
      disabled_reason: null,
    });
  });

  it('an exhaustion counted under another store changes nothing', async () => {
    const d = await delivery(() => 500);
    expect(await countEndpointExhaustion(mongo.db, 'store_other', d.endpointId)).toBeNull();
    expect((await findEndpoint(mongo.db, d.storeId, d.endpointId))!.consecutive_failures).toBe(0);
  });
});
