// Which webhook hosts are private: literal addresses in every private, loopback, link-local, shared,
// documentation and metadata range (IPv4, IPv6 and IPv4 inside IPv6), internal names, and the
// allowlist; and the event catalogs' patterns and original-catalog names.
import { describe, expect, it } from 'vitest';
import { checkWebhookUrl, isPrivateAddress, isPrivateName, privateHostReason } from '../../adapters/webhooks/host-policy';
import { endpointReceives, legacyNameOf, unknownEventEntry } from '../../domain/event-catalogs';

describe('isPrivateAddress', () => {
  it.each([
    '10.0.0.1',
    '10.255.255.255',
    '172.16.0.1',
    '172.31.255.254',
    '192.168.1.1',
    '127.0.0.1',
    '127.8.9.10',
    '0.0.0.0',
    '169.254.169.254',
    '100.64.0.1',
    '192.0.2.5',
    '198.51.100.7',
    '203.0.113.9',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd00:ec2::254',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.1.2.3',
    '64:ff9b::10.0.0.1',
    '2002:0a00:0001::1',
    '2001:db8::1',
    // Only global unicast (2000::/3) outside its special ranges: compatible, SIIT, mapped and NAT64 forms
    // of any v4 address are refused, in the text forms a URL normalizes them to as well.
    '::127.0.0.1',
    '::7f00:1',
    '::ffff:0:127.0.0.1',
    '::ffff:0:7f00:1',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2001::1',
    '100::1',
  ])('%s is private', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.32.0.1',
    '192.169.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '2002:808:808::1',
  ])('%s is public', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });
});

describe('URLs as a merchant types them', () => {
  it.each(['https://[::127.0.0.1]/hook', 'https://[::ffff:0:10.0.0.1]/hook', 'https://[::ffff:127.0.0.1]/hook', 'https://[fd00::1]/hook'])(
    '%s is refused at creation',
    async (url) => {
      await expect(checkWebhookUrl(url, { allowedHosts: [] })).rejects.toMatchObject({ code: 'private_host' });
    },
  );

  it('a name resolving to a private address is refused without naming the address', async () => {
    const error = await checkWebhookUrl('https://rebind.example.com/hook', {
      allowedHosts: [],
      resolver: async () => [{ address: '10.9.8.7', family: 4 }],
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'private_host' });
    expect((error as Error).message).toContain('private address');
    expect((error as Error).message).not.toContain('10.9.8.7');
  });
});

describe('host names and the allowlist', () => {
  it('treats localhost, .localhost, .local, .internal and single-label names as internal', () => {
    for (const name of ['localhost', 'LOCALHOST.', 'app.localhost', 'printer.local', 'metadata.google.internal', 'intranet']) {
      expect(isPrivateName(name)).toBe(true);
    }
    for (const name of ['example.com', 'hooks.example.co.uk', 'local.example.com', 'internal.example.org']) {
      expect(isPrivateName(name)).toBe(false);
    }
  });

  it('lets allowlisted hosts through and nothing else', () => {
    const policy = { allowedHosts: ['localhost', '127.0.0.1'] };
    expect(privateHostReason(policy, 'localhost')).toBeNull();
    expect(privateHostReason(policy, '127.0.0.1')).toBeNull();
    expect(privateHostReason(policy, '127.0.0.2')).toMatch(/private address/);
    expect(privateHostReason(policy, 'other.local')).toMatch(/internal host name/);
    expect(privateHostReason({ allowedHosts: [] }, 'localhost')).toMatch(/internal host name/);
    expect(privateHostReason({ allowedHosts: [] }, '[::1]')).toMatch(/private address/);
  });
});

describe('event catalogs', () => {
  it('matches exact names and * patterns; [*] and an empty list receive everything', () => {
    expect(endpointReceives(['*'], 'invoice.paid')).toBe(true);
    expect(endpointReceives([], 'invoice.paid')).toBe(true);
    expect(endpointReceives(['invoice.*'], 'invoice.payment_failed')).toBe(true);
    expect(endpointReceives(['invoice.*'], 'order.refunded')).toBe(false);
    expect(endpointReceives(['customer.subscription.*'], 'customer.subscription.paused')).toBe(true);
    expect(endpointReceives(['customer.subscription.*'], 'customer.created')).toBe(false);
    expect(endpointReceives(['customer.created'], 'customer.created')).toBe(true);
    expect(endpointReceives(['customer.created'], 'customer.updated')).toBe(false);
  });

  it('refuses names and patterns the catalog does not have', () => {
    expect(unknownEventEntry('2026-11-01', ['invoice.paid', 'checkout.*'])).toBeNull();
    expect(unknownEventEntry('2026-11-01', ['invoice.paid', 'order.paid'])).toEqual({ index: 1, entry: 'order.paid' });
    expect(unknownEventEntry('2026-09-01', ['order.paid', 'checkout.*'])).toEqual({ index: 1, entry: 'checkout.*' });
    expect(unknownEventEntry('2026-09-01', ['subscription.*', '*'])).toBeNull();
  });

  it('names facts in the original catalog, with the caller deciding where the name depends on the fact', () => {
    expect(legacyNameOf('invoice.paid')).toBe('order.paid');
    expect(legacyNameOf('customer.subscription.deleted')).toBe('subscription.cancelled');
    expect(legacyNameOf('checkout.session.completed')).toBeNull();
    expect(legacyNameOf('customer.subscription.updated', 'subscription.upgraded')).toBe('subscription.upgraded');
    expect(legacyNameOf('customer.subscription.updated', null)).toBeNull();
  });
});
