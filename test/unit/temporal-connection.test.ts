// What this tests: the Temporal connection settings read from the environment — plain for the local
// dev server, TLS with a CA, mTLS pair and SNI for a cluster, TLS plus API key for Temporal Cloud —
// and messages naming the variable at fault.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { temporalConnectionOptions } from '../../adapters/temporal-connection';

const dir = mkdtempSync(join(tmpdir(), 'temporal-tls-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const crt = file('client.pem', 'CERT');
const key = file('client.key', 'KEY');
const ca = file('ca.pem', 'CA');

describe('temporal connection options', () => {
  it('the local default is a plain connection to localhost:7233', () => {
    expect(temporalConnectionOptions({})).toEqual({ address: 'localhost:7233' });
  });

  it('a cluster with mTLS gets the client pair, the CA and the server name', () => {
    const options = temporalConnectionOptions({
      TEMPORAL_ADDRESS: 'temporal.example.com:7233',
      TEMPORAL_TLS_CERT: crt,
      TEMPORAL_TLS_KEY: key,
      TEMPORAL_TLS_CA: ca,
      TEMPORAL_TLS_SERVER_NAME: 'frontend.internal',
    });
    expect(options.address).toBe('temporal.example.com:7233');
    expect(options.tls?.clientCertPair?.crt.toString()).toBe('CERT');
    expect(options.tls?.clientCertPair?.key.toString()).toBe('KEY');
    expect(options.tls?.serverRootCACertificate?.toString()).toBe('CA');
    expect(options.tls?.serverNameOverride).toBe('frontend.internal');
  });

  it('an API key (Temporal Cloud) turns TLS on with the system roots', () => {
    expect(temporalConnectionOptions({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_API_KEY: 'secret' })).toEqual({
      address: 'ns.acct.tmprl.cloud:7233',
      tls: {},
      apiKey: 'secret',
    });
  });

  it('TEMPORAL_TLS=true alone asks for TLS; TEMPORAL_TLS=false keeps a plain connection with an API key', () => {
    expect(temporalConnectionOptions({ TEMPORAL_TLS: 'true' })).toEqual({ address: 'localhost:7233', tls: {} });
    expect(temporalConnectionOptions({ TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' })).toEqual({ address: 'localhost:7233', apiKey: 'k' });
  });

  it('half a client pair, an unreadable file or a wrong flag fail naming the variable', () => {
    expect(() => temporalConnectionOptions({ TEMPORAL_TLS_CERT: crt })).toThrow(/TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY/);
    expect(() => temporalConnectionOptions({ TEMPORAL_TLS_CA: join(dir, 'missing.pem') })).toThrow(/TEMPORAL_TLS_CA=.*missing\.pem cannot be read/);
    expect(() => temporalConnectionOptions({ TEMPORAL_TLS: 'yes' })).toThrow(/TEMPORAL_TLS must be true or false/);
  });
});
