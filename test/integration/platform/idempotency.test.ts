// Idempotency-Key over real HTTP: replays with the first status and headers, nothing executed twice
// (also under real concurrency, from separate clients), reuse and length refused, 4xx stored and 5xx
// not, abandoned leases taken over once, keys scoped to a store and to 24 hours, every key read and
// write addressed by its exact _id.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MongoClient, type CommandStartedEvent, type Document } from 'mongodb';
import { Type } from '@sinclair/typebox';
import { testMongo, waitFor, type TestMongo } from '../../support/env';
import { call, createTestStore, type TestApi, type TestStore } from '../../support/api';
import { startApiWithRoutes } from '../../support/custom-api';
import { collections } from '../../../store/collections';
import { requestFingerprint } from '../../../api/plugins/idempotency';
import {
  IDEMPOTENCY_LEASE_MS,
  IDEMPOTENCY_TTL_MS,
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  sweepExpiredIdempotencyKeys,
  type ClaimResult,
} from '../../../store/idempotency';
import { ApiError } from '../../../domain/errors';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;
const executions = new Map<string, number>();
const executed = (name: string) => executions.get(name) ?? 0;
const count = (name: string) => executions.set(name, executed(name) + 1).get(name)!;
let gate: { promise: Promise<void>; release: () => void };

function newGate() {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  gate = { promise, release };
}

const Body = Type.Object({ tag: Type.Optional(Type.String()) }, { additionalProperties: false });

beforeAll(async () => {
  mongo = await testMongo();
  newGate();
  api = await startApiWithRoutes({
    db: mongo.db,
    routes: (v1) => {
      v1.post('/test/count', { schema: { body: Body } }, async (_request, reply) => {
        reply.status(201);
        return { n: count('count') };
      });
      v1.delete('/test/count', async () => ({ deleted: count('delete') }));
      v1.post('/test/slow', { schema: { body: Body } }, async () => {
        const n = count('slow');
        await gate.promise;
        return { n };
      });
      v1.post('/test/refuse', { schema: { body: Body } }, async () => {
        count('refuse');
        throw new ApiError('parameter_invalid', 'Refused on purpose.', { param: 'tag' });
      });
      v1.post('/test/fail-once', { schema: { body: Body } }, async () => {
        if (count('fail-once') === 1) throw new Error('transient failure');
        return { ok: true };
      });
    },
  });
  store = await createTestStore(mongo.db);
});
afterAll(async () => {
  gate?.release();
  await api?.close();
  await mongo?.close();
});

let keySeq = 0;
const newKey = () => `key-${Date.now()}-${++keySeq}`;
const post = (path: string, idempotencyKey: string | null, json: unknown = {}, key = store.key) =>
  call(api, key, 'POST', path, { json, headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {} });

/** Writes a key's document as an earlier run left it. */
const seed = async (key: string, doc: { fingerprint: string; state: 'running' | 'done'; locked_until: number; created: number }) => {
  await collections(mongo.db).idempotency.insertOne({
    _id: `${store.store._id}:${key}`,
    store_id: store.store._id,
    key,
    request_id: 'req_00000000000000000000',
    response: doc.state === 'done' ? { status: 201, body: '{"n":-1}', headers: {} } : null,
    expires_at: new Date(doc.created + IDEMPOTENCY_TTL_MS),
    ...doc,
  });
};

