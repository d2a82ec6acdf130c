// logs: the request log of a store (which key made each call), newest first, kept 30 days.
import type { RequestLogDoc } from '../../store/collections';
import { listRequestLogs } from '../../store/request-logs';
import { num, str, type Command } from './types';

export const logCommands: Record<string, Command> = {
  logs: {
    summary: 'request logs of a store (--store [--key ak_id] [--limit 50])',
    options: { store: { type: 'string' }, key: { type: 'string' }, limit: { type: 'string' } },
    async run(ctx) {
      return listRequestLogs(ctx.db, str(ctx, 'store')!, str(ctx, 'key', false), num(ctx, 'limit') ?? 50);
    },
    format: (r) =>
      (r as RequestLogDoc[])
        .map(
          (l) => `${new Date(l.created * 1000).toISOString()}  ${l.api_key ?? '-'}  ${l.method} ${l.path}  ${l.status}  ${l.duration_ms}ms  ${l._id}`,
        )
        .join('\n'),
  },
};
