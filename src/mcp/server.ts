// The box's MCP server (@modelcontextprotocol/sdk): the tools a key may use, each answering JSON text, or an
// error the model can read (the API's status, code and words) instead of a protocol failure. One server per
// connection: over HTTP, per request (stateless); over stdio, for the life of the process.
import { createRequire } from 'node:module';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Api } from './api.ts';
import { offered, ToolError, type Permission, type Tool } from './tool.ts';
import { READ_TOOLS } from './tools-read.ts';
import { ACT_TOOLS } from './tools-act.ts';

const VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

export const TOOLS: Tool[] = [...READ_TOOLS, ...ACT_TOOLS];

/** The most a tool answers, in characters of JSON: each tool bounds its own fields well under it. */
export const MAX_RESULT_CHARS = 200_000;

const INSTRUCTIONS = `Mailwright is a mail server. Find mail with search_emails or list_emails, read it with get_email or
get_thread, answer with reply_to_email (or draft_reply to leave it for a person), and file it with label_email,
archive_email, mark_spam and mark_read. send_email sends new mail. The tools offered are those this API key may use.`;

export function mcpServer(api: Api, permission: Permission): McpServer {
  const server = new McpServer({ name: 'mailwright', version: VERSION }, { instructions: INSTRUCTIONS });
  for (const t of offered(TOOLS, permission)) {
    server.registerTool(
      t.name,
      {
        title: t.title,
        description: t.description,
        inputSchema: t.input,
        annotations: { readOnlyHint: t.readOnly === true, destructiveHint: t.destructive === true, openWorldHint: t.destructive === true },
      },
      async (args: unknown) => {
        try {
          const json = JSON.stringify(await t.run(api, args as never), null, 1);
          const text = json.length > MAX_RESULT_CHARS ? `${json.slice(0, MAX_RESULT_CHARS)}\n[... cut at ${MAX_RESULT_CHARS} characters]` : json;
          return { content: [{ type: 'text' as const, text }] };
        } catch (err) {
          if (err instanceof ToolError) return { isError: true, content: [{ type: 'text' as const, text: err.message }] };
          throw err;
        }
      },
    );
  }
  return server;
}