describe('replay', () => {
  it('the same key, method, path and body replays the stored response with its status, Idempotent-Replayed and Original-Request-Id; nothing runs twice', async () => {
    const key = newKey();
    const before = executed('count');
    const first = await post('/v1/test/count', key, { tag: 'a' });
    const second = await post('/v1/test/count', key, { tag: 'a' });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.headers.get('original-request-id')).toBe(first.headers.get('request-id'));
    expect(second.headers.get('request-id')).not.toBe(first.headers.get('request-id'));
    expect(second.headers.get('request-id')).toMatch(/^req_[0-9a-f]{20}$/);
    expect(executed('count')).toBe(before + 1);
  });

  it('a body sent as JSON with keys in another order is the same request', async () => {
    const key = newKey();
    const res1 = await call(api, store.key, 'POST', '/v1/customers', {
      json: { email: 'order@example.com', name: 'Ana Souza', phone: '+5511987654321', document: { type: 'cpf', number: '52998224725' } },
      headers: { 'Idempotency-Key': key },
    });
    const res2 = await call(api, store.key, 'POST', '/v1/customers', {
      json: { document: { number: '52998224725', type: 'cpf' }, phone: '+5511987654321', name: 'Ana Souza', email: 'order@example.com' },
      headers: { 'Idempotency-Key': key },
    });
    expect(res1.status).toBe(201);
    expect(res2.status).toBe(201);
    expect(res2.headers.get('idempotent-replayed')).toBe('true');
  });

  it('without a key every request runs', async () => {
    const before = executed('count');
    await post('/v1/test/count', null);
    await post('/v1/test/count', null);
    expect(executed('count')).toBe(before + 2);
  });

  it('a replayed customer creation writes one customer and one customer.created event', async () => {
    const key = newKey();
    const body = { email: 'replay@example.com', name: 'Replay Person', phone: '+5511987654321', document: { type: 'cpf', number: '529.982.247-25' } };
    const first = await call(api, store.key, 'POST', '/v1/customers', {
      form: new URLSearchParams({
        email: body.email,
        name: body.name,
        phone: body.phone,
        'document[type]': 'cpf',
        'document[number]': body.document.number,
      }).toString(),
      headers: { 'Idempotency-Key': key },
    });
    const again = await call(api, store.key, 'POST', '/v1/customers', {
      form: new URLSearchParams({
        email: body.email,
        name: body.name,
        phone: body.phone,
        'document[type]': 'cpf',
        'document[number]': body.document.number,
      }).toString(),
      headers: { 'Idempotency-Key': key },
    });
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.body).toEqual(first.body);
    expect(await collections(mongo.db).customers.countDocuments({ store_id: store.store._id, email: body.email })).toBe(1);
    const events = await collections(mongo.db).events.find({ store_id: store.store._id, type: 'customer.created' }).toArray();
    expect(events.filter((e) => JSON.parse(e.data_json).object.email === body.email)).toHaveLength(1);
    expect(events.find((e) => JSON.parse(e.data_json).object.email === body.email)!.request).toEqual({
      id: first.headers.get('request-id'),
      idempotency_key: key,
    });
  });

  it('GET ignores Idempotency-Key, even one over 255 characters', async () => {
    const res = await call(api, store.key, 'GET', '/v1/account', { headers: { 'Idempotency-Key': 'x'.repeat(300) } });
    expect(res.status).toBe(200);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
  });
});

describe('refusals', () => {
  it('the same key with a different body answers 400 idempotency_key_reused', async () => {
    const key = newKey();
    await post('/v1/test/count', key, { tag: 'a' });
    const before = executed('count');
    const res = await post('/v1/test/count', key, { tag: 'b' });
    expect([res.status, res.body.error.type, res.body.error.code]).toEqual([400, 'idempotency_error', 'idempotency_key_reused']);
    expect(executed('count')).toBe(before);
  });

  it('the same key on a different path answers 400 idempotency_key_reused', async () => {
    const key = newKey();
    await post('/v1/test/count', key, { tag: 'a' });
    const res = await post('/v1/test/slow', key, { tag: 'a' });
    expect([res.status, res.body.error.code]).toEqual([400, 'idempotency_key_reused']);
  });

  it('the same key with a different method answers 400 idempotency_key_reused', async () => {
    const key = newKey();
    await post('/v1/test/count', key);
    const before = executed('delete');
    const res = await call(api, store.key, 'DELETE', '/v1/test/count', { headers: { 'Idempotency-Key': key } });
    expect([res.status, res.body.error.code]).toEqual([400, 'idempotency_key_reused']);
    expect(executed('delete')).toBe(before);
  });

  it('a key of 256 characters answers 400 idempotency_key_too_long; 255 is accepted', async () => {
    const tooLong = await post('/v1/test/count', 'k'.repeat(256));
    expect([tooLong.status, tooLong.body.error.type, tooLong.body.error.code, tooLong.body.error.param]).toEqual([
      400,
      'idempotency_error',
      'idempotency_key_too_long',
      'Idempotency-Key',
    ]);
    const longest = await post('/v1/test/count', `${Date.now()}`.padEnd(255, 'k'));
    expect(longest.status).toBe(201);
  });

  it('keys belong to a store: another store using the same key runs its own request', async () => {
    const key = newKey();
    const other = await createTestStore(mongo.db);
    const before = executed('count');
    await post('/v1/test/count', key, { tag: 'a' });
    const res = await post('/v1/test/count', key, { tag: 'b' }, other.key);
    expect(res.status).toBe(201);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect(executed('count')).toBe(before + 2);
  });
});

