// Vitest global setup: one FerretDB and one headless in-memory Temporal dev server for the whole run,
// on free ports, unless MONGODB_URI / TEMPORAL_ADDRESS point at servers already running.
// Test files reach them through inject('mongoUri' | 'temporalAddress') or the same env variables.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startFerretDb, startTemporalDevServer } from '../../temporal-dev/servers';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const workDir = mkdtempSync(join(tmpdir(), 'billing-test-servers-'));
  const stops: Array<() => Promise<void>> = [];

  const [mongoUri, temporalAddress] = await Promise.all([
    process.env.MONGODB_URI ??
      startFerretDb({ dataDir: join(workDir, 'ferretdb') }).then((ferret) => {
        stops.push(ferret.stop);
        return ferret.uri;
      }),
    process.env.TEMPORAL_ADDRESS ??
      startTemporalDevServer({ headless: true, logFile: join(workDir, 'temporal.log') }).then((temporal) => {
        stops.push(temporal.stop);
        return temporal.address;
      }),
  ]).catch(async (error: unknown) => {
    // One server may have started while the other failed: stop it before reporting.
    await Promise.all(stops.map((stop) => stop()));
    throw error;
  });

  project.provide('mongoUri', mongoUri);
  project.provide('temporalAddress', temporalAddress);
  // Test workers are forked after this runs, so code that reads the environment sees the same servers.
  process.env.MONGODB_URI = mongoUri;
  process.env.TEMPORAL_ADDRESS = temporalAddress;

  return async () => {
    await Promise.all(stops.map((stop) => stop()));
    rmSync(workDir, { recursive: true, force: true });
  };
}
