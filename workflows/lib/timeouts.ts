// How soon a dead worker's activity moves to another worker. The worker heartbeats every second while
// any activity runs (worker/activity-interceptors.ts), so five seconds without a beat means the process
// is gone (or frozen), while a slow but live attempt keeps its whole start-to-close budget. The
// start-to-close budgets beside each activity group come from the benchmarks' activity durations
// (test/bench/results/*.json, `activityDurations`; docs/operations.md "Recovery after a worker dies").
export const WORKER_GONE_AFTER = '5 seconds';
