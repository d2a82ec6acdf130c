// logs: the request log of a store (which key made each call), newest first, kept 30 days.
import { collections, type RequestLogDoc } from '../../store/collections';
import { num, str, type Command } from './types';

export const logCommands: Record<string, Command> = {
  logs: {
    summary: 'request logs of a store (--store [--key ak_id] [--limit 50])',
    options: { store: { type: 'string' }, key: { type: 'string' }, limit: { type: 'string' } },
    async run(ctx) {
      const filter: Record<string, unknown> = { store_id: str(ctx, 'store')! };
      const key = str(ctx, 'key', false);
      if (key) filter.api_key = key;
      return collections(ctx.db)
        .requestLogs.find(filter)
        .sort({ created: -1, _id: -1 })
        .limit(num(ctx, 'limit') ?? 50)
        .toArray();
    },
    format: (r) =>
      (r as RequestLogDoc[])
        .map((l) => `${new Date(l.created * 1000).toISOString()}  ${l.api_key ?? '-'}  ${l.method} ${l.path}  ${l.status}  ${l.duration_ms}ms  ${l._id}`)
        .join('\n'),
  },
};
