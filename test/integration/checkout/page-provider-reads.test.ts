// What this tests: the bound on provider reads a hosted page's visitors can cause (api/pages/provider-reads.ts):
// per session and per store, in windows shared through MongoDB (FerretDB here), so one visitor looping a
// session's confirm, or many sessions of one store, cannot spend the platform's Stripe rate limit.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PageProviderReads } from '../../../api/pages/provider-reads';
import { testMongo, type TestMongo } from '../../support/env';

let mongo: TestMongo;

beforeAll(async () => {
  mongo = await testMongo();
});
afterAll(async () => {
  await mongo?.close();
});

const allowed = async (reads: PageProviderReads, store: string, session: string, times: number) => {
  let yes = 0;
  for (let i = 0; i < times; i++) if (await reads.allow(store, session)) yes++;
  return yes;
};

describe('page provider reads', () => {
  test('a session gets its reads per window and no more', async () => {
    const reads = new PageProviderReads(mongo.db, { perSession: 3, perStore: 100, windowMs: 60_000 });
    const store = `st_reads_${Date.now()}`;
    expect(await allowed(reads, store, 'cs_one', 10)).toBe(3);
    expect(await allowed(reads, store, 'cs_two', 10)).toBe(3);
  });

  test('a store’s sessions share the store’s reads: past them every session of the store reads nothing, another store still reads', async () => {
    const reads = new PageProviderReads(mongo.db, { perSession: 3, perStore: 5, windowMs: 60_000 });
    const store = `st_reads_store_${Date.now()}`;
    expect(await allowed(reads, store, 'cs_a', 3)).toBe(3);
    expect(await allowed(reads, store, 'cs_b', 3)).toBe(2);
    expect(await allowed(reads, store, 'cs_c', 3)).toBe(0);
    expect(await allowed(reads, `${store}_other`, 'cs_d', 3)).toBe(3);
  });

  test('two API processes share the windows (the counts live in the database)', async () => {
    const limits = { perSession: 4, perStore: 100, windowMs: 60_000 };
    const first = new PageProviderReads(mongo.db, limits);
    const second = new PageProviderReads(mongo.db, limits);
    const store = `st_reads_shared_${Date.now()}`;
    const [a, b] = await Promise.all([allowed(first, store, 'cs_shared', 4), allowed(second, store, 'cs_shared', 4)]);
    expect(a + b).toBe(4);
  });
});
