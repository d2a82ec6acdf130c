// A process that asks the workflow bundle cache for one bundle (test/integration/platform/workflow-bundle.test.ts
// runs two at once): argv is the workflows path and the cache directory. Prints one JSON line: where the
// bundle came from, the cache's own log line if it built, and whether the bundle holds argv's third word.
import { cachedWorkflowBundle } from '../../worker/workflow-bundle';

const [workflowsPath, cacheDir, marker] = process.argv.slice(2);
const lines: string[] = [];
const { bundle, source } = await cachedWorkflowBundle({ workflowsPath }, { cacheDir, log: (line) => lines.push(line) });
process.stdout.write(`${JSON.stringify({ source, log: lines.join('\n'), hasMarker: bundle.code.includes(marker) })}\n`);
