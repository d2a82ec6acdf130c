// How every process (API, worker, admin CLI) reaches Temporal: the address plus, for a cluster or
// Temporal Cloud, TLS (server CA, mTLS client pair, SNI override) and an API key, all from the
// environment, so the same code runs on the local dev server and in production.
import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/client';

export interface TemporalConnectionOptions {
  address: string;
  tls?: TLSConfig;
  apiKey?: string;
}

type Env = Record<string, string | undefined>;

const read = (env: Env, name: string): Buffer | undefined => {
  const path = env[name];
  if (!path) return undefined;
  try {
    return readFileSync(path);
  } catch (error) {
    throw new Error(`${name}=${path} cannot be read: ${(error as Error).message}`, { cause: error });
  }
};

/** Connection options for `Connection` and `NativeConnection`; throws a message naming the variable at fault. */
export function temporalConnectionOptions(env: Env = process.env): TemporalConnectionOptions {
  const address = env.TEMPORAL_ADDRESS || 'localhost:7233';
  const crt = read(env, 'TEMPORAL_TLS_CERT');
  const key = read(env, 'TEMPORAL_TLS_KEY');
  if (Boolean(crt) !== Boolean(key)) throw new Error('TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together (mTLS needs both)');
  const ca = read(env, 'TEMPORAL_TLS_CA');
  const serverName = env.TEMPORAL_TLS_SERVER_NAME || undefined;
  const apiKey = env.TEMPORAL_API_KEY || undefined;
  const tlsFlag = env.TEMPORAL_TLS?.toLowerCase();
  if (tlsFlag !== undefined && tlsFlag !== '' && tlsFlag !== 'true' && tlsFlag !== 'false') {
    throw new Error(`TEMPORAL_TLS must be true or false, not '${env.TEMPORAL_TLS}'`);
  }
  // Any TLS material or an API key (Temporal Cloud) means TLS, unless it is switched off explicitly.
  const wantsTls = tlsFlag === 'true' || (tlsFlag !== 'false' && Boolean(crt || ca || serverName || apiKey));
  if (!wantsTls) return apiKey ? { address, apiKey } : { address };
  const tls: TLSConfig = {};
  if (crt && key) tls.clientCertPair = { crt, key };
  if (ca) tls.serverRootCACertificate = ca;
  if (serverName) tls.serverNameOverride = serverName;
  return apiKey ? { address, tls, apiKey } : { address, tls };
}

/** How long a process waits at start for its namespace to answer before it gives up (a fresh server takes seconds). */
export const NAMESPACE_READY_WITHIN_MS = 120_000;

/**
 * Resolves once DescribeNamespace answers: a reachable frontend still refuses requests for a moment
 * after start ("Not enough hosts to serve the request"), so readiness is a real call succeeding.
 */
export async function untilNamespaceAnswers(
  describe: () => Promise<unknown>,
  {
    timeoutMs = NAMESPACE_READY_WITHIN_MS,
    intervalMs = 250,
    onFirstRefusal,
  }: { timeoutMs?: number; intervalMs?: number; onFirstRefusal?: (error: unknown) => void } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      await describe();
      return;
    } catch (error) {
      if (attempt === 0) onFirstRefusal?.(error);
      if (Date.now() >= deadline)
        throw new Error(`Temporal did not answer DescribeNamespace within ${timeoutMs} ms: ${String(error)}`, { cause: error });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
