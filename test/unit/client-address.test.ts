// What this tests: TRUST_PROXY is read as Fastify's trustProxy takes it (hop count, address/CIDR list),
// never "trust every hop", and addresses are counted as per-address limits count them (IPv6 by /64).
import { describe, expect, it } from 'vitest';
import { addressKey, fastifyTrustProxy, parseTrustProxy } from '../../api/client-address';

describe('TRUST_PROXY', () => {
  it('unset, empty, 0 and false trust no proxy', () => {
    for (const raw of [undefined, '', '0', 'false']) expect(parseTrustProxy(raw)).toBe(false);
  });

  it('an integer is a hop count, trusted hop by hop from the socket', () => {
    expect(parseTrustProxy('2')).toBe(2);
    const trust = fastifyTrustProxy(2) as (address: string, hop: number) => boolean;
    expect([0, 1, 2].map((hop) => trust('203.0.113.1', hop))).toEqual([true, true, false]);
  });

  it('a list of addresses, CIDRs and named ranges is kept as a list', () => {
    expect(parseTrustProxy(' 10.0.0.0/8, 192.0.2.1 ,2001:db8::/32,loopback')).toEqual(['10.0.0.0/8', '192.0.2.1', '2001:db8::/32', 'loopback']);
  });

  it('true (every hop) and anything that is not an address or CIDR are refused at start', () => {
    expect(() => parseTrustProxy('true')).toThrow(/every X-Forwarded-For/);
    for (const raw of ['yes', '10.0.0.0/33', '10.0.0.0/8/1', '2001:db8::/129', 'proxy.internal', '10.0.0.1,']) {
      expect(() => parseTrustProxy(raw), raw).toThrow(/TRUST_PROXY/);
    }
  });
});

describe('addressKey', () => {
  it('IPv4 as is, IPv4-mapped IPv6 as its IPv4 address', () => {
    expect(addressKey('198.51.100.7')).toBe('198.51.100.7');
    expect(addressKey('::ffff:198.51.100.7')).toBe('198.51.100.7');
  });

  it('IPv6 by its /64, however the address is written', () => {
    const key = '2001:db8:1:2::/64';
    for (const ip of ['2001:db8:1:2::1', '2001:0DB8:0001:0002:ffff:ffff:ffff:ffff', '2001:db8:1:2:a:b:c:d', '2001:db8:1:2::1%eth0']) {
      expect(addressKey(ip), ip).toBe(key);
    }
    expect(addressKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('64:ff9b::198.51.100.7')).toBe('64:ff9b:0:0::/64');
  });
});
