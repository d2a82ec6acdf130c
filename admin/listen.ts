// `npm run admin -- listen --key vk_... --forward-to http://localhost:4242/webhooks`: webhooks on a laptop.
// Opens GET /v1/webhook_endpoints/listen (Server-Sent Events), prints the session's signing secret,
// POSTs each event's body with its Service-Signature to the local URL as a delivery would, and prints
// one line per event. Nothing is retried; after a disconnect, `--since <last evt id>` replays the rest.
import { get as httpGet, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import { parseArgs } from 'node:util';

export interface ListenOptions {
  apiUrl: string;
  key: string;
  forwardTo: string;
  events?: string;
  apiVersion?: string;
  since?: string;
  signal?: AbortSignal;
  print?: (line: string) => void;
}

export interface ListenOutcome {
  secret: string | null;
  forwarded: number;
  /** The last event id seen: where `--since` resumes. */
  lastEventId: string | null;
  /** Why the API ended the session (`event: end`: session_lifetime, api_key_revoked, ...); null when it did not say. */
  endReason: string | null;
}

interface SseMessage {
  id: string | null;
  event: string;
  data: string;
}

/** Messages of a text/event-stream body, as they complete. */
async function* sseMessages(body: AsyncIterable<Buffer>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const message = parseSseBlock(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (message) yield message;
    }
  }
}

function parseSseBlock(block: string): SseMessage | null {
  const message: SseMessage = { id: null, event: 'message', data: '' };
  for (const line of block.split('\n')) {
    const colon = line.indexOf(':');
    if (colon === 0) continue; // a comment: keep-alive
    const [field, value] = colon === -1 ? [line, ''] : [line.slice(0, colon), line.slice(colon + 1).replace(/^ /, '')];
    if (field === 'id') message.id = value;
    else if (field === 'event') message.event = value;
    else if (field === 'data') message.data = message.data ? `${message.data}\n${value}` : value;
  }
  return message.data || message.id ? message : null;
}

/**
 * GET the stream on a connection of its own (node:http, not fetch's shared pool): aborting the
 * session closes exactly that socket. Resolves with the response once its headers arrive.
 */
function openStream(url: string, key: string, signal?: AbortSignal): Promise<IncomingMessage> {
  const get = url.startsWith('https:') ? httpsGet : httpGet;
  return new Promise((resolve, reject) => {
    const req = get(url, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, agent: false, signal }, resolve);
    req.on('error', reject);
  });
}

/** The API's typed error as one line (or the status when the body is not one). */
async function refusal(res: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of res) text += String(chunk);
  try {
    const { error } = JSON.parse(text) as { error: { code?: string; message?: string } };
    return `${res.statusCode} ${error.code ?? ''}: ${error.message ?? text}`;
  } catch {
    return `${res.statusCode}: ${text.slice(0, 200)}`;
  }
}

function listenUrl(options: ListenOptions): string {
  const url = new URL('/v1/webhook_endpoints/listen', options.apiUrl);
  if (options.events) url.searchParams.set('events', options.events);
  if (options.apiVersion) url.searchParams.set('api_version', options.apiVersion);
  if (options.since) url.searchParams.set('since', options.since);
  return url.toString();
}

/** POSTs one event to the local URL; the line to print. */
async function forward(options: ListenOptions, id: string, payload: { type: string; signature: string; body: string }): Promise<string> {
  const started = performance.now();
  let status: string;
  try {
    const res = await fetch(options.forwardTo, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', 'service-signature': payload.signature, 'user-agent': 'billing-listen/1' },
      body: payload.body,
      signal: AbortSignal.timeout(30_000),
    });
    await res.arrayBuffer();
    status = String(res.status);
  } catch (error) {
    status = `error (${(error as Error).message})`;
  }
  const ms = Math.round(performance.now() - started);
  return `${new Date().toISOString()}  ${payload.type.padEnd(36)} ${id}  [${status}]  ${ms} ms`;
}

/** Runs one session until the stream ends or `signal` aborts. */
export async function listen(options: ListenOptions): Promise<ListenOutcome> {
  const print = options.print ?? ((line: string) => console.log(line));
  const res = await openStream(listenUrl(options), options.key, options.signal);
  if (res.statusCode !== 200) throw new Error(`the API refused the session: ${await refusal(res)}`);
  const outcome: ListenOutcome = { secret: null, forwarded: 0, lastEventId: options.since ?? null, endReason: null };
  try {
    for await (const message of sseMessages(res)) {
      if (message.event === 'ready') {
        const ready = JSON.parse(message.data) as { secret: string; api_version: string; events: string[] };
        outcome.secret = ready.secret;
        print(`Ready. Your webhook signing secret is ${ready.secret} (this session only)`);
        print(`Forwarding ${ready.events.join(', ')} (catalog ${ready.api_version}) to ${options.forwardTo}; Ctrl-C to stop.`);
      } else if (message.event === 'end') {
        outcome.endReason = (JSON.parse(message.data) as { reason: string }).reason;
      } else if (message.event === 'webhook' && message.id) {
        print(await forward(options, message.id, JSON.parse(message.data) as { type: string; signature: string; body: string }));
        outcome.forwarded += 1;
        outcome.lastEventId = message.id;
      }
    }
  } catch (error) {
    if (!options.signal?.aborted) throw error;
  }
  return outcome;
}

export const LISTEN_USAGE =
  'usage: npm run admin -- listen --key vk_... --forward-to <url> [--events a,b] [--api-version 2026-09-01] [--since evt_...] [--api-url <url>]';

/** `listen` from the command line: the exit code. */
export async function runListen(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        key: { type: 'string' },
        'forward-to': { type: 'string' },
        events: { type: 'string' },
        'api-version': { type: 'string' },
        since: { type: 'string' },
        'api-url': { type: 'string' },
      },
      strict: true,
    }));
  } catch (error) {
    console.error(`${(error as Error).message}\n${LISTEN_USAGE}`);
    return 2;
  }
  const key = values.key ?? env.BILLING_API_KEY;
  if (!key || !values['forward-to']) {
    console.error(LISTEN_USAGE);
    return 2;
  }
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  const apiUrl = values['api-url'] ?? env.PUBLIC_URL ?? `http://localhost:${env.PORT ?? 3000}`;
  try {
    const outcome = await listen({
      apiUrl,
      key,
      forwardTo: values['forward-to'],
      events: values.events,
      apiVersion: values['api-version'],
      since: values.since,
      signal: stop.signal,
    });
    if (!stop.signal.aborted) {
      const why = outcome.endReason ? ` (${outcome.endReason})` : '';
      console.error(`The API closed the session${why}.${outcome.lastEventId ? ` Resume with --since ${outcome.lastEventId}.` : ''}`);
      return 1;
    }
    return 0;
  } catch (error) {
    console.error(`error: ${(error as Error).message}`);
    return 1;
  }
}
