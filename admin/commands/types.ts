// The shape of an admin command: its options (node:util parseArgs), what it does, how it prints.
import type { Database } from '../../store/database';
import { validateRedirectUrl } from '../../domain/checkout';

export interface CommandContext {
  db: Database;
  values: Record<string, unknown>;
  positionals: string[];
  env: NodeJS.ProcessEnv;
  /** Standard input, read whole: where secrets come from (an argument would show in the process list). */
  stdin: () => Promise<string>;
}

export interface Command {
  summary: string;
  options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>;
  run(ctx: CommandContext): Promise<unknown>;
  format(result: unknown): string;
}

export function str(ctx: CommandContext, name: string, required = true): string | undefined {
  const value = ctx.values[name];
  if (typeof value === 'string' && value !== '') return value;
  if (required) throw new Error(`--${name} is required`);
  return undefined;
}

export function num(ctx: CommandContext, name: string, required = false): number | undefined {
  const value = str(ctx, name, required);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n)) throw new Error(`--${name} must be a number`);
  return n;
}

export function bool(ctx: CommandContext, name: string): boolean | undefined {
  const value = str(ctx, name, false);
  if (value === undefined) return undefined;
  if (['true', 'on', 'yes', '1'].includes(value)) return true;
  if (['false', 'off', 'no', '0'].includes(value)) return false;
  throw new Error(`--${name} takes true or false`);
}

export function positional(ctx: CommandContext, index: number, what: string): string {
  const value = ctx.positionals[index];
  if (!value) throw new Error(`missing ${what}`);
  return value;
}

/** --success-url: an https:// address (http://localhost too), or none to remove it; undefined when not given. */
export function successUrlOption(ctx: CommandContext): string | null | undefined {
  const value = str(ctx, 'success-url', false);
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  return validateRedirectUrl('--success-url', value, true);
}

export const asJson = (result: unknown) => JSON.stringify(result, null, 2);
