// MONGODB_SLOW_MS: the client's side of MongoDB's slow-query log. A command that takes at least that long is
// written as one JSON line naming its collection and the shape of its filter (values replaced by their
// types, so no customer data reaches the log). Off unless set; an operator's tool for "which read grows".
import type { CommandStartedEvent, CommandSucceededEvent, CommandFailedEvent, MongoClient } from 'mongodb';

export interface SlowCommandLog {
  /** Commands at or over this many milliseconds are logged. */
  slowMs: number;
  /** At most this many lines a second; the rest are counted and reported on the next line written. */
  linesPerSecond?: number;
  write?: (line: string) => void;
}

/** Commands started and not yet answered; the driver answers each, the bound guards against a leak if not. */
const MAX_IN_FLIGHT = 2_000;
const SHAPE_DEPTH = 4;

/** The filter of a command as the server reads it, whichever command carries it. */
function filterOf(command: Record<string, unknown>): unknown {
  const first = (list: unknown) => (Array.isArray(list) ? (list[0] as Record<string, unknown> | undefined) : undefined);
  if ('find' in command || 'count' in command) return command.filter ?? command.query;
  if ('findAndModify' in command) return command.query;
  if ('update' in command) return first(command.updates)?.q;
  if ('delete' in command) return first(command.deletes)?.q;
  if ('aggregate' in command) return command.pipeline;
  return undefined;
}

/** `value` with every leaf replaced by its type: keys and operators stay, data does not. */
export function shapeOf(value: unknown, depth = 0): unknown {
  if (Array.isArray(value)) return depth >= SHAPE_DEPTH ? '[...]' : value.slice(0, 3).map((item) => shapeOf(item, depth + 1));
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  if (value instanceof Date) return 'date';
  if (depth >= SHAPE_DEPTH) return '{...}';
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, item]) => [key, shapeOf(item, depth + 1)]));
}

/** Turns on command monitoring's slow-command lines for `client` (created with `monitorCommands: true`). */
export function logSlowCommands(client: MongoClient, options: SlowCommandLog): void {
  const write = options.write ?? ((line: string) => console.warn(line));
  const perSecond = options.linesPerSecond ?? 20;
  const started = new Map<number, { collection: unknown; shape: unknown; sort: unknown; limit: unknown }>();
  let second = 0;
  let written = 0;
  let suppressed = 0;

  client.on('commandStarted', (event: CommandStartedEvent) => {
    if (started.size >= MAX_IN_FLIGHT) started.delete(started.keys().next().value!);
    const command = event.command as Record<string, unknown>;
    started.set(event.requestId, {
      collection: command[event.commandName],
      shape: shapeOf(filterOf(command)),
      sort: command.sort === undefined ? undefined : shapeOf(command.sort),
      limit: command.limit,
    });
  });
  const finished = (event: CommandSucceededEvent | CommandFailedEvent, failed: boolean) => {
    const command = started.get(event.requestId);
    started.delete(event.requestId);
    if (event.duration < options.slowMs) return;
    const now = Math.floor(Date.now() / 1000);
    if (now !== second) [second, written] = [now, 0];
    if (written >= perSecond) return void suppressed++;
    written++;
    const line = { msg: 'slow database command', command: event.commandName, ms: Math.round(event.duration), failed, ...command, suppressed };
    suppressed = 0;
    write(JSON.stringify(line));
  };
  client.on('commandSucceeded', (event) => finished(event, false));
  client.on('commandFailed', (event) => finished(event, true));
}

/** MONGODB_SLOW_MS as a number of milliseconds, or undefined when unset; anything else stops the process at start. */
export function slowCommandMsFrom(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.MONGODB_SLOW_MS;
  if (raw === undefined || raw === '') return undefined;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 0) throw new Error(`MONGODB_SLOW_MS must be a whole number of milliseconds, got "${raw}"`);
  return ms;
}
