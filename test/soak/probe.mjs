// Preloaded (`--import`) into the soak's API and worker child processes: every SOAK_PROBE_MS it writes one
// line `SOAK_PROBE {json}` to stderr with the process's own RSS, heap and event-loop delay (p99, max since
// the previous line), so the soak reads each process's figures without touching its code. Plain JavaScript:
// worker threads (the Temporal workflow thread) inherit `--import` and may load it without tsx.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

if (isMainThread) startProbe();

function startProbe() {
  const everyMs = Number(process.env.SOAK_PROBE_MS ?? 5000);
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const timer = setInterval(() => {
    const memory = process.memoryUsage();
    const sample = { rss: memory.rss, heapUsed: memory.heapUsed, elP99Ms: delay.percentile(99) / 1e6, elMaxMs: delay.max / 1e6 };
    delay.reset();
    process.stderr.write(`SOAK_PROBE ${JSON.stringify(sample)}\n`);
  }, everyMs);
  // The probe never keeps a process alive that is shutting down.
  timer.unref();
}
