// GET /v1/webhook_endpoints/listen (an extension, outside the spec's paths): the store's events as
// Server-Sent Events while the connection lasts, each with the body and Service-Signature a delivery
// would carry, signed with a secret made for this session and sent first. No endpoint is created and
// nothing is retried: a client that reconnects replays what it missed with `since` (or Last-Event-ID).
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { CURRENT_CATALOG, EVENT_CATALOGS, normalizeEnabledEvents, unknownEventEntry, type EventCatalog } from '../../domain/event-catalogs';
import { ApiError, notFound } from '../../domain/errors';
import { findEvent } from '../../store/events';
import { newWebhookSecret } from '../../store/webhook-endpoints';
import { streamEvents } from '../../services/events/stream';
import { authOf, type RouteApp } from '../context';
import { withErrors } from '../http-schemas';

/** Open sessions per store in one API process: a runaway script cannot hold every socket. */
export const LISTEN_SESSIONS_PER_STORE = 5;
const KEEP_ALIVE_MS = 15_000;

const ListenQuery = Type.Object(
  {
    events: Type.Optional(Type.String({ maxLength: 2000, description: 'Comma-separated event types or patterns with *; omitted: all.' })),
    api_version: Type.Optional(
      Type.Union(
        EVENT_CATALOGS.map((v) => Type.Literal(v)),
        { description: 'Catalog the events are named and rendered in; default 2026-11-01.' },
      ),
    ),
    since: Type.Optional(
      Type.String({ maxLength: 100, description: 'An event id: the events after it are sent first (the Last-Event-ID header does the same).' }),
    ),
  },
  { additionalProperties: false },
);

const SseStream = Type.String({
  description:
    'text/event-stream. First `event: ready` with `{secret, api_version, events}`; then per event `id: <evt_id>`, `event: webhook`, ' +
    '`data: {"type", "signature", "body"}`: POST `body` as is with the header `Service-Signature: <signature>`; `:` lines keep the connection alive.',
});

const webhookListenRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const open = new Map<string, Set<AbortController>>();
  // A stopping API ends its streams so the drain is not held by sessions that never finish on their own.
  app.addHook('preClose', async () => {
    for (const sessions of open.values()) for (const session of sessions) session.abort();
  });
  listenRoute(app, open);
};

function listenRoute(app: RouteApp, open: Map<string, Set<AbortController>>): void {
  const { db } = app.deps;
  app.get(
    '/webhook_endpoints/listen',
    {
      schema: {
        tags: ['webhook_listen'],
        summary: "Stream the store's events as Server-Sent Events (extension: the `listen` command)",
        querystring: ListenQuery,
        // Fastify's per-status `content` puts the stream under text/event-stream; errors stay JSON.
        response: { ...withErrors({}), 200: { description: 'The event stream', content: { 'text/event-stream': { schema: SseStream } } } },
      },
    },
    async (request, reply) => {
      const { store } = authOf(request);
      const catalog = (request.query.api_version as EventCatalog | undefined) ?? CURRENT_CATALOG;
      const events = checkListenEvents(catalog, request.query.events);
      const since = request.query.since ?? lastEventId(request.headers['last-event-id']);
      if (since !== null && !(await findEvent(db, store._id, since))) throw notFound('event', since, 'since');
      const sessions = open.get(store._id) ?? new Set<AbortController>();
      if (sessions.size >= LISTEN_SESSIONS_PER_STORE) {
        throw new ApiError('rate_limit', `At most ${LISTEN_SESSIONS_PER_STORE} listen sessions per store at once; close one first.`);
      }
      const session = new AbortController();
      sessions.add(session);
      open.set(store._id, sessions);
      reply.hijack();
      const out = reply.raw;
      // The client went away (or the response ended): the session ends with it.
      out.on('close', () => session.abort());
      out.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'close',
        'x-accel-buffering': 'no',
        'request-id': request.id,
      });
      const secret = newWebhookSecret();
      out.write(`retry: 2000\nevent: ready\ndata: ${JSON.stringify({ secret, api_version: catalog, events })}\n\n`);
      const keepAlive = setInterval(() => out.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
      try {
        for await (const event of streamEvents(db, { storeId: store._id, catalog, events, since, secret, signal: session.signal })) {
          out.write(
            `id: ${event.id}\nevent: webhook\ndata: ${JSON.stringify({ type: event.type, signature: event.signature, body: event.body })}\n\n`,
          );
        }
      } catch (error) {
        request.log.warn({ err: error }, 'listen session ended by an error');
      } finally {
        clearInterval(keepAlive);
        sessions.delete(session);
        if (sessions.size === 0) open.delete(store._id);
        out.end();
      }
    },
  );
}

/** The `events` filter as entries of the catalog, or 400 invalid_event_type naming the first unknown one. */
function checkListenEvents(catalog: EventCatalog, raw: string | undefined): string[] {
  const entries =
    raw === undefined
      ? []
      : raw
          .split(',')
          .map((entry) => entry.trim())
          .filter((entry) => entry !== '');
  const unknown = unknownEventEntry(catalog, entries);
  if (unknown) throw new ApiError('invalid_event_type', `'${unknown.entry}' is not an event type of catalog ${catalog}.`, { param: 'events' });
  return normalizeEnabledEvents(entries);
}

function lastEventId(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header[0] : header;
  return value ? value : null;
}

export default webhookListenRoutes;
