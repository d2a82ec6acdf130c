// What this tests: every relative link in README.md and docs/**/*.md names a file that exists and, with a
// #fragment, a heading of that file (GitHub's anchor rules), so the README's map and the pages never dangle;
// the README stays a map (at most 150 lines) that links every page.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`)
    .sort(),
];

/** The lines of a markdown file outside fenced code blocks. */
function proseLines(text: string): string[] {
  let fenced = false;
  return text.split('\n').filter((line) => {
    if (line.startsWith('```')) fenced = !fenced;
    return !fenced && !line.startsWith('```');
  });
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of proseLines(text)) {
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const base = heading[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Relative link targets (`](target)`) of a markdown file, outside code blocks and inline code. */
function relativeLinks(text: string): string[] {
  const prose = proseLines(text).map((line) => line.replace(/`[^`]*`/g, '``'));
  const targets = prose.flatMap((line) => [...line.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]));
  return targets.filter((target) => !/^[a-z]+:/i.test(target));
}

/** Why a link from `page` does not resolve, or null when it does. */
function brokenLink(page: string, target: string): string | null {
  const [path, fragment] = target.split('#');
  const file = path === '' ? join(root, page) : resolve(dirname(join(root, page)), path);
  if (!file.startsWith(`${root}/`)) return null; // ../shared (spec, DESIGN.md) sits beside a checkout, not in a clone
  if (!existsSync(file)) return `${page}: ${target}: no such file`;
  if (fragment === undefined) return null;
  return anchorsOf(readFileSync(file, 'utf8')).has(fragment) ? null : `${page}: ${target}: no such heading`;
}

describe('README and docs links', () => {
  it('numbers repeated headings and drops punctuation as GitHub does', () => {
    const anchors = anchorsOf('# A: `b`, c\n## Configuration\n```sh\n# not a heading\n```\n### Configuration\n');
    expect([...anchors]).toEqual(['a-b-c', 'configuration', 'configuration-1']);
  });

  it('resolves every relative link to an existing file and heading', () => {
    const broken = pages.flatMap((page) => relativeLinks(readFileSync(join(root, page), 'utf8')).map((target) => brokenLink(page, target)));
    expect(broken.filter((reason) => reason !== null)).toEqual([]);
  });

  it('gives each docs page a one-line header linking back to the README, and the README links each page', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    for (const page of pages.filter((p) => p.startsWith('docs/'))) {
      const back = relative(dirname(join(root, page)), join(root, 'README.md'));
      expect(readFileSync(join(root, page), 'utf8').split('\n')[2], page).toContain(`](${back})`);
      expect(readme, page).toContain(`](${page}`);
    }
  });

  it('keeps the README a page of at most 150 lines, pages in subfolders included in the check', () => {
    expect(readFileSync(join(root, 'README.md'), 'utf8').trimEnd().split('\n').length).toBeLessThanOrEqual(150);
    expect(pages).toContain('docs/history/benchmarks.md');
  });
});
