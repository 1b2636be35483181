// POST /api/v1/mcp: the MCP server over Streamable HTTP for a bearer key (or the dashboard's session), stateless
// and answering JSON: each request gets a server with the tools of the caller's permission, whose calls go
// into this same app with the caller's credential (api.ts). GET and DELETE, which a stateful server would
// answer with an event stream and a session's end, are 405. The MCP SDK is loaded on the first request: a box
// whose apps never speak MCP does not pay for it at every start.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'koa';
import type { App } from '../context.ts';
import { ApiError } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth, scopeOf } from '../http/auth.ts';
import { inProcessApi } from './api.ts';

/** The headers of the caller passed to the API requests a tool makes: its credential and the host it asked for. */
const CREDENTIALS = ['authorization', 'cookie', 'host', 'user-agent'];
/** The headers the transport judges: what the client accepts and which protocol version it speaks. */
const TRANSPORT = ['accept', 'content-type', 'mcp-protocol-version'];

/** `handler`: the app's own request handler, known once the app is built. */
export function mcpRoutes(app: App, handler: () => (req: IncomingMessage, res: ServerResponse) => void) {
  const r = apiRouter();
  r.post('/mcp', requireAuth(app.config.publicUrl), async (ctx) => {
    const api = inProcessApi(handler(), { headers: pick(ctx, CREDENTIALS), remoteAddress: ctx.ip });
    const [{ mcpServer }, { WebStandardStreamableHTTPServerTransport }] = await Promise.all([import('./server.ts'), import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js')]);
    const server = mcpServer(api, scopeOf(principalOf(ctx)).permission);
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
    await server.connect(transport);
    try {
      const request = new Request(`http://mailwright.invalid${ctx.path}`, { method: 'POST', headers: pick(ctx, TRANSPORT) });
      const response = await transport.handleRequest(request, { parsedBody: ctx.request.body });
      const text = await response.text();
      if (response.status >= 400) throw refusal(response.status, text);
      ctx.status = response.status;
      response.headers.forEach((value, name) => ctx.set(name, value));
      if (text) ctx.body = text;
    } finally {
      await server.close();
    }
  });
  return r;
}

/** The transport's refusals of a request (not a JSON-RPC message, not accepting JSON) in the API's envelope. */
function refusal(status: number, text: string): ApiError {
  let message = 'the MCP request was refused';
  try {
    message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? message;
  } catch {
    // not JSON: the default words
  }
  return new ApiError(status, REFUSALS[status] ?? 'validation_error', message);
}
const REFUSALS: Record<number, string> = { 406: 'not_acceptable', 415: 'unsupported_media_type' };

function pick(ctx: Context, names: string[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((n) => (ctx.get(n) ? [[n, ctx.get(n)]] : [])));
}
