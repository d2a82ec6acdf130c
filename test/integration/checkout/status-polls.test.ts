// What this tests: the hosted page's status polls (GET /c/:id/status) are cheap however many arrive:
// an open session's workflow is queried at most once per ATTEMPT_PROBE_FRESH_MS per API process
// (queries counted by a client interceptor), and a settled session answers from its document alone.
import { Client, type WorkflowClientInterceptor } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTEMPT_PROBE_FRESH_MS } from '../../../services/checkout/attempt-probe';
import { startTestApi, type TestApi, type TestStore } from '../../support/api';
import {
  call,
  createSession,
  createTestStore,
  seedCheckoutCatalog,
  startCheckoutStack,
  type CheckoutCatalog,
  type CheckoutStack,
} from '../../support/checkout-fixtures';

let stack: CheckoutStack;
let store: TestStore;
let catalog: CheckoutCatalog;
let polled: TestApi;
let queries = 0;

const countQueries: WorkflowClientInterceptor = {
  async query(input, next) {
    queries += 1;
    return next(input);
  },
};

beforeAll(async () => {
  stack = await startCheckoutStack('status-polls');
  store = await createTestStore(stack.mongo.db);
  catalog = await seedCheckoutCatalog(stack.mongo.db, store.store._id);
  // An API whose Temporal client counts every query it sends.
  const client = new Client({
    connection: stack.temporal.client.connection,
    namespace: stack.temporal.namespace,
    interceptors: { workflow: [countQueries] },
  });
  polled = await startTestApi({ db: stack.mongo.db, temporal: client, taskQueue: stack.taskQueue });
}, 120_000);
afterAll(async () => {
  await polled?.close();
  await stack?.close();
});

async function poll(id: string): Promise<{ status: string; payment_status: string }> {
  const res = await fetch(`${polled.url}/c/${id}/status`, { headers: { accept: 'application/json' } });
  expect(res.status).toBe(200);
  return (await res.json()) as { status: string; payment_status: string };
}

describe('status polls', () => {
  it('60 polls of an open session, 30 at once and 30 in a row, query its workflow at most once per freshness interval', async () => {
    const session = (await createSession(stack.api, store, { offer: catalog.oneOff._id })).body as { id: string };
    const before = queries;
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 30 }, () => poll(session.id)));
    for (let i = 0; i < 30; i++) answers.push(await poll(session.id));
    const elapsed = Date.now() - started;
    expect(new Set(answers.map((a) => `${a.status}/${a.payment_status}`))).toEqual(new Set(['open/unpaid']));
    const bound = Math.ceil(elapsed / ATTEMPT_PROBE_FRESH_MS) + 1;
    expect(queries - before).toBeGreaterThanOrEqual(1);
    expect(queries - before).toBeLessThanOrEqual(bound);
    expect(queries - before).toBeLessThan(60);
  });

  it('a settled (expired) session answers every poll from its document: no query at all', async () => {
    const session = (await createSession(stack.api, store, { offer: catalog.oneOff._id })).body as { id: string };
    expect((await call(stack.api, store.key, 'POST', `/v1/checkout/sessions/${session.id}/expire`)).status).toBe(200);
    const before = queries;
    for (let i = 0; i < 20; i++) expect((await poll(session.id)).status).toBe('expired');
    expect(queries - before).toBe(0);
  });
});
