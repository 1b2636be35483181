// How the MCP tools reach the box: each tool call is one or two API requests made with the caller's own
// credential, so the API's validation, key scope, rate limit, idempotency and access log judge a tool call as
// they judge any client's. `POST /mcp` hands them to the Koa app in the same process, without a socket
// (light-my-request); `mailwright mcp` sends them over HTTP to a running box.
import type { IncomingMessage, ServerResponse } from 'node:http';
import inject from 'light-my-request';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
export interface ApiAnswer {
  status: number;
  body: unknown;
}
/** One request to `/api/v1<path>`; `body` is sent as JSON, with `headers` (Idempotency-Key). Never throws for an HTTP status. */
export type Api = (method: Method, path: string, body?: unknown, headers?: Record<string, string>) => Promise<ApiAnswer>;

/** How long one API request of a tool may take over the network before the tool reports it as failed. */
const REMOTE_TIMEOUT_MS = 60_000;

const json = (text: string): unknown => {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return text;
  }
};

/**
 * Requests into the app's own handler, as the client of `POST /mcp`: its credential headers and its address
 * (already resolved from trusted proxies), so limits and logs count the tool call as that client's.
 */
export function inProcessApi(handler: (req: IncomingMessage, res: ServerResponse) => void, from: { headers: Record<string, string>; remoteAddress: string }): Api {
  return async (method, path, body, headers = {}) => {
    const res = await inject(handler, {
      method,
      url: `/api/v1${path}`,
      headers: { ...headers, ...from.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      remoteAddress: from.remoteAddress,
    });
    return { status: res.statusCode, body: json(res.payload) };
  };
}

/** Requests over HTTP to `baseUrl` (ending in /api/v1) with a bearer key. A network failure is status 0. */
export function remoteApi(baseUrl: string, key: string): Api {
  const base = baseUrl.replace(/\/+$/, '');
  return async (method, path, body, headers = {}) => {
    try {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { ...headers, authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(REMOTE_TIMEOUT_MS),
      });
      return { status: res.status, body: json(await res.text()) };
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      return { status: 0, body: { error: { code: 'unreachable', message: `the box's API at ${base} did not answer (${why})` } } };
    }
  };
}
