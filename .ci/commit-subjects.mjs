// Commit subjects of at most 72 characters (STYLE.md; issue 42): the subject says what changed, the body
// holds the detail. Checks every commit reachable from HEAD and not from the base (250988b, main when the rule
// was made), merge commits included ("Merge branch 'x'" is short). Usage: node .ci/commit-subjects.mjs
// [repo dir]; exit 1 when a subject is longer, or when the base is missing from a full clone (a wrong base
// would check nothing). A shallow clone without the base checks the commits it has and says so.
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';

export const BASE = '250988b';
export const MAX_SUBJECT = 72;

const git = (dir, ...args) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

function hasCommit(dir, rev) {
  try {
    git(dir, 'cat-file', '-e', `${rev}^{commit}`);
    return true;
  } catch {
    return false;
  }
}

/** The commits after `base` (or every commit a shallow clone holds), each with its subject and its length in characters. */
export function subjectsAfter(dir, base = BASE) {
  const shallow = git(dir, 'rev-parse', '--is-shallow-repository').trim() === 'true';
  const known = hasCommit(dir, base);
  if (!known && !shallow) throw new Error(`base commit ${base} is not in this clone's history`);
  const range = known ? [`${base}..HEAD`] : ['HEAD'];
  const out = git(dir, 'log', '--format=%h%x09%s', ...range);
  const commits = out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [hash, ...rest] = line.split('\t');
      const subject = rest.join('\t');
      return { hash, subject, length: [...subject].length };
    });
  return { commits, complete: known };
}

/** The commits whose subject is longer than `max` characters. */
export function longSubjects(commits, max = MAX_SUBJECT) {
  return commits.filter((c) => c.length > max);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = process.argv[2] ?? '.';
  try {
    git(dir, 'rev-parse', '--is-inside-work-tree');
  } catch {
    console.log('    not a git checkout: no commits to check');
    process.exit(0);
  }
  const { commits, complete } = subjectsAfter(dir);
  if (!complete) console.log(`    shallow clone without ${BASE}: checking the ${commits.length} commits it holds`);
  const long = longSubjects(commits);
  for (const c of long) console.log(`    ${c.hash}: ${c.length} characters: ${c.subject.slice(0, 100)}…`);
  const which = complete ? `after ${BASE}` : 'checked';
  console.log(`    ${commits.length} commits ${which}, ${long.length} with a subject over ${MAX_SUBJECT} characters`);
  process.exit(long.length ? 1 : 0);
}