describe('concurrency', () => {
  it('parallel identical requests: exactly one runs, the others get 409 idempotency_key_in_use while it runs, then the replay', async () => {
    newGate();
    const key = newKey();
    const before = executed('slow');
    const pending = Array.from({ length: 8 }, () => post('/v1/test/slow', key, { tag: 'p' }));
    // The seven duplicates answer while the first is held at the gate.
    const settled: Awaited<(typeof pending)[number]>[] = [];
    pending.forEach((p) => p.then((r) => settled.push(r)));
    await waitFor(() => settled.length === 7, { timeoutMs: 20_000, description: 'seven duplicates to be refused' });
    expect(executed('slow')).toBe(before + 1);
    for (const res of settled) {
      expect([res.status, res.body.error.type, res.body.error.code]).toEqual([409, 'idempotency_error', 'idempotency_key_in_use']);
    }
    gate.release();
    const all = await Promise.all(pending);
    expect(all.filter((r) => r.status === 200)).toHaveLength(1);
    const replay = await post('/v1/test/slow', key, { tag: 'p' });
    expect([replay.status, replay.headers.get('idempotent-replayed'), replay.body.n]).toEqual([200, 'true', before + 1]);
    expect(executed('slow')).toBe(before + 1);
  });

  it('parallel identical customer creations with one key create one customer and one event', async () => {
    const key = newKey();
    const email = 'parallel@example.com';
    const json = { email, name: 'Para Lelo', phone: '+5511987654321', document: { type: 'cpf', number: '52998224725' } };
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => call(api, store.key, 'POST', '/v1/customers', { json, headers: { 'Idempotency-Key': key } })),
    );
    for (const res of responses) {
      expect(res.status === 409 ? res.body.error.code : res.status === 201 ? 'created' : res.status).toMatch(/^(idempotency_key_in_use|created)$/);
    }
    const fresh = responses.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') === null);
    expect(fresh).toHaveLength(1);
    expect(await collections(mongo.db).customers.countDocuments({ store_id: store.store._id, email })).toBe(1);
    const events = await collections(mongo.db).events.find({ store_id: store.store._id, type: 'customer.created' }).toArray();
    expect(events.filter((e) => JSON.parse(e.data_json).object.email === email)).toHaveLength(1);
  });
});

describe('stored statuses', () => {
  it('a 4xx answer is stored and replayed without running again', async () => {
    const key = newKey();
    const before = executed('refuse');
    const first = await post('/v1/test/refuse', key, { tag: 'x' });
    const second = await post('/v1/test/refuse', key, { tag: 'x' });
    expect([first.status, first.body.error.code]).toEqual([400, 'parameter_invalid']);
    expect(second.status).toBe(400);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(executed('refuse')).toBe(before + 1);
  });

  it('a validation failure (4xx before the handler) is stored and replayed too', async () => {
    const key = newKey();
    const first = await post('/v1/test/count', key, { unknown: 1 });
    const second = await post('/v1/test/count', key, { unknown: 1 });
    expect([first.status, second.status, second.headers.get('idempotent-replayed')]).toEqual([400, 400, 'true']);
  });

  it('a 5xx answer is not stored: a retry with the same key runs again', async () => {
    const key = newKey();
    const first = await post('/v1/test/fail-once', key);
    expect([first.status, first.body.error.code]).toEqual([500, 'internal_error']);
    const retry = await post('/v1/test/fail-once', key);
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(executed('fail-once')).toBe(2);
  });
});

