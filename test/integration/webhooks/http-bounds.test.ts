// What this tests: a delivery's HTTP exchange against real TLS receivers that misbehave. One deadline
// (10 s) covers the whole exchange and at most 64 KiB of the answer is read; past either the socket is
// destroyed (the receiver sees it close), so no receiver can hold a worker socket. New connections
// reuse the client's one TLS context (the extra CA with the system roots), not one built per handshake.
import https from 'node:https';
import tls from 'node:tls';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createWebhookHttpClient, RESPONSE_BODY_MAX_BYTES, type WebhookHttpClient } from '../../../adapters/webhooks/http';
import { RECEIVER_TIMEOUT_MS } from '../../../domain/webhook-retry';
import { waitFor } from '../../support/env';
import { testCa } from '../../support/webhook-receiver';

type Behaviour = (res: ServerResponse) => void;

let server: https.Server;
let port: number;
let http: WebhookHttpClient;
const behaviours = new Map<string, Behaviour>();
/** Whether each path's response socket was closed, and whether its body had been written out in full. */
const closed = new Map<string, { finished: boolean }>();

beforeAll(async () => {
  const ca = await testCa();
  server = https.createServer({ key: ca.leafKey, cert: ca.leafCert }, (req, res) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '/';
      res.on('close', () => closed.set(path, { finished: res.writableFinished }));
      behaviours.get(path)!(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
  http = createWebhookHttpClient({ allowedHosts: ['localhost'], ca: ca.caCert });
});

afterAll(async () => {
  http?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

function post(path: string, behaviour: Behaviour, timeoutMs?: number) {
  behaviours.set(path, behaviour);
  const started = performance.now();
  return http
    .post({ url: `https://localhost:${port}${path}`, body: '{}', headers: {}, timeoutMs })
    .then((outcome) => ({ outcome, ms: performance.now() - started }));
}

it('a receiver answering 200 and streaming its body forever: the attempt ends at the 10-second deadline as a success and its socket is closed', async () => {
  const { outcome, ms } = await post('/forever', (res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const drip = setInterval(() => res.write('x'), 50);
    res.on('close', () => clearInterval(drip));
  });
  expect(outcome).toMatchObject({ ok: true, responseStatus: 200, error: null });
  expect(ms).toBeGreaterThanOrEqual(RECEIVER_TIMEOUT_MS - 500);
  expect(ms).toBeLessThan(RECEIVER_TIMEOUT_MS + 5_000);
  await waitFor(() => closed.has('/forever'), { timeoutMs: 5_000, description: 'the receiver sees its socket closed' });
}, 30_000);

it('a 1 MiB answer is read only up to 64 KiB: the socket is destroyed before the receiver could finish writing', async () => {
  const { outcome, ms } = await post('/huge', (res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    // 1 MiB in 16 KiB pieces over about 1.3 s: the client's cut comes long before the last piece.
    let sent = 0;
    const piece = setInterval(() => {
      if (res.destroyed) return clearInterval(piece);
      sent += 16 * 1024;
      if (sent >= 1024 * 1024) {
        clearInterval(piece);
        res.end(Buffer.alloc(16 * 1024, 'y'));
      } else res.write(Buffer.alloc(16 * 1024, 'y'));
    }, 20);
  });
  expect(outcome).toMatchObject({ ok: true, responseStatus: 200 });
  expect(ms).toBeLessThan(1_000);
  await waitFor(() => closed.has('/huge'), { timeoutMs: 5_000, description: 'the receiver sees its socket closed' });
  expect(closed.get('/huge')!.finished).toBe(false);
  expect(RESPONSE_BODY_MAX_BYTES).toBe(64 * 1024);
});

it('a small answer is read to its end and the attempt reports at once; headers after the deadline are a timeout', async () => {
  const quick = await post('/small', (res) => res.writeHead(204).end());
  expect(quick.outcome).toMatchObject({ ok: true, responseStatus: 204 });
  expect(quick.ms).toBeLessThan(2_000);
  const late = await post('/late', (res) => setTimeout(() => !res.destroyed && res.writeHead(200).end('late'), 3_000), 1_000);
  expect(late.outcome).toMatchObject({ ok: false, responseStatus: null, error: 'timeout' });
  expect(late.ms).toBeLessThan(2_500);
});

it('new connections reuse the one TLS context of the client (system roots and the extra CA): none is built per connection', async () => {
  let handshakes = 0;
  const count = () => void (handshakes += 1);
  server.on('secureConnection', count);
  const built = vi.spyOn(tls, 'createSecureContext');
  try {
    // `Connection: close` makes each POST open a new TLS connection.
    for (let i = 0; i < 3; i++) {
      const { outcome } = await post(`/close-${i}`, (res) => res.writeHead(200, { connection: 'close' }).end('ok'));
      expect(outcome).toMatchObject({ ok: true, responseStatus: 200 });
    }
    expect(handshakes).toBe(3);
    expect(built).not.toHaveBeenCalled();
    // The context still verifies: a client whose extra CA is another one refuses this receiver.
    const other = createWebhookHttpClient({ allowedHosts: ['localhost'], ca: tls.rootCertificates[0] });
    try {
      const refused = await other.post({ url: `https://localhost:${port}/close-other`, body: '{}', headers: {} });
      expect(refused).toMatchObject({ ok: false, responseStatus: null, error: expect.stringMatching(/certificate/) });
    } finally {
      other.close();
    }
  } finally {
    built.mockRestore();
    server.off('secureConnection', count);
  }
});
