// The one server-side HTTP(S) request to hosts we do not control (safeRequest), used by Domain Connect discovery
// (fetchJson), billing's form POST and webhook deliveries. It must never reach an internal address, follow a
// redirect, read an unbounded body, send a header it was not given, or look a name up but through its Resolver.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Resolver } from 'node:dns/promises';
import type { IncomingMessage } from 'node:http';
import type { LookupFunction } from 'node:net';
import { blockedReason } from './blocked-address.ts';

export { blockedReason };

export interface FetchPolicy {
  resolver: Resolver;
  /** Lab/test mode: loopback, private and link-local targets, ports other than 443 (and http: in safeRequest) are allowed. */
  allowPrivate: boolean;
  /** Whole request, DNS included. Default 5000. */
  timeoutMs?: number;
  /** Response body cap. Default 64 KiB. */
  maxBytes?: number;
  /** Extra trusted CA (tests); replaces the default roots for this request. */
  ca?: string | Buffer | Array<string | Buffer>;
}

export type RefusedReason = 'url' | 'scheme' | 'userinfo' | 'address' | 'port' | 'redirect' | 'size';

/** The policy said no. Nothing was sent (except for 'redirect' and 'size', where the answer was the problem). */
export class FetchRefused extends Error {
  readonly reason: RefusedReason;
  readonly url: string;

  constructor(reason: RefusedReason, url: string, message: string) {
    super(message);
    this.name = 'FetchRefused';
    this.reason = reason;
    this.url = url;
  }
}

/** The request was allowed but did not produce a complete answer (DNS, network, TLS, timeout), or not the JSON one expected. */
export class FetchFailed extends Error {
  readonly url: string;
  /** The underlying error code when there is one (ECONNREFUSED, ERR_TLS_CERT_ALTNAME_INVALID...), else ours. */
  readonly code: string;

  constructor(url: string, code: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'FetchFailed';
    this.url = url;
    this.code = code;
  }
}

const DEFAULT_TIMEOUT_MS = 5000;
const DEFAULT_MAX_BYTES = 64 * 1024;
const JSON_HEADERS = { accept: 'application/json', 'user-agent': 'Mailwright', 'accept-encoding': 'identity' } as const;

export interface SafeRequest {
  method: 'GET' | 'POST';
  /** Sent exactly as given (nothing added but what Node adds: host, content-length, connection). */
  headers: Record<string, string>;
  body?: Buffer;
}

export interface SafeResponse {
  status: number;
  body: Buffer;
  /** True when the body was longer than maxBytes and was cut there (only with `truncate`). */
  truncated: boolean;
  durationMs: number;
  /** The answer's Content-Type header, when it had one (an MTA-STS policy must be text/plain, RFC 8461 3.3). */
  contentType?: string;
}

export interface RequestPolicy extends FetchPolicy {
  /** Cut a body over maxBytes (truncated: true) instead of refusing it with FetchRefused('size'). */
  truncate?: boolean;
}

/**
 * The one guarded request every outbound HTTP(S) call to a host we do not control goes through. http: is
 * accepted only in lab mode (allowPrivate), where a test or LAN target may have no certificate.
 */
export async function safeRequest(url: string, req: SafeRequest, policy: RequestPolicy): Promise<SafeResponse> {
  const started = performance.now();
  const timeoutMs = policy.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  const target = checkUrl(url, { allowPrivate: policy.allowPrivate, allowHttp: policy.allowPrivate });
  const shown = target.shown;
  const addresses = target.ip ? [target.ip] : await withDeadline(resolveAll(target.host, policy.resolver, shown), deadline, shown, timeoutMs);
  if (!policy.allowPrivate) {
    for (const address of addresses) {
      const why = blockedReason(address);
      // API-10: one bad answer refuses the whole name; otherwise a rebinding resolver just lists both.
      if (why) throw new FetchRefused('address', url, `refused ${shown}: ${target.host} resolves to ${address} (${why})`);
    }
  }
  // Checked after the address so a refusal names the more serious problem; both are refused before any connect.
  if (!policy.allowPrivate && target.port !== 443) {
    throw new FetchRefused('port', url, `refused ${shown}: port ${target.port} (only 443 outside lab mode)`);
  }
  const answer = await send(target, addresses, req, policy, deadline, timeoutMs);
  return { ...answer, durationMs: Math.max(0, Math.round(performance.now() - started)) };
}

