// What this tests: how event fan-out (and pending_webhooks, resend) reads a store's webhook endpoints: one find by
// store, oldest first, exactly the store's endpoints with other stores' around, bounded by the per-store cap (one
// more is read), and a store past the cap (its slot counter bypassed) is an error instead of a fan-out that
// silently leaves endpoints out.
import { MongoClient, type CommandStartedEvent, type Db } from 'mongodb';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { uniqueDbName } from '../../support/env';
import { ensureIndexes } from '../../../store/indexes';
import { createStore } from '../../../store/stores';
import { endpointIdsOf, endpointsForFanOut, ENDPOINTS_PER_STORE, insertEndpoint } from '../../../store/webhook-endpoints';

let client: MongoClient;
let db: Db;
const finds: CommandStartedEvent[] = [];

beforeAll(async () => {
  client = await MongoClient.connect(inject('mongoUri'), { monitorCommands: true });
  client.on('commandStarted', (event) => {
    if (event.commandName === 'find' && event.command.find === 'webhook_endpoints') finds.push(event);
  });
  db = client.db(uniqueDbName());
  await ensureIndexes(db);
});
afterAll(async () => {
  await db.dropDatabase().catch(() => undefined);
  await client.close();
});

const storeOf = (name: string) => createStore(db, { name, country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });

/** An endpoint made `n` seconds into the day, straight into the collection (no slot taken). */
const add = async (storeId: string, n: number) =>
  (
    await insertEndpoint(
      db,
      { storeId, url: `https://example.com/${n}`, description: null, enabledEvents: ['*'], apiVersion: '2026-11-01' },
      Date.UTC(2026, 10, 1) + n * 1_000,
    )
  )._id;

it("reads exactly the store's endpoints, oldest first, in one find by store bounded by the cap", async () => {
  const [mine, other] = [await storeOf('Fan-out'), await storeOf('Neighbour')];
  const made: string[] = [];
  for (let n = 0; n < ENDPOINTS_PER_STORE; n++) {
    await add(other._id, n);
    made.push(await add(mine._id, n));
  }
  finds.length = 0;
  expect((await endpointsForFanOut(db, mine._id)).map((e) => e._id)).toEqual(made);
  expect(await endpointIdsOf(db, mine._id)).toEqual(made);
  expect(finds).toHaveLength(2);
  for (const { command } of finds) {
    expect(command.filter).toEqual({ store_id: mine._id });
    expect(command.limit).toBe(ENDPOINTS_PER_STORE + 1);
  }
});

it('a store past the cap is an error, not a fan-out that leaves endpoints out', async () => {
  const store = await storeOf('Past the cap');
  for (let n = 0; n <= ENDPOINTS_PER_STORE; n++) await add(store._id, n);
  await expect(endpointsForFanOut(db, store._id)).rejects.toThrow(`more than ${ENDPOINTS_PER_STORE} webhook endpoints`);
  await expect(endpointIdsOf(db, store._id)).rejects.toThrow(`more than ${ENDPOINTS_PER_STORE} webhook endpoints`);
});
