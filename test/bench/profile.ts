// Optional CPU profiles of one bench phase at a time: with BENCH_PROFILE=<dir>, `profiled(name, fn)`
// records the main thread (API, worker activities, load generator callbacks) while `fn` runs and
// writes <dir>/<name>.cpuprofile (open it in Chrome DevTools or speedscope). Without it, just runs `fn`.
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

const profileDir = process.env.BENCH_PROFILE;

export async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
  if (!profileDir) return fn();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    mkdirSync(profileDir, { recursive: true });
    writeFileSync(join(profileDir, `${name}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}