describe('leases and expiry', () => {
  it('a running key whose lease ran out (its process died) is taken over by the retry, which runs', async () => {
    const key = newKey();
    const now = Date.now();
    await seed(key, {
      fingerprint: requestFingerprint('POST', '/v1/test/count', { tag: 'z' }),
      state: 'running',
      locked_until: now - 1,
      created: now - 70_000,
    });
    const before = executed('count');
    const res = await post('/v1/test/count', key, { tag: 'z' });
    expect(res.status).toBe(201);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect(executed('count')).toBe(before + 1);
    const replay = await post('/v1/test/count', key, { tag: 'z' });
    expect(replay.headers.get('original-request-id')).toBe(res.headers.get('request-id'));
  });

  it('parallel retries of an abandoned key: exactly one takes it over', async () => {
    newGate();
    const key = newKey();
    const now = Date.now();
    await seed(key, {
      fingerprint: requestFingerprint('POST', '/v1/test/slow', { tag: 'y' }),
      state: 'running',
      locked_until: now - 1,
      created: now - 70_000,
    });
    const before = executed('slow');
    const pending = Array.from({ length: 6 }, () => post('/v1/test/slow', key, { tag: 'y' }));
    const settled: Awaited<(typeof pending)[number]>[] = [];
    pending.forEach((p) => p.then((r) => settled.push(r)));
    await waitFor(() => settled.length === 5, { timeoutMs: 20_000, description: 'five retries to be refused' });
    expect(settled.map((r) => r.status)).toEqual(Array(5).fill(409));
    expect(executed('slow')).toBe(before + 1);
    gate.release();
    await Promise.all(pending);
  });

  it('a running key whose lease is still valid answers 409 idempotency_key_in_use', async () => {
    const key = newKey();
    const now = Date.now();
    await seed(key, { fingerprint: requestFingerprint('POST', '/v1/test/count', {}), state: 'running', locked_until: now + 60_000, created: now });
    const res = await post('/v1/test/count', key);
    expect([res.status, res.body.error.code]).toEqual([409, 'idempotency_key_in_use']);
  });

  it('a key older than 24 hours is free again, even for another body', async () => {
    const key = newKey();
    const now = Date.now();
    await seed(key, {
      fingerprint: 'something-else',
      state: 'done',
      locked_until: now - IDEMPOTENCY_TTL_MS,
      created: now - IDEMPOTENCY_TTL_MS - 1000,
    });
    const res = await post('/v1/test/count', key, { tag: 'fresh' });
    expect(res.status).toBe(201);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
  });

  it('the sweep deletes keys older than 24 hours and keeps younger ones', async () => {
    const [old, young] = [newKey(), newKey()];
    const now = Date.now();
    await seed(old, { fingerprint: 'fp', state: 'done', locked_until: now - IDEMPOTENCY_TTL_MS, created: now - IDEMPOTENCY_TTL_MS - 1000 });
    await seed(young, { fingerprint: 'fp', state: 'done', locked_until: now, created: now - IDEMPOTENCY_TTL_MS + 60_000 });
    expect(await sweepExpiredIdempotencyKeys(mongo.db, now)).toBeGreaterThanOrEqual(1);
    const left = await collections(mongo.db)
      .idempotency.find({ _id: { $in: [`${store.store._id}:${old}`, `${store.store._id}:${young}`] } })
      .toArray();
    expect(left.map((doc) => doc.key)).toEqual([young]);
  });

  it('a key younger than 24 hours still replays', async () => {
    const key = newKey();
    const now = Date.now();
    await seed(key, {
      fingerprint: requestFingerprint('POST', '/v1/test/count', {}),
      state: 'done',
      locked_until: now,
      created: now - IDEMPOTENCY_TTL_MS + 60_000,
    });
    const res = await post('/v1/test/count', key);
    expect([res.status, res.body, res.headers.get('idempotent-replayed')]).toEqual([201, { n: -1 }, 'true']);
  });
});

