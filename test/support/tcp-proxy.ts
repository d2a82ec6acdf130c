// A TCP proxy for fault tests: clients (the API, a worker) connect to it instead of a server (the
// Temporal frontend); cut() drops every connection and refuses new ones until restore(), as a network
// partition would. Bytes pass through untouched.
import net from 'node:net';

export interface TcpProxy {
  /** host:port to connect to instead of the target. */
  address: string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const [targetHost, targetPort] = splitAddress(target);
  const open = new Set<net.Socket>();
  let cut = false;
  const server = net.createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = net.connect(targetPort, targetHost);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      // Either side failing ends the pair; the error is the fault under test, not a test failure.
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    cut() {
      cut = true;
      for (const socket of open) socket.destroy();
    },
    restore() {
      cut = false;
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function splitAddress(address: string): [string, number] {
  const at = address.lastIndexOf(':');
  return [address.slice(0, at).replace(/^\[|\]$/g, '') || '127.0.0.1', Number(address.slice(at + 1))];
}
