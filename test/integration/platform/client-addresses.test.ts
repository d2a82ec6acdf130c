// What this tests: the address a per-address limit counts comes only from trusted proxy hops
// (TRUST_PROXY as a hop count or a CIDR list), so forged X-Forwarded-For entries do not rotate it,
// and IPv6 clients are counted by their /64; over real HTTP against the 10-a-minute keyless limit.
import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testMongo, type TestMongo } from '../../support/env';
import { call, startTestApi, type TestApi } from '../../support/api';
import { loadApiConfig } from '../../../api/config';

let mongo: TestMongo;
/** Windows of an hour, so a burst never straddles two windows by accident. */
const HOUR = 3_600_000;

beforeAll(async () => {
  mongo = await testMongo();
});
afterAll(async () => {
  await mongo?.close();
});

/** An API whose TRUST_PROXY is read from the environment as the server reads it. */
function apiTrusting(trustProxy: string): Promise<TestApi> {
  const { trustProxy: trust } = loadApiConfig({ NODE_ENV: 'test', TRUST_PROXY: trustProxy });
  return startTestApi({ db: mongo.db, config: { trustProxy: trust, ipRateWindowMs: HOUR } });
}

const forged = () => `203.0.${randomInt(256)}.${randomInt(1, 255)}`;
const hex = () => randomInt(0x10000).toString(16);

/** Statuses of `n` keyless requests, each with the X-Forwarded-For `header()` gives. */
async function keylessStatuses(api: TestApi, n: number, header: () => string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push((await call(api, null, 'GET', '/v1/account', { headers: { 'X-Forwarded-For': header() } })).status);
  return statuses;
}

describe('TRUST_PROXY as a hop count', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await apiTrusting('1');
  });
  afterAll(async () => api?.close());

  it('one hop: the entry the proxy appended is counted, a forged entry before it changes nothing (11th is 429)', async () => {
    const statuses = await keylessStatuses(api, 12, () => `${forged()}, 198.51.100.7`);
    expect(statuses).toEqual([...Array(10).fill(401), 429, 429]);
  });

  it('another client behind the same proxy has its own window', async () => {
    const res = await call(api, null, 'GET', '/v1/account', { headers: { 'X-Forwarded-For': `${forged()}, 198.51.100.8` } });
    expect(res.status).toBe(401);
  });
});

describe('TRUST_PROXY as addresses', () => {
  let api: TestApi;
  beforeAll(async () => {
    // A proxy that is not this test's client: its X-Forwarded-For is the untrusted peer's own words.
    api = await apiTrusting('192.0.2.10, 10.0.0.0/8');
  });
  afterAll(async () => api?.close());

  it('a forged header from an untrusted peer is ignored: the peer (loopback) is counted, rotating the header does not help', async () => {
    const statuses = await keylessStatuses(api, 12, forged);
    expect(statuses).toEqual([...Array(10).fill(401), 429, 429]);
  });
});

describe('IPv6 clients by their /64', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await apiTrusting('loopback');
  });
  afterAll(async () => api?.close());

  it('rotating the interface half of an address inside one /64 counts in one window', async () => {
    const statuses = await keylessStatuses(api, 12, () => `2001:db8:1:2:${hex()}:${hex()}:${hex()}:${hex()}`);
    expect(statuses).toEqual([...Array(10).fill(401), 429, 429]);
  });

  it('the same /64 written another way (leading zeros, ::) is the same window; another /64 is not', async () => {
    expect((await keylessStatuses(api, 1, () => '2001:0db8:0001:0002::1'))[0]).toBe(429);
    expect((await keylessStatuses(api, 1, () => '2001:db8:1:3::1'))[0]).toBe(401);
  });

  it('an IPv4-mapped IPv6 address counts as its IPv4 address', async () => {
    await keylessStatuses(api, 10, () => '198.51.100.20');
    expect((await keylessStatuses(api, 1, () => '::ffff:198.51.100.20'))[0]).toBe(429);
  });
});
