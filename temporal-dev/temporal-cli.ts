// `npm run temporal -- <args>`: the bundled Temporal CLI against the Temporal this project's processes
// use: TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE, and TLS and the API key read (and checked) as the API
// and worker read them (adapters/temporal-connection.ts), handed over in the CLI's own variables.
// Flags on the command line win over these, as the CLI's flags always win over its environment.
import { spawn } from 'node:child_process';
import { temporalConnectionOptions } from '../adapters/temporal-connection';
import { isEntryPoint } from '../adapters/entry-point';
import { temporalCliPath } from './tools';

type Env = Record<string, string | undefined>;

/** The CLI's environment for ours: connection settings under the names the CLI reads. */
export function cliEnv(env: Env): Env {
  const options = temporalConnectionOptions(env);
  const out: Env = { ...env, TEMPORAL_ADDRESS: options.address, TEMPORAL_NAMESPACE: env.TEMPORAL_NAMESPACE || 'default' };
  // Ours may name TLS files the CLI would not see; the CLI's own variables, when set, are left as given.
  const renamed: Array<[ours: string, cli: string]> = [
    ['TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_CLIENT_CERT_PATH'],
    ['TEMPORAL_TLS_KEY', 'TEMPORAL_TLS_CLIENT_KEY_PATH'],
    ['TEMPORAL_TLS_CA', 'TEMPORAL_TLS_SERVER_CA_CERT_PATH'],
  ];
  for (const [ours, cli] of renamed) if (env[ours] && !env[cli]) out[cli] = env[ours];
  out.TEMPORAL_TLS = options.tls ? 'true' : 'false';
  if (options.apiKey) out.TEMPORAL_API_KEY = options.apiKey;
  return out;
}

async function main(): Promise<void> {
  let cli: string;
  try {
    cli = temporalCliPath();
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
  const child = spawn(cli, process.argv.slice(2), { stdio: 'inherit', env: cliEnv(process.env) });
  const code = await new Promise<number>((resolve) => child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0))));
  process.exit(code);
}

if (isEntryPoint(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(`temporal: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(2);
  });
}
