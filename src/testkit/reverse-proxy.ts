// Test-only: a reverse proxy on loopback in front of the box, doing what nginx does with
// `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for` (and Caddy by default): every request is passed
// on from 127.0.0.1 with the address it came from appended to X-Forwarded-For. Or, with `header: 'forwarded'`,
// appended to Forwarded as `for=` (RFC 7239) and X-Forwarded-For left as the client sent it.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReverseProxy {
  url: string;
  close(): Promise<void>;
}

export async function startReverseProxy(target: string, opts: { header?: 'x-forwarded-for' | 'forwarded' } = {}): Promise<ReverseProxy> {
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    const peer = req.socket.remoteAddress ?? '';
    const headers = { ...req.headers };
    if (opts.header === 'forwarded') {
      const hop = peer.includes(':') ? `for="[${peer}]"` : `for=${peer}`;
      headers.forwarded = headers.forwarded ? `${headers.forwarded}, ${hop}` : hop;
    } else {
      headers['x-forwarded-for'] = headers['x-forwarded-for'] ? `${headers['x-forwarded-for']}, ${peer}` : peer;
    }
    const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, localAddress: '127.0.0.1' }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.writeHead(502).end());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
