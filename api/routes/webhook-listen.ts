// GET /v1/webhook_endpoints/listen (an extension, outside the spec's paths): the store's events as
// Server-Sent Events while the connection lasts, each with the body and Service-Signature a delivery
// would carry, signed with a secret made for this session and sent first. No endpoint is created and
// nothing is retried: a client that reconnects replays what it missed with `since` (or Last-Event-ID).
// Bounded (docs/limits.md): sessions per store and per process, how far back a replay starts, each
// session's life, and what a slow reader holds (backpressure); it ends when its key or store does.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { CURRENT_CATALOG, EVENT_CATALOGS, normalizeEnabledEvents, unknownEventEntry, type EventCatalog } from '../../domain/event-catalogs';
import type { ServerResponse } from 'node:http';
import { ApiError } from '../../domain/errors';
import type { Database } from '../../store/database';
import { newWebhookSecret } from '../../store/webhook-endpoints';
import { streamEvents, type StreamedEvent } from '../../services/events/stream';
import { checkReplayStart, listenRefusal } from '../../services/events/listen-access';
import type { ListenLimits } from '../listen-limits';
import { SseWriter } from '../sse-writer';
import { authOf, type RouteApp } from '../context';
import { withErrors } from '../http-schemas';

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

/** Why a session ended: a refusal code of its key or store, or one of the stream's own reasons. */
type EndReason = string;

/** One open session: how to end it and what its reader still owes. */
interface OpenSession {
  storeId: string;
  end(reason: EndReason): void;
  writer: SseWriter;
}

/** Every session this process holds (the per-process cap counts them across API instances). */
const sessionsInProcess = new Set<OpenSession>();

/** Sessions open in this process, how many wait for their reader, and the bytes readers have not yet taken (tests and metrics). */
export function listenSessionsInProcess(): { open: number; behind: number; bufferedBytes: number } {
  let bufferedBytes = 0;
  let behind = 0;
  for (const session of sessionsInProcess) {
    bufferedBytes += session.writer.buffered;
    if (session.writer.behind) behind += 1;
  }
  return { open: sessionsInProcess.size, behind, bufferedBytes };
}

/** 429 when the store or the process holds as many sessions as it may. */
function admitSession(storeId: string, limits: ListenLimits): void {
  const ofStore = [...sessionsInProcess].filter((s) => s.storeId === storeId).length;
  if (ofStore >= limits.sessionsPerStore) {
    throw new ApiError('rate_limit', `At most ${limits.sessionsPerStore} listen sessions per store at once; close one first.`);
  }
  if (sessionsInProcess.size >= limits.sessionsPerProcess) {
    throw new ApiError('rate_limit', 'This API process holds as many listen sessions as it may; retry in a minute.', {
      headers: { 'Retry-After': '60' },
    });
  }
}

const webhookListenRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const mine = new Set<OpenSession>();
  // A stopping API ends its streams so the drain is not held by sessions that never finish on their own.
  app.addHook('preClose', async () => {
    for (const session of mine) session.end('shutdown');
  });
  listenRoute(app, mine);
};

function listenRoute(app: RouteApp, mine: Set<OpenSession>): void {
  const { db, config } = app.deps;
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
      const { store, apiKey } = authOf(request);
      const catalog = (request.query.api_version as EventCatalog | undefined) ?? CURRENT_CATALOG;
      const events = checkListenEvents(catalog, request.query.events);
      const header = lastEventId(request.headers['last-event-id']);
      const since = request.query.since ?? header;
      if (since !== null) await checkReplayStart(db, store._id, since, request.query.since ? 'since' : 'Last-Event-ID', config.listen);
      admitSession(store._id, config.listen);
      reply.hijack();
      const session = new AbortController();
      const writer = new SseWriter(reply.raw, config.listen.stallMs, session.signal);
      let reason: EndReason | null = null;
      const open: OpenSession = { storeId: store._id, writer, end: (why) => ((reason ??= why), session.abort()) };
      sessionsInProcess.add(open);
      mine.add(open);
      const guards = guardSession(db, config.listen, { keyId: apiKey.key_id, storeId: store._id, writer }, open.end);
      // The client went away (or the response ended): the session ends with it.
      reply.raw.on('close', () => open.end('client_closed'));
      try {
        writeHead(reply.raw, request.id);
        const secret = newWebhookSecret();
        await writer.write(`retry: 2000\nevent: ready\ndata: ${JSON.stringify({ secret, api_version: catalog, events })}\n\n`);
        const stream = streamEvents(db, { storeId: store._id, catalog, events, since, secret, signal: session.signal });
        const last = await pump(stream, writer, open.end);
        finish(reply.raw, writer, reason ?? 'ended', last);
      } catch (error) {
        request.log.warn({ err: error }, 'listen session ended by an error');
        reply.raw.destroy();
      } finally {
        guards.stop();
        sessionsInProcess.delete(open);
        mine.delete(open);
      }
    },
  );
}

function writeHead(out: ServerResponse, requestId: string): void {
  out.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'close',
    'x-accel-buffering': 'no',
    'request-id': requestId,
  });
}

/** Sends events as the reader takes them; the last id sent (where a reconnect resumes). */
async function pump(stream: AsyncGenerator<StreamedEvent>, writer: SseWriter, end: (reason: EndReason) => void): Promise<string | null> {
  let last: string | null = null;
  for await (const event of stream) {
    const data = JSON.stringify({ type: event.type, signature: event.signature, body: event.body });
    const outcome = await writer.write(`id: ${event.id}\nevent: webhook\ndata: ${data}\n\n`);
    if (outcome === 'stalled') end('reader_stalled');
    if (outcome !== 'written') break;
    last = event.id;
  }
  return last;
}

/**
 * Ends the response: a reader that kept up is told why (`event: end`, and where to resume); one that
 * is behind is cut off, so what it left unread is freed at once (it resumes from the last id it read).
 */
function finish(out: ServerResponse, writer: SseWriter, reason: EndReason, last: string | null): void {
  if (reason === 'reader_stalled' || out.destroyed || writer.buffered > 0) return void out.destroy();
  out.end(`event: end\ndata: ${JSON.stringify({ reason, last_event_id: last })}\n\n`);
}

/** The session's timers: its key and store re-read every keyCheckMs, its whole length capped, keep-alives. */
function guardSession(
  db: Database,
  limits: ListenLimits,
  owner: { keyId: string; storeId: string; writer: SseWriter },
  end: (reason: EndReason) => void,
): { stop(): void } {
  const check = () =>
    listenRefusal(db, owner.keyId, owner.storeId)
      .then((refusal) => refusal && end(refusal))
      .catch(() => undefined); // a failed read is tried again at the next check
  const checks = setInterval(check, limits.keyCheckMs);
  const lifetime = setTimeout(() => end('session_lifetime'), limits.sessionMaxMs);
  const keepAlive = setInterval(() => owner.writer.keepAlive(), KEEP_ALIVE_MS);
  return {
    stop() {
      clearInterval(keepAlive);
      clearInterval(checks);
      clearTimeout(lifetime);
    },
  };
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
