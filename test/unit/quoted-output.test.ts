import { describe, expect, it } from 'vitest';
import { quoteToolOutput } from '../support/quoted-output';

// The last schemathesis run's summary, as it printed it.
const SUMMARY = `API Operations:
  Selected: 55/56
  Tested: 55

Test cases:
  738 generated, 738 passed

============================= 2 warnings in 51.34s =============================
`;

describe('quoteToolOutput', () => {
  it("marks every line as the tool's and keeps its words", () => {
    const quoted = quoteToolOutput('schemathesis', SUMMARY).split('\n');
    expect(quoted).toHaveLength(8);
    for (const line of quoted) expect(line.startsWith('schemathesis |')).toBe(true);
    expect(quoted).toContain('schemathesis |   738 generated, 738 passed');
  });

  it('leaves no line that reads as a pytest closing banner', () => {
    const quoted = quoteToolOutput('schemathesis', SUMMARY);
    expect(quoted).not.toMatch(/^=+ .* =+$/m);
    expect(quoted).not.toMatch(/={3,}/);
    expect(quoted.split('\n').at(-1)).toBe('schemathesis | 2 warnings in 51.34s');
  });
});
