// A name resolver for tests that must not depend on (or send queries to) real DNS: the names given
// resolve to the addresses given, localhost to 127.0.0.1, anything else fails like an unknown name.
import { isIP } from 'node:net';
import type { HostResolver } from '../../adapters/webhooks/host-policy';

export function fakeResolver(names: Record<string, string[]> = {}): HostResolver {
  return async (hostname) => {
    const host = hostname.toLowerCase();
    const addresses = host === 'localhost' ? ['127.0.0.1'] : names[host];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: isIP(address) }));
  };
}
