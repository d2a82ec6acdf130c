// What the worker wraps around every activity: a heartbeat every second while it runs, so each
// activity can declare a heartbeat timeout of a few seconds and a worker that dies is noticed that
// quickly (a slow but live one keeps beating); and, for benchmarks, a record of how long each took.
import type { Context } from '@temporalio/activity';
import type { ActivityInterceptors, ActivityInterceptorsFactory } from '@temporalio/worker';

export const HEARTBEAT_EVERY_MS = 1_000;

/** Heartbeats while a regular activity runs (one shorter than a second sends none); local activities are covered by their workflow task. */
export const heartbeatWhileRunning: ActivityInterceptorsFactory = (ctx: Context): ActivityInterceptors => ({
  inbound: {
    async execute(input, next) {
      if (ctx.info.isLocal) return next(input);
      const timer = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        return await next(input);
      } finally {
        clearInterval(timer);
      }
    },
  },
});

/** Durations (ms) per activity type, kept by a worker given `record()`; what timeouts are chosen from. */
export class ActivityTimings {
  private readonly byType = new Map<string, number[]>();

  record(): ActivityInterceptorsFactory {
    return (ctx) => ({
      inbound: {
        execute: async (input, next) => {
          const started = performance.now();
          try {
            return await next(input);
          } finally {
            const type = ctx.info.isLocal ? `${ctx.info.activityType} (local)` : ctx.info.activityType;
            const list = this.byType.get(type) ?? [];
            list.push(performance.now() - started);
            this.byType.set(type, list);
          }
        },
      },
    });
  }

  /** count, p50, p99 and max per activity type, in milliseconds. */
  summary(): Record<string, { count: number; p50: number; p99: number; max: number }> {
    const at = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
    const rows = [...this.byType].map(([type, values]) => {
      const sorted = [...values].sort((a, b) => a - b);
      const round = (ms: number) => Math.round(ms * 10) / 10;
      return [type, { count: sorted.length, p50: round(at(sorted, 50)), p99: round(at(sorted, 99)), max: round(sorted[sorted.length - 1]) }] as const;
    });
    return Object.fromEntries(rows.sort(([a], [b]) => a.localeCompare(b)));
  }
}
