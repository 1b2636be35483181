// Test-only: a TCP relay on loopback in front of a server (PostgreSQL), that a test can cut as a restart of the
// server would: every connection through it is reset and new ones are refused, until it is put back.
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpRelay {
  port: number;
  /** Resets every connection and stops listening: a connection attempt is refused. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpRelay(target: { host: string; port: number }): Promise<TcpRelay> {
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('error', () => {});
      s.on('close', () => open.delete(s));
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  const cut = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of open) s.resetAndDestroy();
    await closed;
  };
  return { port, cut, restore: () => listen(port), close: cut };
}
