// Child processes run in their own process group, stopped as a group, and never left behind:
// a terminal's Ctrl-C does not reach them (so the owner decides the shutdown order), and any group
// still running when this process exits or is signalled is terminated.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname } from 'node:path';

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ChildGroup {
  name: string;
  pid: number;
  child: ChildProcess;
  /** Resolves when the group leader has exited. */
  exited: Promise<ExitStatus>;
  hasExited(): boolean;
  /** SIGTERM (or `signal`) to the whole group, SIGKILL after `timeoutMs`; stragglers are killed too. */
  stop(options?: { signal?: NodeJS.Signals; timeoutMs?: number }): Promise<ExitStatus>;
}

export interface SpawnGroupOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Append stdout and stderr to this file; without it, stdout and stderr are pipes for the caller. */
  logFile?: string;
}

const runningGroups = new Set<ChildGroup>();

function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is already gone
  }
}

export function spawnGroup(name: string, command: string, args: string[], options: SpawnGroupOptions = {}): ChildGroup {
  installExitBackstop();
  let logFd: number | undefined;
  if (options.logFile) {
    mkdirSync(dirname(options.logFile), { recursive: true });
    logFd = openSync(options.logFile, 'a');
  }
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    // detached puts the child in a new process group (setsid), so it can be signalled as a group.
    detached: true,
    stdio: logFd === undefined ? ['ignore', 'pipe', 'pipe'] : ['ignore', logFd, logFd],
  });
  // The child holds its own copy of the descriptor.
  if (logFd !== undefined) closeSync(logFd);
  if (child.pid === undefined) throw new Error(`could not start ${name} (${command})`);
  const pid = child.pid;

  let done = false;
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once('exit', (code, signal) => {
      done = true;
      runningGroups.delete(group);
      resolve({ code, signal });
    });
  });
  child.once('error', () => undefined); // spawn errors surface as an exit; avoid an unhandled 'error'

  const group: ChildGroup = {
    name,
    pid,
    child,
    exited,
    hasExited: () => done,
    async stop({ signal = 'SIGTERM', timeoutMs = 15_000 } = {}) {
      if (!done) signalGroup(pid, signal);
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
      });
      const outcome = await Promise.race([exited, deadline]);
      clearTimeout(timer);
      if (outcome === 'timeout') signalGroup(pid, 'SIGKILL');
      const status = await exited;
      // Members that outlived the leader (e.g. a tsx child) must not be orphaned.
      signalGroup(pid, 'SIGKILL');
      return status;
    },
  };
  runningGroups.add(group);
  return group;
}

/** Stops every group still running, newest first. */
export async function stopAllGroups(): Promise<void> {
  for (const group of [...runningGroups].reverse()) await group.stop();
}

/** SIGKILL to every group still running: for a forced exit that cannot wait. */
export function killAllGroups(): void {
  for (const group of runningGroups) signalGroup(group.pid, 'SIGKILL');
}

let backstopInstalled = false;

function installExitBackstop(): void {
  if (backstopInstalled) return;
  backstopInstalled = true;
  // 'exit' handlers must be synchronous: signal the groups; they shut down on their own.
  // Prepended: a listener that calls process.exit() inside 'exit' (vitest's does) ends the process
  // before later listeners run.
  process.prependListener('exit', () => {
    for (const group of runningGroups) signalGroup(group.pid, 'SIGTERM');
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      // A program that handles this signal itself (the launcher, a test runner) owns the shutdown
      // order; the 'exit' handler above is then the backstop.
      if (process.listenerCount(signal) > 1) return;
      void stopAllGroups().finally(() => process.exit(128 + constants.signals[signal]));
    });
  }
}
