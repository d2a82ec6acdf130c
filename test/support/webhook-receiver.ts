// A real HTTPS webhook receiver for tests and benchmarks: a locally generated CA (selfsigned) signs a
// certificate for localhost/127.0.0.1; the worker trusts that CA through WEBHOOK_CA_FILE (or the
// `webhooks.ca` activity dependency) and reaches `localhost` through the allowlist, with every TLS
// and host check left on. Each hit is recorded; the answer is programmable per hit.
import { mkdtempSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import selfsigned from 'selfsigned';
import { waitFor } from '../../temporal-dev/wait';

export interface TestCa {
  /** PEM of the CA certificate (what the worker trusts). */
  caCert: string;
  /** The same, in a file (WEBHOOK_CA_FILE for a worker process). */
  caFile: string;
  leafCert: string;
  leafKey: string;
}

let caPromise: Promise<TestCa> | null = null;

/** One CA and one localhost certificate per test process. */
export function testCa(): Promise<TestCa> {
  caPromise ??= (async () => {
    const ca = await selfsigned.generate([{ name: 'commonName', value: 'Billing webhooks test CA' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      ],
    });
    const leaf = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      ca: { key: ca.private, cert: ca.cert },
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
        { name: 'extKeyUsage', serverAuth: true },
        {
          name: 'subjectAltName',
          altNames: [
            { type: 2, value: 'localhost' },
            { type: 7, ip: '127.0.0.1' },
          ],
        },
      ],
    });
    const caFile = join(mkdtempSync(join(tmpdir(), 'webhook-ca-')), 'ca.pem');
    writeFileSync(caFile, ca.cert);
    return { caCert: ca.cert, caFile, leafCert: leaf.cert, leafKey: leaf.private };
  })();
  return caPromise;
}

export interface ReceivedHit {
  index: number;
  path: string;
  headers: IncomingHttpHeaders;
  /** Raw body text, as signed. */
  body: string;
  event: { id: string; type: string; [key: string]: unknown };
  receivedAt: number;
}

/** The status to answer with; a promise holds the request until it settles. */
export type Responder = (hit: ReceivedHit) => number | Promise<number>;

export interface WebhookReceiver {
  port: number;
  /** https://localhost:<port><path> */
  url(path?: string): string;
  hits: ReceivedHit[];
  respond: Responder;
  waitForHits(count: number, timeoutMs?: number): Promise<ReceivedHit[]>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(options: { respond?: Responder } = {}): Promise<WebhookReceiver> {
  const ca = await testCa();
  const hits: ReceivedHit[] = [];
  const receiver: Partial<WebhookReceiver> = { hits, respond: options.respond ?? (() => 200) };
  const server = https.createServer({ key: ca.leafKey, cert: ca.leafCert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let event: ReceivedHit['event'] = { id: '', type: '' };
      try {
        event = JSON.parse(body) as ReceivedHit['event'];
      } catch {
        // Recorded as is; the test sees the empty id.
      }
      const hit: ReceivedHit = { index: hits.length, path: req.url ?? '/', headers: req.headers, body, event, receivedAt: Date.now() };
      hits.push(hit);
      Promise.resolve(receiver.respond!(hit)).then(
        (status) => {
          if (!res.destroyed) res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'no');
        },
        () => res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return Object.assign(receiver, {
    port,
    url: (path = '/hook') => `https://localhost:${port}${path}`,
    waitForHits: (count: number, timeoutMs = 20_000) =>
      waitFor(() => (hits.length >= count ? hits.slice(0, count) : false), { timeoutMs, intervalMs: 20, description: `${count} webhook hits` }),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  }) as WebhookReceiver;
}
