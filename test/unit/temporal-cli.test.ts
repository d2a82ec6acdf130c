// What this tests: `npm run temporal` hands the CLI our connection settings under its own names:
// address and namespace, TLS on for TLS material or an API key (off when TEMPORAL_TLS=false), the
// mTLS pair and CA as the CLI's *_PATH variables, and our checks (a cert without its key) first.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv } from '../../temporal-dev/temporal-cli';

const dir = mkdtempSync(join(tmpdir(), 'temporal-cli-'));
const file = (name: string) => {
  const path = join(dir, name);
  writeFileSync(path, 'pem');
  return path;
};

describe('cliEnv', () => {
  it('defaults to the local dev server without TLS', () => {
    expect(cliEnv({})).toMatchObject({ TEMPORAL_ADDRESS: 'localhost:7233', TEMPORAL_NAMESPACE: 'default', TEMPORAL_TLS: 'false' });
  });

  it('maps an mTLS pair and CA onto the CLI path variables and turns TLS on', () => {
    const env = cliEnv({
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_NAMESPACE: 'ns.acct',
      TEMPORAL_TLS_CERT: file('c.pem'),
      TEMPORAL_TLS_KEY: file('k.pem'),
      TEMPORAL_TLS_CA: file('ca.pem'),
    });
    expect(env).toMatchObject({
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_NAMESPACE: 'ns.acct',
      TEMPORAL_TLS: 'true',
      TEMPORAL_TLS_CLIENT_CERT_PATH: join(dir, 'c.pem'),
      TEMPORAL_TLS_CLIENT_KEY_PATH: join(dir, 'k.pem'),
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: join(dir, 'ca.pem'),
    });
  });

  it('an API key turns TLS on unless TEMPORAL_TLS=false', () => {
    expect(cliEnv({ TEMPORAL_API_KEY: 'key' })).toMatchObject({ TEMPORAL_API_KEY: 'key', TEMPORAL_TLS: 'true' });
    expect(cliEnv({ TEMPORAL_API_KEY: 'key', TEMPORAL_TLS: 'false' })).toMatchObject({ TEMPORAL_API_KEY: 'key', TEMPORAL_TLS: 'false' });
  });

  it('refuses what the processes refuse: a certificate without its key', () => {
    expect(() => cliEnv({ TEMPORAL_TLS_CERT: file('only.pem') })).toThrow(/TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together/);
  });
});
