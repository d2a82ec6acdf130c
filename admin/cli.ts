// The operator's admin CLI (`npm run admin -- <area> <command> [options] [--json]`). It talks to
// MongoDB directly. With --json every command prints one JSON document: tests and scripts rely on it.
import { parseArgs } from 'node:util';
import { connectDatabase, type DatabaseConnection } from '../store/database';
import { ensureIndexes } from '../store/indexes';
import { commands, type CommandContext } from './commands';
import { isEntryPoint } from '../adapters/entry-point';
import { ApiError } from '../domain/errors';
import { LISTEN_USAGE, runListen } from './listen';

function usage(): string {
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(22)} ${c.summary}`);
  const listen = `  ${'listen'.padEnd(22)} Forward the store's webhooks to a local URL (${LISTEN_USAGE.replace('usage: npm run admin -- listen ', '')})`;
  return ['usage: npm run admin -- <command> [options] [--json]', '', 'commands:', ...lines, listen].join('\n');
}

/** Standard input, read whole (empty when it is a terminal: nothing was piped in). */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text;
}

export async function runAdmin(
  argv: string[],
  env = process.env,
  stdin: () => Promise<string> = readStdin,
): Promise<{ code: number; output: string }> {
  // Commands are one or two words ("stores create", "demo").
  const twoWords = `${argv[0]} ${argv[1]}`;
  const consumed = commands[twoWords] ? 2 : 1;
  const name = consumed === 2 ? twoWords : argv[0];
  const command = name ? commands[name] : undefined;
  if (!command) return { code: 2, output: usage() };
  const rest = argv.slice(consumed);

  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...command.options, json: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    return { code: 2, output: `${(error as Error).message}\n\n${usage()}` };
  }
  const json = Boolean(parsed.values.json);
  let database: DatabaseConnection | null = null;
  try {
    database = await connectDatabase(env.MONGODB_URI ?? 'mongodb://127.0.0.1:27017/', env.MONGODB_DB ?? 'billing');
    const { db } = database;
    await ensureIndexes(db);
    const ctx: CommandContext = { db, values: parsed.values as Record<string, unknown>, positionals: parsed.positionals, env, stdin };
    const result = await command.run(ctx);
    return { code: 0, output: json ? JSON.stringify(result, null, 2) : command.format(result) };
  } catch (error) {
    const message = (error as Error).message;
    // A refusal typed by a service (ApiError) keeps its code and param, as the API would answer it.
    const typed = error instanceof ApiError ? { code: error.code, type: error.type, param: error.param } : {};
    return { code: 1, output: json ? JSON.stringify({ error: message, ...typed }) : `error: ${message}` };
  } finally {
    await database?.close();
  }
}

if (isEntryPoint(import.meta.url)) {
  const argv = process.argv.slice(2);
  // `listen` talks to the API over HTTP and runs until stopped: not a one-shot MongoDB command.
  if (argv[0] === 'listen') process.exit(await runListen(argv.slice(1)));
  const { code, output } = await runAdmin(argv);
  (code === 0 ? process.stdout : process.stderr).write(`${output}\n`);
  process.exit(code);
}
