// `mailwright mcp`: the MCP server on standard input and output, for a client that starts it as a program
// (Claude Desktop, Claude Code, Cursor, ...). It is a client of a running box's API with the key in
// MAILWRIGHT_API_KEY: on the box itself it finds the API where the configuration puts it; elsewhere
// MAILWRIGHT_API_URL names it. Standard output carries the protocol alone; what goes wrong goes to stderr.
import { isIPv6 } from 'node:net';
import type { Config } from '../config/config.ts';
import { remoteApi, type Api } from './api.ts';
import type { Permission } from './tool.ts';

export class McpStartError extends Error {}

/** The API of the box this configuration describes, as seen from the same machine. */
export function localApiUrl(config: Pick<Config, 'httpHost' | 'httpPort'>): string {
  const host = config.httpHost === '0.0.0.0' || config.httpHost === '::' ? '127.0.0.1' : config.httpHost;
  return `http://${isIPv6(host) ? `[${host}]` : host}:${config.httpPort}/api/v1`;
}

/**
 * The key's permission, from GET /keys: a key that is not full_access lists itself alone, so a single row that
 * is not full_access is the key itself; any other answer comes from a full-access key.
 */
async function permissionOf(api: Api, where: string): Promise<Permission> {
  const res = await api('GET', '/keys?limit=2');
  const error = (res.body as { error?: { message?: string } } | null)?.error?.message ?? `HTTP ${res.status}`;
  if (res.status === 0) throw new McpStartError(`${error}: is 'mailwright serve' running? (MAILWRIGHT_API_URL reaches another box)`);
  if (res.status !== 200) throw new McpStartError(`the API at ${where} refused MAILWRIGHT_API_KEY: ${error}`);
  const rows = (res.body as { data: Array<{ permission: Permission }> }).data;
  return rows.length === 1 && rows[0].permission !== 'full_access' ? rows[0].permission : 'full_access';
}

/** Serves MCP on stdin/stdout until the client closes stdin; resolves with the exit code. */
export async function runMcpStdio(env: NodeJS.ProcessEnv, config: () => Config): Promise<number> {
  const key = env.MAILWRIGHT_API_KEY?.trim();
  if (!key) throw new McpStartError('set MAILWRIGHT_API_KEY to an API key of the box (re_...); the tools offered are those it may use');
  const url = env.MAILWRIGHT_API_URL?.trim() || localApiUrl(config());
  const api = remoteApi(url, key);
  // Loaded here, not at the top: every `mailwright` command imports this file for McpStartError.
  const [{ mcpServer }, { StdioServerTransport }] = await Promise.all([import('./server.ts'), import('@modelcontextprotocol/sdk/server/stdio.js')]);
  const server = mcpServer(api, await permissionOf(api, url));
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    process.stdin.once('end', resolve);
    transport.onclose = resolve;
  });
  await server.connect(transport);
  await closed;
  await server.close();
  return 0;
}
