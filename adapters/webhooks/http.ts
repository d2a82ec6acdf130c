// The HTTP side of a delivery: one POST over TLS to the endpoint's URL with a deadline, through a
// keep-alive agent whose lookup refuses private addresses at connection time (host-policy.ts), and
// trusting the system roots plus WEBHOOK_CA_FILE. One deadline covers the whole exchange (connect, TLS,
// request, status and body), and at most 64 KiB of the answer is read: past either, the socket is
// destroyed, so no receiver holds a worker socket. Every outcome becomes data (status, error text,
// duration); only a cancellation (the worker shutting down) is thrown, so the attempt is retried.
import https from 'node:https';
import { createSecureContext, rootCertificates } from 'node:tls';
import { isIP } from 'node:net';
import { RECEIVER_TIMEOUT_MS } from '../../domain/webhook-retry';
import type { WebhookNetwork } from './config';
import { guardedLookup, privateHostReason, type HostPolicy } from './host-policy';

export interface PostOutcome {
  ok: boolean;
  responseStatus: number | null;
  /** `HTTP 500`, `timeout`, or the network or TLS error; null on success. */
  error: string | null;
  durationMs: number;
}

export interface WebhookPost {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs?: number;
  /** Aborts the request without an outcome (activity cancellation). */
  signal?: AbortSignal;
}

export interface WebhookHttpClient {
  post(request: WebhookPost): Promise<PostOutcome>;
  close(): void;
}

export const USER_AGENT = 'BillingWebhooks/1.0';
/** The most of a receiver's answer a delivery reads (and drops); a longer one has its socket destroyed. */
export const RESPONSE_BODY_MAX_BYTES = 64 * 1024;

class DeadlineExceeded extends Error {
  constructor() {
    super('timeout');
  }
}

function describeError(error: unknown): string {
  if (error instanceof DeadlineExceeded) return 'timeout';
  const message = error instanceof Error ? error.message : String(error);
  return message.slice(0, 300) || 'network error';
}

type Attempt = PostOutcome & { reusedReset?: boolean };

/** The keep-alive agent and its guarded lookup, shared by every POST of one client. */
interface Connection {
  agent: https.Agent;
  lookup: ReturnType<typeof guardedLookup>;
}

export function createWebhookHttpClient(network: WebhookNetwork): WebhookHttpClient {
  const policy: HostPolicy = { allowedHosts: network.allowedHosts, resolver: network.resolver };
  const lookup = guardedLookup(policy);
  const agent = new https.Agent({
    keepAlive: true,
    maxSockets: 64,
    maxFreeSockets: 16,
    // Idle sockets close before typical server keep-alive timeouts (5 s in Node) to avoid resets on reuse.
    timeout: 4_000,
    // Built once: given as `ca`, every new connection parsed the ~140 system roots again (CPU per handshake).
    secureContext: network.ca ? createSecureContext({ ca: [...rootCertificates, network.ca] }) : undefined,
    lookup,
  });
  const connection: Connection = { agent, lookup };
  return {
    post: (request) => post(connection, policy, request),
    close() {
      agent.destroy();
    },
  };
}

async function post(connection: Connection, policy: HostPolicy, request: WebhookPost): Promise<PostOutcome> {
  const started = performance.now();
  const url = checkedUrl(policy, request.url);
  if (!(url instanceof URL)) return url;
  let outcome = await postOnce(connection, request, url, started);
  if (outcome.reusedReset) outcome = await postOnce(connection, request, url, started);
  const { reusedReset: _ignored, ...result } = outcome;
  return result;
}

/** The URL to post to, or the outcome that refuses it before any connection. */
function checkedUrl(policy: HostPolicy, raw: string): URL | PostOutcome {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, responseStatus: null, error: 'invalid url', durationMs: 0 };
  }
  if (url.protocol !== 'https:') return { ok: false, responseStatus: null, error: 'invalid url: https only', durationMs: 0 };
  // Literal addresses never reach the lookup: check them here.
  const reason = privateHostReason(policy, url.hostname);
  if (reason) return { ok: false, responseStatus: null, error: `private_host: ${reason}`, durationMs: 0 };
  return url;
}

function postOnce({ agent, lookup }: Connection, request: WebhookPost, url: URL, started: number): Promise<Attempt> {
  const timeoutMs = request.timeoutMs ?? RECEIVER_TIMEOUT_MS;
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (outcome: Attempt) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    const req = https.request(requestOptions(agent, lookup, request, url));
    // Before the status: a timeout. After it: the answer stands and the rest of the body is cut off.
    let atDeadline = (): void => void req.destroy(new DeadlineExceeded());
    const timer = setTimeout(() => atDeadline(), timeoutMs);
    const onAbort = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(request.signal?.reason ?? new Error('cancelled'));
    };
    request.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('response', (res) => {
      // The answer is its status; the body is read (up to 64 KiB, within the deadline) and dropped, so the socket can be reused.
      const status = res.statusCode ?? 0;
      const ok = status >= 200 && status < 300;
      const answered: Attempt = { ok, responseStatus: status, error: ok ? null : `HTTP ${status}`, durationMs: elapsed() };
      const cutOff = () => {
        res.destroy();
        req.destroy();
        finish(answered);
      };
      atDeadline = cutOff;
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > RESPONSE_BODY_MAX_BYTES) cutOff();
      });
      res.on('end', () => finish(answered));
      res.on('error', () => finish(answered));
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      finish({
        ok: false,
        responseStatus: null,
        error: describeError(error),
        durationMs: elapsed(),
        // A kept-alive socket the server had just closed: worth one immediate retry on a new socket.
        reusedReset: req.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE'),
      });
    });
    req.end(request.body);
  });
}

function requestOptions(agent: https.Agent, lookup: Connection['lookup'], request: WebhookPost, url: URL): https.RequestOptions {
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  return {
    protocol: 'https:',
    hostname,
    port: url.port || 443,
    path: `${url.pathname}${url.search}`,
    method: 'POST',
    agent,
    lookup,
    // SNI carries names only.
    servername: isIP(hostname) === 0 ? hostname : undefined,
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(request.body)),
      'User-Agent': USER_AGENT,
      ...request.headers,
    },
  };
}
