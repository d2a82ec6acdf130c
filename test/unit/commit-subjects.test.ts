// What this tests: CI's check of commit subjects (.ci/commit-subjects.mjs) on a real git repository: the
// commits after the base, merge commits included, a subject over 72 characters found, and a base missing from
// a full clone refused rather than checking nothing.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module of the CI script, without types
import { longSubjects, subjectsAfter } from '../../.ci/commit-subjects.mjs';

interface Commit {
  hash: string;
  subject: string;
  length: number;
}

let dir: string;
const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();

function commit(file: string, subject: string, body = ''): string {
  writeFileSync(join(dir, file), subject);
  git('add', file);
  git('commit', '-q', '-m', subject, ...(body ? ['-m', body] : []));
  return git('rev-parse', '--short', 'HEAD');
}

const LONG = `Relay: a pinned write's check decided from SQLite when certain (pinnedread.go, pinnedmatch.go)`;
let base: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'commit-subjects-'));
  git('init', '-q', '-b', 'main');
  git('config', 'user.email', 'ci@example.com');
  git('config', 'user.name', 'CI');
  git('config', 'commit.gpgsign', 'false');
  commit('old.txt', LONG); // before the base: never checked
  base = commit('base.txt', 'The base');
  commit('a.txt', 'README: a map of the docs', 'The detail goes in the body, however long it is.');
  git('checkout', '-q', '-b', 'feature');
  commit('b.txt', `${'x'.repeat(72)}`);
  git('checkout', '-q', 'main');
  commit('c.txt', 'Coverage figure in CI');
  git('merge', '-q', '--no-ff', '--no-edit', 'feature');
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("CI's check of commit subjects", () => {
  it('checks every commit after the base, merge commits included, and passes subjects of 72 characters', () => {
    const { commits, complete } = subjectsAfter(dir, base) as { commits: Commit[]; complete: boolean };
    expect(complete).toBe(true);
    expect(commits.map((c) => c.subject)).toEqual(
      expect.arrayContaining(["Merge branch 'feature'", 'x'.repeat(72), 'Coverage figure in CI', 'README: a map of the docs']),
    );
    expect(commits).toHaveLength(4);
    expect(longSubjects(commits)).toEqual([]);
  });

  it('finds a subject over 72 characters after the base', () => {
    commit('d.txt', LONG);
    const { commits } = subjectsAfter(dir, base) as { commits: Commit[] };
    expect(longSubjects(commits).map((c: Commit) => c.subject)).toEqual([LONG]);
  });

  it('refuses a base that a full clone does not hold', () => {
    expect(() => subjectsAfter(dir, 'deadbeef')).toThrow(/not in this clone's history/);
  });
});
