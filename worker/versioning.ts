// Worker Versioning (issue 28): the worker runs as one version of the Worker Deployment `billing`, its
// build id from BUILD_ID or the package version and git commit. Pinned workflows finish on the build
// that started them; auto-upgrade ones move to the current version (each workflow says which beside it).
// makeVersionCurrent is what `npm start` and the versioning test use to route new work to a version.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import type { WorkflowService } from '@temporalio/client';
import type { WorkerDeploymentOptions } from '@temporalio/worker';

export const DEPLOYMENT_NAME = 'billing';

export interface WorkerVersion {
  deploymentName: string;
  buildId: string;
}

const projectRoot = new URL('..', import.meta.url);

/** The package version, e.g. 0.1.0. */
function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('package.json', projectRoot), 'utf8')) as { version: string }).version;
}

/** The checkout's commit (12 hex digits), or undefined outside a git checkout. */
function gitCommit(): string | undefined {
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      cwd: projectRoot,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

/** BUILD_ID, else `<package version>-<git commit>`: two builds of different workflow code never share one. */
export function buildIdFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  if (env.BUILD_ID) return env.BUILD_ID;
  const commit = gitCommit();
  if (!commit) throw new Error('BUILD_ID is not set and no git commit was found: set BUILD_ID to this build (e.g. the image tag)');
  return `${packageVersion()}-${commit}`;
}

/** This process's version of the deployment; null when WORKER_VERSIONING=off (a server without deployments). */
export function workerVersionFromEnv(env: NodeJS.ProcessEnv = process.env): WorkerVersion | null {
  if (env.WORKER_VERSIONING === 'off') return null;
  return { deploymentName: env.WORKER_DEPLOYMENT_NAME || DEPLOYMENT_NAME, buildId: buildIdFromEnv(env) };
}

/** Versioning on as `version`; a workflow without its own annotation auto-upgrades (and keeps patched()). */
export function workerDeploymentOptions(version: WorkerVersion | null): WorkerDeploymentOptions | undefined {
  if (!version) return undefined;
  return { useWorkerVersioning: true, version, defaultVersioningBehavior: 'AUTO_UPGRADE' };
}

/** `deployment/build`, as the Web UI and the CLI show a version. */
export const shownVersion = (version: WorkerVersion): string => `${version.deploymentName}/${version.buildId}`;

/**
 * Makes `version` current once its workers have polled (the server refuses a version it has not seen):
 * retried until `timeoutMs`, then the last refusal is thrown.
 */
export async function makeVersionCurrent(
  service: WorkflowService,
  namespace: string,
  version: WorkerVersion,
  { timeoutMs = 60_000, intervalMs = 250 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await service.setWorkerDeploymentCurrentVersion({ namespace, ...version, identity: 'billing-launcher' });
      return;
    } catch (error) {
      if (Date.now() >= deadline)
        throw new Error(`${shownVersion(version)} did not become current within ${timeoutMs} ms: ${String(error)}`, { cause: error });
    }
    await delay(intervalMs);
  }
}
