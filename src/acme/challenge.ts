// HTTP-01 challenges (RFC 8555 8.3): the key authorizations of orders in flight, and the tiny listener on
// acme_http_port that answers GET /.well-known/acme-challenge/<token> and nothing else. Everything else is a
// redirect to https_port, or 404 when that is off: port 80 faces the Internet and must never expose the API.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

const PREFIX = '/.well-known/acme-challenge/';
// RFC 8555 8.3: the token is base64url; anything else cannot be one of ours.
const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;

export class Challenges {
  private readonly answers = new Map<string, string>();

  set(token: string, keyAuthorization: string): void {
    this.answers.set(token, keyAuthorization);
  }

  delete(token: string): void {
    this.answers.delete(token);
  }

  /**
   * Answers the request if it asks for a challenge (true), whether or not the token is known; false leaves the
   * request to the caller (the API's own listener, when acme_http_port is http_port).
   */
  answer(req: IncomingMessage, res: ServerResponse): boolean {
    const path = (req.url ?? '').split('?')[0];
    if (!path.startsWith(PREFIX)) return false;
    const token = path.slice(PREFIX.length);
    const found = (req.method === 'GET' || req.method === 'HEAD') && TOKEN.test(token) ? this.answers.get(token) : undefined;
    if (found === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no such challenge\n');
    } else {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': Buffer.byteLength(found) }).end(req.method === 'HEAD' ? undefined : found);
    }
    return true;
  }
}

/** The listener on acme_http_port: challenges, else a redirect to `httpsPort` on the same host (0: 404). */
export function createChallengeServer(challenges: Challenges, httpsPort: number): Server {
  const server = createServer({ maxHeaderSize: 8 * 1024, requestTimeout: 10_000, headersTimeout: 10_000 }, (req, res) => {
    if (challenges.answer(req, res)) return;
    const host = /^[A-Za-z0-9.-]+/.exec(req.headers.host ?? '')?.[0];
    if (httpsPort === 0 || !host || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    const path = (req.url ?? '/').startsWith('/') ? req.url : '/';
    res.writeHead(301, { location: `https://${host}${httpsPort === 443 ? '' : `:${httpsPort}`}${path}` }).end();
  });
  server.keepAliveTimeout = 5_000;
  return server;
}
