// The local Stripe fakes that temporal-dev/setup.mjs installs, started on a free loopback port for one
// test file or bench and stopped by it: stripe-mock (Stripe's official, stateless mock: validates each
// request against Stripe's OpenAPI) and localstripe (stateful: customers, payment methods,
// PaymentIntents, refunds, a fake Stripe.js at /js.stripe.com/v3/). Readiness is waited for with a deadline.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnGroup, type ChildGroup } from '../../temporal-dev/processes';
import { freePort } from '../../temporal-dev/servers';
import { toolPath } from '../../temporal-dev/tools';
import { waitFor } from '../../temporal-dev/wait';

/** Any well-formed test key: neither fake checks it against an account. */
export const FAKE_STRIPE_SECRET_KEY = 'sk_test_fake000000000000000000000';
export const FAKE_STRIPE_PUBLISHABLE_KEY = 'pk_test_fake000000000000000000000';

export interface RunningStripeFake {
  /** Base address for STRIPE_API_URL, e.g. `http://127.0.0.1:41234` (no trailing slash). */
  url: string;
  port: number;
  logFile: string;
  stop(): Promise<void>;
}

export interface RunningLocalstripe extends RunningStripeFake {
  /** Its fake Stripe.js, for STRIPE_JS_URL. */
  jsUrl: string;
}

export interface StartStripeFakeOptions {
  port?: number;
  readyTimeoutMs?: number;
}

/** stripe-mock on 127.0.0.1: answers once GET /v1/customers succeeds with a test key. */
export async function startStripeMock(options: StartStripeFakeOptions = {}): Promise<RunningStripeFake> {
  const port = options.port ?? (await freePort());
  const logFile = join(mkdtempSync(join(tmpdir(), 'stripe-mock-')), 'stripe-mock.log');
  // Its HTTPS listener defaults to :12112: a port of the system's choosing lets two test files run one each.
  const addresses = ['-http-addr', `127.0.0.1:${port}`, '-https-addr', '127.0.0.1:'];
  const group = spawnGroup('stripe-mock', toolPath('stripe-mock'), addresses, { logFile });
  return running(group, port, logFile, options.readyTimeoutMs ?? 30_000);
}

// localstripe pickles its whole state to one fixed file (/tmp/localstripe.pickle) on every write:
// two instances would share it, so each starts from scratch and never writes it.
const LOCALSTRIPE_MAIN = [
  'import sys, localstripe.resources as resources, localstripe.server as server',
  'resources.Store.dump_to_disk = lambda self: None',
  "sys.argv = ['localstripe', '--from-scratch', '--port', sys.argv[1]]",
  'server.start()',
].join('\n');

/** localstripe (listens on every interface; addressed on 127.0.0.1), with its own in-memory state. */
export async function startLocalstripe(options: StartStripeFakeOptions = {}): Promise<RunningLocalstripe> {
  toolPath('localstripe');
  const port = options.port ?? (await freePort());
  const logFile = join(mkdtempSync(join(tmpdir(), 'localstripe-')), 'localstripe.log');
  const group = spawnGroup('localstripe', toolPath('venv-python'), ['-c', LOCALSTRIPE_MAIN, String(port)], { logFile });
  const fake = await running(group, port, logFile, options.readyTimeoutMs ?? 30_000);
  return { ...fake, jsUrl: `${fake.url}/js.stripe.com/v3/` };
}

async function running(group: ChildGroup, port: number, logFile: string, timeoutMs: number): Promise<RunningStripeFake> {
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(() => answers(url), {
      timeoutMs,
      description: `${group.name} to answer at ${url}`,
      abortIf: () => (group.hasExited() ? new Error(`${group.name} exited during startup (log: ${logFile})`) : undefined),
    });
  } catch (error) {
    await group.stop();
    throw error;
  }
  return { url, port, logFile, stop: async () => void (await group.stop()) };
}

async function answers(url: string): Promise<boolean> {
  const response = await fetch(`${url}/v1/customers?limit=1`, {
    headers: { authorization: `Bearer ${FAKE_STRIPE_SECRET_KEY}` },
    signal: AbortSignal.timeout(2_000),
  });
  return response.ok;
}