describe('keys addressed by _id', () => {
  const keyCollections = new Set(['idempotency_keys']);
  const filtersOf = (event: CommandStartedEvent): { op: string; filter: Document }[] => {
    const c = event.command;
    if (keyCollections.has(c.find)) return [{ op: 'find', filter: c.filter ?? {} }];
    if (keyCollections.has(c.update)) return (c.updates as Document[]).map((u) => ({ op: 'update', filter: u.q }));
    if (keyCollections.has(c.delete)) return (c.deletes as Document[]).map((d) => ({ op: 'delete', filter: d.q }));
    if (keyCollections.has(c.findAndModify)) return [{ op: 'findAndModify', filter: c.query }];
    return [];
  };

  it('claiming, completing, replaying, releasing after a 5xx and taking over an abandoned key name the exact _id in every filter (no scan)', async () => {
    const monitored = await MongoClient.connect(inject('mongoUri'), { monitorCommands: true });
    const seen: { op: string; filter: Document }[] = [];
    monitored.on('commandStarted', (event) => seen.push(...filtersOf(event)));
    let failNext = true;
    const watched = await startApiWithRoutes({
      db: monitored.db(mongo.db.databaseName),
      routes: (v1) => {
        v1.post('/test/watched', { schema: { body: Body } }, async () => ({ ok: true }));
        v1.delete('/test/watched', async () => ({ deleted: true }));
        v1.post('/test/watched-fail', { schema: { body: Body } }, async () => {
          if (failNext) {
            failNext = false;
            throw new Error('transient failure');
          }
          return { ok: true };
        });
      },
    });
    try {
      const key = newKey();
      const first = await call(watched, store.key, 'POST', '/v1/test/watched', { json: { tag: 'w' }, headers: { 'Idempotency-Key': key } });
      const replay = await call(watched, store.key, 'POST', '/v1/test/watched', { json: { tag: 'w' }, headers: { 'Idempotency-Key': key } });
      const deleted = await call(watched, store.key, 'DELETE', '/v1/test/watched', { headers: { 'Idempotency-Key': newKey() } });
      const failKey = newKey();
      const failed = await call(watched, store.key, 'POST', '/v1/test/watched-fail', { json: {}, headers: { 'Idempotency-Key': failKey } });
      const retried = await call(watched, store.key, 'POST', '/v1/test/watched-fail', { json: {}, headers: { 'Idempotency-Key': failKey } });
      const abandoned = newKey();
      const now = Date.now();
      await seed(abandoned, {
        fingerprint: requestFingerprint('POST', '/v1/test/watched', {}),
        state: 'running',
        locked_until: now - 1,
        created: now - 70_000,
      });
      const takenOver = await call(watched, store.key, 'POST', '/v1/test/watched', { json: {}, headers: { 'Idempotency-Key': abandoned } });
      expect([
        first.status,
        replay.status,
        replay.headers.get('idempotent-replayed'),
        deleted.status,
        failed.status,
        retried.status,
        takenOver.status,
      ]).toEqual([200, 200, 'true', 200, 500, 200, 200]);
      expect(new Set(seen.map((s) => s.op))).toEqual(new Set(['find', 'update', 'delete', 'findAndModify']));
      for (const { op, filter } of seen) {
        expect({ op, id: typeof filter._id }).toEqual({ op, id: 'string' });
      }
    } finally {
      await watched.close();
      await monitored.close();
    }
  });
});

