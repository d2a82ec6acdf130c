// What this tests: MONGODB_SLOW_MS's log (store/slow-commands.ts): a slow command is one line naming its
// collection and filter shape with no stored value in it, fast commands write nothing, and a flood of slow
// commands writes at most the per-second bound, the rest counted on the next line.
import { EventEmitter } from 'node:events';
import type { MongoClient } from 'mongodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { logSlowCommands, shapeOf, slowCommandMsFrom } from '../../store/slow-commands';

function fakeClient() {
  const emitter = new EventEmitter();
  let requestId = 0;
  const run = (command: Record<string, unknown>, duration: number) => {
    const id = ++requestId;
    const commandName = Object.keys(command)[0]!;
    emitter.emit('commandStarted', { requestId: id, commandName, command });
    emitter.emit('commandSucceeded', { requestId: id, commandName, duration });
  };
  return { client: emitter as unknown as MongoClient, run };
}

afterEach(() => vi.useRealTimers());

describe('slow database commands', () => {
  it('logs a slow find with its collection and filter shape, never the values', () => {
    const lines: string[] = [];
    const { client, run } = fakeClient();
    logSlowCommands(client, { slowMs: 100, write: (line) => lines.push(line) });
    run({ find: 'events', filter: { store_id: 'acct_secret', _id: { $gt: 'evt_1' }, test: false }, sort: { _id: 1 }, limit: 50 }, 250);
    run({ find: 'events', filter: { store_id: 'acct_fast' } }, 20);
    run({ update: 'usage_rollups', updates: [{ q: { _id: 'r1', pending: 'j1' }, u: { $inc: { sum: 5 } } }] }, 300);
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      msg: 'slow database command',
      command: 'find',
      collection: 'events',
      ms: 250,
      shape: { store_id: 'string', _id: { $gt: 'string' }, test: 'boolean' },
      sort: { _id: 'number' },
      limit: 50,
    });
    expect(JSON.parse(lines[1]!)).toMatchObject({ command: 'update', collection: 'usage_rollups', shape: { _id: 'string', pending: 'string' } });
    expect(lines.join('\n')).not.toMatch(/acct_secret|evt_1|r1|j1/);
  });

  it('writes at most linesPerSecond lines a second and counts the rest on the next line', () => {
    vi.useFakeTimers({ now: 1_800_000_000_000 });
    const lines: string[] = [];
    const { client, run } = fakeClient();
    logSlowCommands(client, { slowMs: 10, linesPerSecond: 3, write: (line) => lines.push(line) });
    for (let i = 0; i < 10; i++) run({ find: 'customers', filter: { email: 'a@example.com' } }, 50);
    expect(lines).toHaveLength(3);
    vi.advanceTimersByTime(1_000);
    run({ find: 'customers', filter: {} }, 50);
    expect(lines).toHaveLength(4);
    expect(JSON.parse(lines[3]!)).toMatchObject({ suppressed: 7 });
  });

  it('shapes stay bounded in depth and array length; MONGODB_SLOW_MS must be a whole number', () => {
    expect(shapeOf({ a: { b: { c: { d: { e: 1 } } } } })).toEqual({ a: { b: { c: { d: '{...}' } } } });
    expect(shapeOf({ $in: ['a', 'b', 'c', 'd', 'e'] })).toEqual({ $in: ['string', 'string', 'string'] });
    expect(slowCommandMsFrom({})).toBeUndefined();
    expect(slowCommandMsFrom({ MONGODB_SLOW_MS: '250' })).toBe(250);
    expect(() => slowCommandMsFrom({ MONGODB_SLOW_MS: 'fast' })).toThrow(/MONGODB_SLOW_MS/);
  });
});
