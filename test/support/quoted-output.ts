// Another tool's report printed inside our test log. CI reads a run's closing lines to count its tests,
// and a pytest-style banner ("=== 2 warnings in 51.34s ===", schemathesis' last line) reads there as a
// pytest run that executed no test: every line is marked as quoted, and banners lose their fences.
export function quoteToolOutput(tool: string, text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((line) => `${tool} | ${line.replace(/^=+ (.*?) =+$/, '$1')}`.trimEnd())
    .join('\n');
}