export async function fetchJson(url: string, policy: FetchPolicy): Promise<{ status: number; body: unknown }> {
  // Discovery hosts come from DNS data anyone can publish: https even in lab mode, unlike safeRequest.
  checkUrl(url, { allowPrivate: policy.allowPrivate });
  return jsonAnswer(url, await safeRequest(url, { method: 'GET', headers: { ...JSON_HEADERS } }, { ...policy, truncate: false }));
}

/**
 * fetchJson's reading of an answer, for other callers that expect JSON back. An empty body is null (the Domain
 * Connect template check answers 200 with none). A 2xx body must be JSON (else FetchFailed 'EBADJSON'); an error
 * status's body is returned as JSON when it is, else as null, so callers can still act on the status (a 404
 * page in HTML still means "not supported").
 */
export function jsonAnswer(url: string, res: SafeResponse): { status: number; body: unknown } {
  const text = res.body.toString('utf8').replace(/^\uFEFF/, '').trim();
  if (text === '') return { status: res.status, body: null };
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch (err) {
    if (res.status >= 200 && res.status < 300) {
      const shown = shownUrl(new URL(url));
      throw new FetchFailed(shown, 'EBADJSON', `${shown}: answered ${res.status} with a body that is not JSON`, err);
    }
    return { status: res.status, body: null };
  }
}

export interface CheckedUrl {
  url: URL;
  /** Host name without brackets or trailing dot; for an IP literal, the address as Node's URL parser wrote it. */
  host: string;
  /** Set when the host is an IP literal (however it was spelled: 2130706433 and 0x7f.1 arrive here as 127.0.0.1). */
  ip: string | null;
  port: number;
  /** origin + path: safe to put in messages and logs (no userinfo, no query). */
  shown: string;
}

/**
 * The checks that need no network: https (or http with allowHttp), no userinfo, a host, and for an IP literal
 * its address range. The port is left to safeRequest. Also used for URLs we never fetch but send a browser to
 * (Domain Connect urlSyncUX, a Stripe Checkout URL), which is why http stays refused unless asked for.
 */
export function checkUrl(raw: string, opts: { allowPrivate: boolean; allowHttp?: boolean }): CheckedUrl {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new FetchRefused('url', raw, `refused ${JSON.stringify(raw.slice(0, 100))}: not a URL`);
  }
  const shown = url.protocol === 'https:' || url.protocol === 'http:' ? shownUrl(url) : url.protocol;
  const http = url.protocol === 'http:' && opts.allowHttp === true;
  if (url.protocol !== 'https:' && !http) throw new FetchRefused('scheme', raw, `refused ${shown}: only https: URLs are allowed`);
  if (url.username || url.password) throw new FetchRefused('userinfo', raw, `refused ${shown}: URLs with user info are not allowed`);
  const bare = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const host = bare.endsWith('.') ? bare.slice(0, -1) : bare;
  if (!host) throw new FetchRefused('url', raw, `refused ${shown}: no host`);
  const ip = net.isIP(host) ? host : null;
  const port = url.port ? Number(url.port) : http ? 80 : 443;
  if (ip && !opts.allowPrivate) {
    const why = blockedReason(ip);
    if (why) throw new FetchRefused('address', raw, `refused ${shown}: ${ip} is ${why}`);
  }
  return { url, host, ip, port, shown };
}

/** origin + path: no userinfo or query, which may carry secrets, goes into a message. */
function shownUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

async function resolveAll(host: string, resolver: Resolver, shown: string): Promise<string[]> {
  const settle = (p: Promise<string[]>) =>
    p.then(
      (list) => list,
      (err: NodeJS.ErrnoException) => {
        // No records of one family is an answer; anything else (SERVFAIL, timeout) leaves us not knowing.
        if (err.code === 'ENODATA' || err.code === 'ENOTFOUND') return [];
        throw new FetchFailed(shown, err.code ?? 'EDNS', `${shown}: looking up ${host} failed (${err.code ?? err.message})`, err);
      },
    );
  const [v4, v6] = await Promise.all([settle(resolver.resolve4(host)), settle(resolver.resolve6(host))]);
  const all = [...v4, ...v6];
  if (all.length === 0) throw new FetchFailed(shown, 'ENOTFOUND', `${shown}: ${host} has no A or AAAA records`);
  return all;
}

