// Where webhooks may go: https only, to public hosts. A host that is, or resolves to, a private,
// loopback, link-local, shared, documentation, multicast or metadata address is refused when an
// endpoint is saved (private_host) and again at connection time (DNS rebinding); hosts on the
// WEBHOOK_ALLOWED_HOSTS allowlist skip the check (local development and tests, never by default).
import { promises as dns } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { ApiError } from '../../domain/errors';

export const MAX_WEBHOOK_URL_LENGTH = 2000;

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Name resolution, injectable so tests can make a public-looking name resolve anywhere without real DNS. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: HostResolver = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

export interface HostPolicy {
  /** Host names or addresses (lowercase) allowed even though private. */
  allowedHosts: readonly string[];
  resolver?: HostResolver;
}

const privateV4 = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  privateV4.addSubnet(net, prefix, 'ipv4');
}

/** IPv6 global unicast: everything outside it (loopback, mapped and compatible v4, NAT64, ULA, link-local, multicast) is refused. */
const globalUnicastV6 = new BlockList();
globalUnicastV6.addSubnet('2000::', 3, 'ipv6');

/** Special ranges inside global unicast. */
const privateV6 = new BlockList();
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments (Teredo and others)
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local (fd00:ec2::254 metadata included)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local
  ['ff00::', 8], // multicast
] as const) {
  privateV6.addSubnet(net, prefix, 'ipv6');
}

/** The IPv4 address inside an IPv6 form that carries one (mapped, compatible, NAT64, 6to4); else null. */
function embeddedV4(address: string): string | null {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const hi = parseInt(hex[1], 16);
    const lo = parseInt(hex[2], 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  const sixToFour = /^2002:([0-9a-f]{1,4}):([0-9a-f]{1,4}):/.exec(lower);
  if (sixToFour) {
    const hi = parseInt(sixToFour[1], 16);
    const lo = parseInt(sixToFour[2], 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return null;
}

/** Whether an IP address (v4 or v6 text) is not a public unicast address. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const version = isIP(bare);
  if (version === 4) return privateV4.check(bare, 'ipv4');
  if (version === 6) {
    // Only global unicast outside its special ranges; 6to4 (2002::/16) is judged by the v4 address it carries.
    if (!globalUnicastV6.check(bare, 'ipv6') || privateV6.check(bare, 'ipv6')) return true;
    const v4 = embeddedV4(bare);
    return v4 !== null && privateV4.check(v4, 'ipv4');
  }
  // Not an address at all: treat as unsafe rather than guess.
  return true;
}

const PRIVATE_SUFFIXES = ['.localhost', '.local', '.internal', '.localdomain', '.home.arpa'];

/** Host names that name internal machines by themselves: localhost, .local, .internal, single labels. */
export function isPrivateName(hostname: string): boolean {
  const name = normalizeHost(hostname);
  if (name === 'localhost') return true;
  if (PRIVATE_SUFFIXES.some((suffix) => name.endsWith(suffix))) return true;
  // A single label ("intranet") resolves through the machine's search domains: internal by nature.
  return !name.includes('.') && isIP(name) === 0;
}

/** Lowercase, without IPv6 brackets or a trailing dot. */
export function normalizeHost(hostname: string): string {
  return hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
}

export function isAllowedHost(policy: HostPolicy, hostname: string): boolean {
  const host = normalizeHost(hostname);
  return policy.allowedHosts.some((allowed) => normalizeHost(allowed) === host);
}

/** Why a host is refused by itself (before resolution); null when it may be resolved and tried. */
export function privateHostReason(policy: HostPolicy, hostname: string): string | null {
  if (isAllowedHost(policy, hostname)) return null;
  const host = normalizeHost(hostname);
  if (isIP(host) !== 0) return isPrivateAddress(host) ? `${host} is a private address` : null;
  return isPrivateName(host) ? `${host} is an internal host name` : null;
}

/** The first private address a host resolves to (for a host not on the allowlist); null when none. */
export function firstPrivateAddress(addresses: readonly ResolvedAddress[]): string | null {
  return addresses.find((a) => isPrivateAddress(a.address))?.address ?? null;
}

const RESOLVE_TIMEOUT_MS = 3_000;

async function resolveWithin(resolver: HostResolver, hostname: string, ms: number): Promise<ResolvedAddress[] | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  try {
    return await Promise.race([resolver(hostname).catch(() => null), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Validates a webhook URL when an endpoint is saved: 400 invalid_url unless an https:// URL of up to
 * 2000 characters without credentials; 400 private_host when the host is internal or resolves to a
 * private address. A name that does not resolve now is accepted: every connection is checked again.
 */
export async function checkWebhookUrl(raw: string, policy: HostPolicy, param = 'url'): Promise<string> {
  const url = raw.trim();
  if (url.length > MAX_WEBHOOK_URL_LENGTH) {
    throw new ApiError('invalid_url', `The url can be up to ${MAX_WEBHOOK_URL_LENGTH} characters.`, { param });
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ApiError('invalid_url', 'The url must be an https:// address.', { param });
  }
  if (parsed.protocol !== 'https:') throw new ApiError('invalid_url', 'The url must be an https:// address.', { param });
  if (parsed.username || parsed.password) throw new ApiError('invalid_url', 'The url must not contain credentials.', { param });
  if (!parsed.hostname) throw new ApiError('invalid_url', 'The url must name a host.', { param });

  const reason = privateHostReason(policy, parsed.hostname);
  if (reason) throw new ApiError('private_host', `Webhooks cannot be sent to internal hosts: ${reason}.`, { param });
  const host = normalizeHost(parsed.hostname);
  if (isIP(host) === 0 && !isAllowedHost(policy, host)) {
    const addresses = await resolveWithin(policy.resolver ?? systemResolver, host, RESOLVE_TIMEOUT_MS);
    const bad = addresses ? firstPrivateAddress(addresses) : null;
    if (bad) throw new ApiError('private_host', `Webhooks cannot be sent to internal hosts: ${host} resolves to a private address.`, { param });
  }
  return url;
}

export class PrivateHostError extends Error {
  readonly code = 'EPRIVATEHOST';
  constructor(message: string) {
    super(message);
    this.name = 'PrivateHostError';
  }
}

/**
 * A `lookup` for net/tls connections: resolves, refuses the connection when any address is private
 * (unless the host is allowlisted), and hands the checked addresses to the socket, so what was
 * checked is what is connected to.
 */
export function guardedLookup(policy: HostPolicy): LookupFunction {
  const resolver = policy.resolver ?? systemResolver;
  return ((hostname: string, options: { family?: number | string; all?: boolean }, callback: (...args: unknown[]) => void) => {
    resolver(hostname).then(
      (resolved) => {
        if (!isAllowedHost(policy, hostname)) {
          const bad = firstPrivateAddress(resolved);
          // Which internal address a name resolves to is not the merchant's to learn.
          if (bad) return callback(new PrivateHostError(`private_host: ${normalizeHost(hostname)} resolves to a private address`));
        }
        const family = options?.family === 'IPv4' ? 4 : options?.family === 'IPv6' ? 6 : Number(options?.family ?? 0);
        const addresses = family === 4 || family === 6 ? resolved.filter((a) => a.family === family) : resolved;
        if (addresses.length === 0) {
          const error = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
          return callback(error);
        }
        if (options?.all) return callback(null, addresses);
        return callback(null, addresses[0].address, addresses[0].family);
      },
      (error: unknown) => callback(error),
    );
  }) as unknown as LookupFunction;
}
