// Whether a module is the process's entry point (`tsx api/server.ts`), by real path, so a path with
// spaces, a symlink or a relative argv[1] is still recognised.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function isEntryPoint(moduleUrl: string): boolean {
  if (!process.argv[1]) return false;
  try {
    return realpathSync(process.argv[1]) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}
