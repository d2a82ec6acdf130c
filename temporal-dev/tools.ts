// Absolute paths of the server binaries that temporal-dev/setup.mjs installs into .tools/.
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const toolsDir = resolve(projectRoot, '.tools');

const binaries = {
  temporal: resolve(toolsDir, 'venv/bin/temporal'),
  'temporal-test-server': resolve(toolsDir, 'venv/bin/temporal-test-server'),
  ferretdb: resolve(toolsDir, 'bin/ferretdb'),
  mailpit: resolve(toolsDir, 'bin/mailpit'),
  'stripe-mock': resolve(toolsDir, 'bin/stripe-mock'),
  localstripe: resolve(toolsDir, 'venv/bin/localstripe'),
  'venv-python': resolve(toolsDir, 'venv/bin/python'),
} as const;

export type ToolName = keyof typeof binaries;

/** Path of an installed tool; throws with the fix when setup has not run (or SKIP_TOOL_SETUP=1 was set). */
export function toolPath(name: ToolName): string {
  const path = binaries[name];
  if (!existsSync(path)) {
    throw new Error(`${name} is not installed at ${path}: run \`npm run setup\` (it installs the local servers into .tools/)`);
  }
  return path;
}

export const temporalCliPath = (): string => toolPath('temporal');
export const temporalTestServerPath = (): string => toolPath('temporal-test-server');
/**
 * FerretDB with our relay: FERRETDB_BIN when set (a relay built elsewhere, e.g. to test a change to
 * temporal-dev/ferretdb without replacing the shared build), else the one setup built into .tools/bin.
 */
export function ferretDbPath(): string {
  const override = process.env.FERRETDB_BIN;
  if (!override) return toolPath('ferretdb');
  if (!existsSync(override)) throw new Error(`FERRETDB_BIN names ${override}, which does not exist`);
  return resolve(override);
}
export const mailpitPath = (): string => toolPath('mailpit');
