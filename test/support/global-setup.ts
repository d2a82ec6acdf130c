// Vitest global setup: one FerretDB, one headless in-memory Temporal dev server and one Mailpit (the
// SMTP_URL every worker sends buyer e-mails to) for the whole run, on free ports, unless MONGODB_URI /
// TEMPORAL_ADDRESS / SMTP_URL point at servers already running (then MAILPIT_URL names the inbox, if any).
// Test files reach them through inject('mongoUri' | 'temporalAddress' | 'mailpitUrl') or the same env variables.
// Meanwhile it builds (or finds cached) the workflow bundle every test worker loads, so their starts skip webpack.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startFerretDb, startMailpit, startTemporalDevServer } from '../../temporal-dev/servers';
import { cachedWorkflowBundle, workflowsPath } from '../../worker/workflow-bundle';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const workDir = mkdtempSync(join(tmpdir(), 'billing-test-servers-'));
  const stops: Array<() => Promise<void>> = [];

  const [mongoUri, temporalAddress, mail] = await Promise.all([
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
    process.env.SMTP_URL
      ? { smtpUrl: process.env.SMTP_URL, apiUrl: process.env.MAILPIT_URL ?? null }
      : // Every suite's buyer e-mails land here; keep them all (Mailpit drops the oldest past --max).
        startMailpit({ dbFile: join(workDir, 'mailpit', 'mailpit.db'), maxMessages: 100_000 }).then((mailpit) => {
          stops.push(mailpit.stop);
          return { smtpUrl: mailpit.smtpUrl, apiUrl: mailpit.apiUrl };
        }),
    // The inputs of createTestWorker's bundle (workflows/, no interceptor modules): test files then find it cached.
    // A failed build stops no server: each test file's worker then builds and reports it where it is used.
    cachedWorkflowBundle({ workflowsPath }).catch((error: unknown) =>
      console.warn(`workflow bundle: not built in the global setup: ${String(error)}`),
    ),
  ]).catch(async (error: unknown) => {
    // One server may have started while the other failed: stop it before reporting.
    await Promise.all(stops.map((stop) => stop()));
    throw error;
  });

  project.provide('mongoUri', mongoUri);
  project.provide('temporalAddress', temporalAddress);
  project.provide('mailpitUrl', mail.apiUrl);
  // Test workers are forked after this runs, so code that reads the environment sees the same servers.
  process.env.MONGODB_URI = mongoUri;
  process.env.TEMPORAL_ADDRESS = temporalAddress;
  process.env.SMTP_URL = mail.smtpUrl;

  return async () => {
    await Promise.all(stops.map((stop) => stop()));
    rmSync(workDir, { recursive: true, force: true });
  };
}
