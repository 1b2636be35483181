// HTTP-01 challenges (RFC 8555 8.3): the key authorizations of orders in flight, and the tiny listener on
// acme_http_port that answers GET /.well-known/acme-challenge/<token> and nothing else. Everything else is a
// redirect to https_port, or 404 when that is off: port 80 faces the Internet and must never expose the API.
// The key authorizations are in the store, not only in memory: behind a balancer the CA's request may reach any
// node, not the one that placed the order. Each node keeps the last set of them it read: a token found there is
// answered at once, and one that is not waits for the next read of the whole set, which begins after it arrived
// (so a challenge committed before the CA was told is seen) and at most every 100 ms, shared by every request
// waiting. A flood of made-up tokens on port 80 costs the store ten small reads a second per node, no more.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Clock } from '../clock.ts';
import type { Log } from '../log.ts';
import type { Store } from '../db/store.ts';
import { dropChallenge, putChallenge, readChallenges } from './stored.ts';

const PREFIX = '/.well-known/acme-challenge/';
// RFC 8555 8.3: the token is base64url; anything else cannot be one of ours.
const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;

/** The least time between two reads of the challenges by one node. */
const READ_EVERY_MS = 100;

export class Challenges {
  private known = new Map<string, string>();
  /** The read the requests arriving now wait for: not begun yet. */
  private next: Promise<Map<string, string>> | null = null;
  private lastRead = 0;

  constructor(private readonly deps: { store: Store; clock: Clock; log: Log }) {}

  /** Resolves once the answer is committed: only then may the CA be told to validate. */
  async set(token: string, keyAuthorization: string): Promise<void> {
    await this.deps.store.write(() => putChallenge(token, keyAuthorization, this.deps.clock.now()));
    this.known.set(token, keyAuthorization);
  }

  async delete(token: string): Promise<void> {
    this.known.delete(token);
    await this.deps.store.write(() => dropChallenge(token), { acknowledged: false });
  }

  /** The key authorization of `token`, from the store as it was after this call began. */
  private async lookup(token: string): Promise<string | undefined> {
    const known = this.known.get(token);
    if (known !== undefined) return known;
    return (await this.nextRead()).get(token);
  }

  private nextRead(): Promise<Map<string, string>> {
    if (this.next) return this.next;
    const wait = Math.max(0, this.lastRead + READ_EVERY_MS - Date.now());
    this.next = new Promise<void>((resolve) => setTimeout(resolve, wait))
      .then(() => {
        this.next = null; // requests arriving from now on wait for the read after this one
        this.lastRead = Date.now();
        return this.deps.store.read(readChallenges());
      })
      .then((rows) => (this.known = new Map(rows.map((r) => [r.token, r.keyAuthorization]))));
    return this.next;
  }

  /**
   * Answers the request if it asks for a challenge (true), whether or not the token is known; false leaves the
   * request to the caller (the API's own listener, when acme_http_port is http_port).
   */
  answer(req: IncomingMessage, res: ServerResponse): boolean {
    const path = (req.url ?? '').split('?')[0];
    if (!path.startsWith(PREFIX)) return false;
    const token = path.slice(PREFIX.length);
    const asked = (req.method === 'GET' || req.method === 'HEAD') && TOKEN.test(token);
    void (asked ? this.lookup(token) : Promise.resolve(undefined)).then(
      (found) => {
        if (found === undefined) {
          res.writeHead(404, { 'content-type': 'text/plain' }).end('no such challenge\n');
        } else {
          res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': Buffer.byteLength(found) }).end(req.method === 'HEAD' ? undefined : found);
        }
      },
      (err: unknown) => {
        // The CA tries again; a store that cannot answer says so rather than "no such challenge".
        this.deps.log.warn('could not read an ACME challenge from the store', { err });
        res.writeHead(503, { 'content-type': 'text/plain' }).end('try again\n');
      },
    );
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
