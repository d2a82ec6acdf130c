// Schemathesis (installed into .tools/venv by `npm run setup`) fuzzes every operation of
// /v1/openapi.json against a real API, worker, Temporal and FerretDB with a real key: no 5xx, and no
// response that breaks its own documented schema. Routes added later are covered automatically. It also
// reports how many operations answered a 2xx (the document's links let the stateful phase walk real objects).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Worker } from '@temporalio/worker';
import { testMongo, testTemporal, uniqueTaskQueue, type TestMongo, type TestTemporal } from '../support/env';
import { createTestStore, startTestApi, type TestApi, type TestStore } from '../support/api';
import { createBillingWorker } from '../../worker/main';
import { createOffer, createProduct } from '../../store/catalog';
import { listRequestLogs } from '../../store/request-logs';
import { seedCatalog, seedSubscription } from '../support/subscriptions';
import { quoteToolOutput } from '../support/quoted-output';

const SCHEMATHESIS = '.tools/venv/bin/schemathesis';
/** Fixed by default so a CI failure reproduces; SCHEMATHESIS_SEED explores other inputs. */
const SEED = process.env.SCHEMATHESIS_SEED ?? '20261101';
const EXAMPLES_PER_OPERATION = process.env.SCHEMATHESIS_MAX_EXAMPLES ?? '12';
/**
 * The coverage phase (every boundary and negative value of every parameter) takes minutes with 50
 * operations on this 2-core machine, so `npm test` runs examples, fuzzing (positive and negative
 * inputs) and stateful sequences; SCHEMATHESIS_PHASES=examples,coverage,fuzzing,stateful runs all.
 */
const PHASES = process.env.SCHEMATHESIS_PHASES ?? 'examples,fuzzing,stateful';
/** Operations answering a Server-Sent Events stream (the `listen` extension). */
const STREAMING_OPERATIONS = ['get_webhook_endpoints_listen'];
/** `npm run fuzz` (all phases, more examples) runs for about ten minutes. */
const RUN_TIMEOUT_MS = Number(process.env.SCHEMATHESIS_TIMEOUT_MS ?? 400_000);

let mongo: TestMongo;
let temporal: TestTemporal;
let worker: Worker;
let running: Promise<void>;
let api: TestApi;
let apiClosed = false;
let store: TestStore;

beforeAll(async () => {
  mongo = await testMongo();
  temporal = await testTemporal();
  const taskQueue = uniqueTaskQueue('fuzz');
  worker = await createBillingWorker({ connection: temporal.nativeConnection, taskQueue, db: mongo.db, temporal: temporal.client });
  running = worker.run();
  // The fuzzer sends thousands of requests: the limits are lifted so it reaches the routes themselves.
  // The document's example endpoint host is allowed (as a local receiver would be), so creates reach their links.
  api = await startTestApi({
    db: mongo.db,
    temporal: temporal.client,
    taskQueue,
    config: { keyRateLimit: 1_000_000, ipRateLimit: 1_000_000, webhookAllowedHosts: ['hooks.example.com'] },
  });
  store = await createTestStore(mongo.db);
  // Subscriptions exist only through a paid checkout: a few seeded ones give the lists' links objects to walk.
  const catalog = await seedCatalog(mongo.db, store.store._id);
  for (const offer of [catalog.monthly, catalog.trial, catalog.monthly]) {
    await seedSubscription({ db: mongo.db, temporal: temporal.client, taskQueue }, { store: store.store, offer, product: catalog.product });
  }
  const product = await createProduct(mongo.db, { storeId: store.store._id, name: 'Fuzz product' });
  await createOffer(mongo.db, {
    storeId: store.store._id,
    productId: product._id,
    name: 'Fuzz monthly',
    slug: 'fuzz-monthly',
    type: 'recurring',
    billingCycle: 'monthly',
    prices: [{ currency: 'brl', amount: 4990, default: true }],
  });
}, 120_000);

afterAll(async () => {
  if (!apiClosed) await api?.close();
  if (worker) {
    worker.shutdown();
    await running;
  }
  await temporal?.close();
  await mongo?.close();
});

