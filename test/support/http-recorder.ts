// A small recording HTTP proxy for provider contract tests: requests go through it to a fake (stripe-mock),
// and each exchange is kept (method, path, the headers a provider reads, the form body, the status), so a
// test can check what was sent, which stripe-mock itself does not echo. `rewrite` may change a JSON answer
// on its way back (e.g. a search result carrying our metadata, which a stateless fake cannot know). At most
// `maxExchanges` are kept (oldest dropped); bodies are read whole, as a fake's answers are small. `hold()`
// keeps requests waiting until released, as a slow provider would.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedExchange {
  method: string;
  /** Path without the query. */
  path: string;
  query: URLSearchParams;
  headers: Record<string, string | undefined>;
  /** The request's form body as Stripe's client encodes it (`metadata[charge_key]` keys). */
  form: URLSearchParams;
  status: number;
  response: string;
}

/** An answer of another status (e.g. Stripe's 402 card error) in place of the fake's accepted one. */
export class InjectedAnswer {
  constructor(
    readonly status: number,
    readonly json: unknown,
  ) {}
}

/** The JSON to answer instead, or an InjectedAnswer; only accepted (2xx) answers are rewritten. */
export type ResponseRewrite = (exchange: Omit<RecordedExchange, 'status' | 'response'>, json: unknown) => unknown;

export interface HttpRecorder {
  url: string;
  exchanges: RecordedExchange[];
  /** Replaces the rewrite (null: answers pass untouched). */
  setRewrite(rewrite: ResponseRewrite | null): void;
  /** Requests received and not yet forwarded (held) or answered. */
  inFlight(): number;
  /** Holds every request until the returned release is called (a slow provider, for abort tests). */
  hold(): () => void;
  clear(): void;
  close(): Promise<void>;
}

export const RECORDED_HEADERS = ['idempotency-key', 'stripe-account', 'stripe-version', 'authorization', 'content-type'];

// fetch sets these itself (and refuses some).
const HOP_BY_HOP = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade']);

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startHttpRecorder(upstream: string, maxExchanges = 1_000): Promise<HttpRecorder> {
  const exchanges: RecordedExchange[] = [];
  let rewrite: ResponseRewrite | null = null;
  let held: Promise<void> = Promise.resolve();
  let inFlight = 0;
  const server: Server = createServer((request, reply) => {
    inFlight++;
    let givenUp = false;
    reply.on('close', () => {
      inFlight--;
      givenUp = !reply.writableFinished;
    });
    void (async () => {
      const body = await bodyOf(request);
      await held;
      // The client gave up while held: like a request that never left it, nothing is forwarded.
      if (givenUp) return;
      const url = new URL(request.url ?? '/', upstream);
      const headers = Object.fromEntries(RECORDED_HEADERS.map((name) => [name, request.headers[name] as string | undefined]));
      const sent = { method: request.method ?? 'GET', path: url.pathname, query: url.searchParams, headers, form: new URLSearchParams(body) };
      const forwarded = Object.fromEntries(Object.entries(request.headers).filter(([name]) => !HOP_BY_HOP.has(name)) as [string, string][]);
      const answer = await fetch(url, { method: sent.method, headers: forwarded, body: sent.method === 'GET' ? undefined : body });
      let text = await answer.text();
      let status = answer.status;
      if (rewrite && answer.ok) {
        const rewritten = rewrite(sent, JSON.parse(text));
        if (rewritten instanceof InjectedAnswer) status = rewritten.status;
        text = JSON.stringify(rewritten instanceof InjectedAnswer ? rewritten.json : rewritten);
      }
      // What the fake itself answered: an injected failure still proves the request was accepted.
      exchanges.push({ ...sent, status: answer.status, response: text });
      if (exchanges.length > maxExchanges) exchanges.shift();
      reply.writeHead(status, {
        'content-type': answer.headers.get('content-type') ?? 'application/json',
        'request-id': answer.headers.get('request-id') ?? '',
      });
      reply.end(text);
    })().catch((error: unknown) => {
      reply.writeHead(502, { 'content-type': 'text/plain' });
      reply.end(`recorder: ${String(error)}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    setRewrite: (next) => void (rewrite = next),
    inFlight: () => inFlight,
    hold: () => {
      let release!: () => void;
      held = new Promise<void>((resolve) => (release = resolve));
      return () => {
        held = Promise.resolve();
        release();
      };
    },
    clear: () => void exchanges.splice(0),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
