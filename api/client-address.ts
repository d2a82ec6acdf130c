// Who a request comes from, for every per-address limit: TRUST_PROXY names the proxies whose
// X-Forwarded-For is believed (a hop count or an address/CIDR list, as Fastify's trustProxy takes;
// never "every hop"), and an IPv6 client is counted by its /64, the block one subscriber holds.
import { BlockList, isIP } from 'node:net';
import type { FastifyRequest, FastifyServerOptions } from 'fastify';

/** What Fastify's trustProxy is given: no proxy, the number of proxy hops in front, or the proxies' addresses. */
export type TrustProxy = false | number | string[];

/** proxy-addr's named ranges (loopback, private and link-local addresses), accepted as Fastify accepts them. */
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * TRUST_PROXY as Fastify's trustProxy: unset or empty is no proxy; an integer is the hops in front of
 * the API; otherwise a comma-separated list of addresses, CIDRs or named ranges. `true` (every hop, so
 * any client could name its own address) is refused, as is anything else that is not one of those.
 */
export function parseTrustProxy(raw: string | undefined): TrustProxy {
  const value = (raw ?? '').trim();
  if (value === '' || value === 'false') return false;
  if (/^\d+$/.test(value)) return Number(value) === 0 ? false : Number(value);
  if (value === 'true') throw new Error("TRUST_PROXY=true would trust every X-Forwarded-For: give the hop count or the proxies' addresses (CIDR)");
  const entries = value.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    if (!isTrustEntry(entry)) throw new Error(`TRUST_PROXY: '${entry}' is not an address, a CIDR or one of ${[...NAMED_RANGES].join(', ')}`);
  }
  return entries;
}

function isTrustEntry(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address, prefix, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  if (!/^\d+$/.test(prefix)) return false;
  // BlockList checks the prefix against the family's width.
  try {
    new BlockList().addSubnet(address, Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
    return true;
  } catch {
    return false;
  }
}

/**
 * Fastify's option for it. A hop count becomes "the first n hops": this Fastify reads a bare number as
 * trusting no hop at all (fail closed), which would count every client as the proxy's address.
 */
export function fastifyTrustProxy(trust: TrustProxy): FastifyServerOptions['trustProxy'] {
  if (typeof trust !== 'number') return trust;
  return (_address: string, hop: number) => hop < trust;
}

/** The key an address is counted under: IPv4 as is (also when IPv4-mapped), IPv6 by its /64. */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (isIP(ip) !== 6) return ip;
  return `${ipv6Groups(ip).slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, lower case without leading zeros (zone and embedded IPv4 handled). */
function ipv6Groups(ip: string): string[] {
  let text = ip.split('%')[0].toLowerCase();
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const zeros = Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...(tail === undefined ? [] : zeros), ...right].map((group) => parseInt(group, 16).toString(16));
}

/** The request's client, as every per-address limit counts it. */
export function clientAddress(request: FastifyRequest): string {
  return addressKey(request.ip);
}