function withDeadline<T>(work: Promise<T>, deadline: number, shown: string, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut(shown, timeoutMs)), Math.max(0, deadline - Date.now()));
  });
  // The Resolver cannot cancel one query without cancelling everyone's, so a late answer is just dropped.
  work.catch(() => {});
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

const timedOut = (shown: string, timeoutMs: number) => new FetchFailed(shown, 'ETIMEDOUT', `${shown}: no complete answer within ${timeoutMs} ms`);

/**
 * Hands net.connect the addresses we vetted instead of asking the system resolver, so a second DNS answer
 * (rebinding) can never change where we connect. Node 20 asks with {all: true} when it races address
 * families (autoSelectFamily), and for a single address otherwise; both shapes must be answered.
 */
function pinnedLookup(addresses: string[]): LookupFunction {
  const entries = addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, entries);
    else callback(null, entries[0]!.address, entries[0]!.family);
  }) as unknown as LookupFunction;
}

function send(target: CheckedUrl, addresses: string[], spec: SafeRequest, policy: RequestPolicy, deadline: number, timeoutMs: number): Promise<Omit<SafeResponse, 'durationMs'>> {
  const { url, shown } = target;
  const maxBytes = policy.maxBytes ?? DEFAULT_MAX_BYTES;
  // IPv4 first: the test kit and most providers answer there, and every entry was vetted anyway.
  const pinned = [...addresses].sort((a, b) => Number(net.isIPv6(a)) - Number(net.isIPv6(b)));
  const options: https.RequestOptions = {
    method: spec.method,
    // Host header (and for https SNI and the certificate check) use the name from the URL; only the socket goes to the pin.
    host: target.host,
    port: target.port,
    path: url.pathname + url.search,
    headers: spec.headers,
    lookup: target.ip ? undefined : pinnedLookup(pinned),
    // A private agent: no pooled socket from an earlier request, no shared session state, no cookies.
    agent: false,
  };
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | null, value?: Omit<SafeResponse, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        req.destroy();
        reject(err);
      } else {
        // Only a cut body leaves the server still sending; hang up rather than drain it.
        if (value!.truncated) req.destroy();
        resolve(value!);
      }
    };

    const req =
      url.protocol === 'http:'
        ? http.request({ ...options, protocol: 'http:' })
        : https.request({ ...options, protocol: 'https:', servername: target.ip ? undefined : target.host, ca: policy.ca });
    const timer = setTimeout(() => finish(timedOut(shown, timeoutMs)), Math.max(0, deadline - Date.now()));

    req.on('error', (err: NodeJS.ErrnoException) => {
      finish(new FetchFailed(shown, err.code ?? 'EFETCH', `${shown}: ${err.message}`, err));
    });
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        // API-10 / RFC 8461: never follow; a redirect is how an allowed host points us at an internal one.
        const location = String(res.headers.location ?? '(none)').slice(0, 200);
        return finish(new FetchRefused('redirect', url.href, `refused ${shown}: answered ${status} redirecting to ${location}; redirects are not followed`));
      }
      const declared = Number(res.headers['content-length']);
      if (!policy.truncate && Number.isFinite(declared) && declared > maxBytes) {
        return finish(new FetchRefused('size', url.href, `refused ${shown}: body of ${declared} bytes exceeds ${maxBytes}`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size + chunk.length > maxBytes) {
          if (!policy.truncate) return finish(new FetchRefused('size', url.href, `refused ${shown}: body exceeds ${maxBytes} bytes`));
          chunks.push(chunk.subarray(0, maxBytes - size));
          return finish(null, { status, body: Buffer.concat(chunks), truncated: true, contentType: res.headers['content-type'] });
        }
        size += chunk.length;
        chunks.push(chunk);
      });
      res.on('error', (err: NodeJS.ErrnoException) => finish(new FetchFailed(shown, err.code ?? 'EFETCH', `${shown}: ${err.message}`, err)));
      res.on('close', () => {
        if (!res.complete) finish(new FetchFailed(shown, 'ECONNRESET', `${shown}: connection closed before the body was complete`));
      });
      res.on('end', () => finish(null, { status, body: Buffer.concat(chunks), truncated: false, contentType: res.headers['content-type'] }));
    });
    req.end(spec.body);
  });
}