describe('run ownership', () => {
  const input = (key: string, requestId: string) => ({ storeId: store.store._id, key, fingerprint: 'fp', requestId });
  const response = (body: string) => ({ status: 200, body, headers: {} });

  it('an owner finishing after its lease ran out and another request took the key over neither stores its response nor frees the key', async () => {
    const key = newKey();
    const now = Date.now();
    const late = await claimIdempotencyKey(mongo.db, input(key, 'req_late'), now - IDEMPOTENCY_LEASE_MS - 1000);
    const taker = await claimIdempotencyKey(mongo.db, input(key, 'req_taker'), now);
    expect([late.kind, taker.kind]).toEqual(['claimed', 'claimed']);
    if (late.kind !== 'claimed' || taker.kind !== 'claimed') return;
    expect(await completeIdempotencyKey(mongo.db, late, response('late'))).toBe(false);
    expect(await releaseIdempotencyKey(mongo.db, late)).toBe(false);
    const held = await collections(mongo.db).idempotency.findOne({ _id: taker.id });
    expect([held?.request_id, held?.state]).toEqual(['req_taker', 'running']);
    expect(await completeIdempotencyKey(mongo.db, taker, response('taker'))).toBe(true);
    const replay = await claimIdempotencyKey(mongo.db, input(key, 'req_again'), now + 1);
    expect(replay.kind === 'replay' && [replay.doc.request_id, replay.doc.response?.body]).toEqual(['req_taker', 'taker']);
  });

  it('an owner that completes after its lease ran out but before anyone took over keeps its response; a later taker replays it', async () => {
    const key = newKey();
    const now = Date.now();
    const slow = await claimIdempotencyKey(mongo.db, input(key, 'req_slow'), now - IDEMPOTENCY_LEASE_MS - 1000);
    if (slow.kind !== 'claimed') throw new Error(`expected a claim, got ${slow.kind}`);
    expect(await completeIdempotencyKey(mongo.db, slow, response('slow'))).toBe(true);
    const next = await claimIdempotencyKey(mongo.db, input(key, 'req_next'), now);
    expect(next.kind === 'replay' && next.doc.response?.body).toBe('slow');
  });

  it('a key whose owner died is taken over once its lease ran out, and the taker then holds it like any owner', async () => {
    const key = newKey();
    const now = Date.now();
    const owner = await claimIdempotencyKey(mongo.db, input(key, 'req_dead'), now - IDEMPOTENCY_LEASE_MS - 1);
    expect(owner.kind).toBe('claimed');
    const retry = await claimIdempotencyKey(mongo.db, input(key, 'req_retry'), now);
    expect(retry.kind).toBe('claimed');
    const again = await claimIdempotencyKey(mongo.db, input(key, 'req_third'), now);
    expect(again.kind).toBe('in_use');
  });

  it('a taker of an expired done key wins once: a second taker that saw the old run gets the new one (in use, or reused for another body)', async () => {
    const key = newKey();
    const now = Date.now();
    await seed(key, { fingerprint: 'old', state: 'done', locked_until: now - IDEMPOTENCY_TTL_MS, created: now - IDEMPOTENCY_TTL_MS - 1000 });
    const first = await claimIdempotencyKey(mongo.db, input(key, 'req_first'), now);
    const same = await claimIdempotencyKey(mongo.db, input(key, 'req_same'), now);
    const other = await claimIdempotencyKey(mongo.db, { ...input(key, 'req_other'), fingerprint: 'other' }, now);
    expect([first.kind, same.kind, other.kind]).toEqual(['claimed', 'in_use', 'reused']);
  });

  it('a released key is free again; releasing or completing it a second time changes nothing', async () => {
    const key = newKey();
    const owner = await claimIdempotencyKey(mongo.db, input(key, 'req_owner'));
    if (owner.kind !== 'claimed') throw new Error(`expected a claim, got ${owner.kind}`);
    expect(await releaseIdempotencyKey(mongo.db, owner)).toBe(true);
    expect(await releaseIdempotencyKey(mongo.db, owner)).toBe(false);
    expect(await completeIdempotencyKey(mongo.db, owner, response('late'))).toBe(false);
    expect((await claimIdempotencyKey(mongo.db, input(key, 'req_next'))).kind).toBe('claimed');
  });
});

describe('races between processes (one MongoClient each)', () => {
  const input = (key: string, requestId: string) => ({ storeId: store.store._id, key, fingerprint: 'fp', requestId });
  let clients: MongoClient[] = [];
  beforeAll(async () => {
    clients = await Promise.all(Array.from({ length: 20 }, () => MongoClient.connect(inject('mongoUri'))));
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
  });
  const dbOf = (client: MongoClient) => client.db(mongo.db.databaseName);

  it('20 concurrent claims of a new key: exactly one is claimed, the others find it in use', async () => {
    const key = newKey();
    const results = await Promise.all(clients.map((c, i) => claimIdempotencyKey(dbOf(c), input(key, `req_new_${i}`))));
    expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'in_use')).toHaveLength(19);
  });

  it('10 concurrent takeovers of an abandoned lease: exactly one wins, and only the winner can complete', async () => {
    const key = newKey();
    const now = Date.now();
    await seed(key, { fingerprint: 'fp', state: 'running', locked_until: now - 1, created: now - 70_000 });
    const racers = clients.slice(0, 10);
    const results = await Promise.all(racers.map((c, i) => claimIdempotencyKey(dbOf(c), input(key, `req_take_${i}`), now)));
    const winners = results.filter((r): r is Extract<ClaimResult, { kind: 'claimed' }> => r.kind === 'claimed');
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'in_use')).toHaveLength(9);
    const completions = await Promise.all(
      racers.map((c, i) => completeIdempotencyKey(dbOf(c), { id: winners[0].id, run: `req_take_${i}` }, { status: 200, body: `${i}`, headers: {} })),
    );
    expect(completions.filter(Boolean)).toHaveLength(1);
    const held = await collections(mongo.db).idempotency.findOne({ _id: winners[0].id });
    expect([held?.state, held?.request_id]).toEqual(['done', winners[0].run]);
  });
});
