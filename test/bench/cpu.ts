// CPU time by process around a bench phase, from /proc (Linux): this process's main thread (the API,
// the yardstick's routes, the mongodb driver; autocannon runs in a worker thread and is left out) and
// every process started below this one (FerretDB and its relay, the Temporal dev server). CPU per
// operation moves less with other load on a shared machine than requests per second do.
import { readdirSync, readFileSync } from 'node:fs';

/** Linux's USER_HZ: /proc counts CPU time in hundredths of a second. */
const TICK_MS = 10;

export interface CpuSnapshot {
  mainThreadMs: number;
  childrenMs: number;
}

/** utime + stime of one /proc stat line, in ms (the fields after the command name, which may hold spaces). */
function cpuMsOf(statLine: string): { ppid: number; ms: number } {
  const fields = statLine.slice(statLine.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(fields[1]), ms: (Number(fields[11]) + Number(fields[12])) * TICK_MS };
}

function readStat(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null; // the process ended between the listing and the read
  }
}

/** Every live process under `root` (children, grandchildren...): their CPU by command name (ferretdb, temporal...). */
function descendantsByName(root: number): Map<string, number> {
  const byParent = new Map<number, Array<{ pid: number; ms: number; name: string }>>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(`/proc/${entry}/stat`);
    if (!stat) continue;
    const { ppid, ms } = cpuMsOf(stat);
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    byParent.set(ppid, [...(byParent.get(ppid) ?? []), { pid: Number(entry), ms, name }]);
  }
  const totals = new Map<string, number>();
  const queue = [root];
  while (queue.length > 0) {
    for (const child of byParent.get(queue.pop()!) ?? []) {
      totals.set(child.name, (totals.get(child.name) ?? 0) + child.ms);
      queue.push(child.pid);
    }
  }
  return totals;
}

function descendantsMs(root: number): number {
  return [...descendantsByName(root).values()].reduce((a, b) => a + b, 0);
}

/**
 * CPU ms per operation by process over a phase: `this process` (all its threads: API, worker, load
 * generator), ferretdb (with its relay), temporal (the dev server), any other child, and their total.
 */
export function cpuByProcess(): { per(operations: number): Record<string, number> } {
  const own = process.cpuUsage();
  const children = descendantsByName(process.pid);
  return {
    per(operations) {
      const n = Math.max(1, operations);
      const ownUsed = process.cpuUsage(own);
      const used = { 'this process': (ownUsed.user + ownUsed.system) / 1000, ferretdb: 0, temporal: 0, other: 0 };
      for (const [name, total] of descendantsByName(process.pid)) {
        const column = name === 'ferretdb' || name === 'temporal' ? name : 'other';
        used[column] += total - (children.get(name) ?? 0);
      }
      const perOp = (ms: number) => Math.round((ms / n) * 1000) / 1000;
      const total = Object.values(used).reduce((a, b) => a + b, 0);
      return { ...Object.fromEntries(Object.entries(used).map(([name, ms]) => [name, perOp(ms)])), total: perOp(total) };
    },
  };
}

export function cpuSnapshot(): CpuSnapshot {
  const main = readStat(`/proc/${process.pid}/task/${process.pid}/stat`);
  return { mainThreadMs: main ? cpuMsOf(main).ms : Number.NaN, childrenMs: descendantsMs(process.pid) };
}

/** CPU ms per operation between two snapshots. */
export function cpuPerOperation(before: CpuSnapshot, after: CpuSnapshot, operations: number): CpuSnapshot {
  const per = (a: number, b: number) => Math.round(((b - a) / Math.max(1, operations)) * 1000) / 1000;
  return { mainThreadMs: per(before.mainThreadMs, after.mainThreadMs), childrenMs: per(before.childrenMs, after.childrenMs) };
}