/** An operation's path template as a pattern over request paths (`/v1/customers/{id}` matches one segment for `{id}`). */
const templatePattern = (template: string) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);

/**
 * Which operations the run reached with a 2xx, read from the store's request log (every call the fuzzer
 * made with the key): how deep the run went, beside schemathesis's own count of cases and failures.
 */
async function operationsReached2xx(): Promise<{ total: number; reached: string[]; never: string[] }> {
  const document = (await (await fetch(`${api.url}/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, { operationId: string }>> };
  // Templates with fewer parameters first: a literal segment (`/listen`) wins over `{id}`.
  const operations = Object.entries(document.paths)
    .flatMap(([template, methods]) => Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), template, id: op.operationId })))
    .filter((op) => !STREAMING_OPERATIONS.includes(op.id))
    .sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0))
    .map((op) => ({ ...op, pattern: templatePattern(op.template) }));
  // Closing the API flushes its request log (otherwise written every half second).
  await api.close();
  apiClosed = true;
  const calls = await listRequestLogs(mongo.db, store.store._id, undefined, 1_000_000);
  const reached = new Set<string>();
  for (const call of calls) {
    if (call.status < 200 || call.status > 299) continue;
    const op = operations.find((o) => o.method === call.method && o.pattern.test(call.path));
    if (op) reached.add(op.id);
  }
  const ids = operations.map((o) => o.id).sort();
  return { total: ids.length, reached: ids.filter((id) => reached.has(id)), never: ids.filter((id) => !reached.has(id)) };
}

function run(command: string, args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: { ...process.env, NO_COLOR: '1', PYTHONUNBUFFERED: '1' } });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => {
      output += `\n[killed after ${timeoutMs} ms]`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

it(
  'every operation of /v1/openapi.json answers fuzzed input without a 5xx and within its documented schemas',
  async () => {
    expect(existsSync(SCHEMATHESIS), `${SCHEMATHESIS} is missing: run npm run setup`).toBe(true);
    const { code, output } = await run(
      SCHEMATHESIS,
      [
        'run',
        `${api.url}/v1/openapi.json`,
        '--header',
        `Authorization: Bearer ${store.key}`,
        '--checks',
        'not_a_server_error,response_schema_conformance',
        '--max-examples',
        EXAMPLES_PER_OPERATION,
        '--seed',
        SEED,
        '--request-timeout',
        '20',
        '--no-shrink',
        '--phases',
        PHASES,
        // One worker: CPython 3.11's ast module can fail with "AST constructor recursion depth
        // mismatch" when schemathesis compiles in several threads at once (a crash of the tool, not
        // of the API), which made the run flaky.
        '--workers',
        '1',
        // A valid request opens a stream that lasts until the client leaves: the fuzzer would only
        // time out. Its refusals and its stream are tested in test/integration/webhooks/listen.test.ts.
        ...STREAMING_OPERATIONS.flatMap((id) => ['--exclude-operation-id', id]),
      ],
      RUN_TIMEOUT_MS,
    );
    // The whole report is kept for reading (test/artifacts is not committed).
    mkdirSync('test/artifacts', { recursive: true });
    writeFileSync('test/artifacts/schemathesis.log', output);
    // The summary (operations, test cases, failures) is what docs/testing.md quotes; quoted, since its
    // closing banner would otherwise read in CI's log as a pytest run of no test.
    console.log(quoteToolOutput('schemathesis', code === 0 ? output.slice(output.lastIndexOf('API Operations')) : output));
    const reached = await operationsReached2xx();
    console.log(`Operations that answered a 2xx: ${reached.reached.length}/${reached.total}; never: ${reached.never.join(', ')}`);
    writeFileSync('test/artifacts/schemathesis-2xx.json', JSON.stringify(reached, null, 2));
    const [, selected, total] = /API Operations:\s+Selected: (\d+)\/(\d+)/.exec(output) ?? [];
    expect(Number(selected), 'every operation but the streaming ones').toBe(Number(total) - STREAMING_OPERATIONS.length);
    expect(code).toBe(0);
  },
  RUN_TIMEOUT_MS + 20_000,
);
