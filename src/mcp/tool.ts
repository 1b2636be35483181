// What one MCP tool is: its name and words for the model, its input (a zod object the SDK checks and
// publishes as JSON Schema), the API routes it calls (which decide, through http/scopes.ts, whether a key is
// offered it), and what it does, through the API. Its arguments are the API's fields under the API's names,
// so the API's own schemas judge them and its errors come back as the tool's.
import type { z } from 'zod';
import { ROUTE_SCOPES } from '../http/scopes.ts';
import type { Scope } from '../http/auth.ts';
import type { Api, Method } from './api.ts';

export type Permission = Scope['permission'];

export interface Tool<S extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: S;
  /** `METHOD /path` keys of ROUTE_SCOPES the tool needs: a key is offered the tool when it may call them all. */
  routes: string[];
  /** Reads only (MCP's readOnlyHint); otherwise it changes or sends something. */
  readOnly?: boolean;
  /** Sends mail to someone or cannot be taken back (destructiveHint). */
  destructive?: boolean;
  run(api: Api, args: z.infer<S>): Promise<unknown>;
}

/** Declares a tool with its input's type carried to `run`. */
export const tool = <S extends z.ZodObject>(t: Tool<S>): Tool => t as unknown as Tool;

/** The API's refusal, shown to the model as the tool's error: the status, the code and the API's own words. */
export class ToolError extends Error {}

/** One API request; its JSON answer, or a ToolError carrying the API's error envelope. */
export async function call(api: Api, method: Method, path: string, body?: unknown, headers?: Record<string, string>): Promise<Record<string, unknown>> {
  const res = await api(method, path, body, headers);
  if (res.status >= 200 && res.status < 300) return (res.body ?? {}) as Record<string, unknown>;
  const error = (res.body as { error?: { code?: string; message?: string } } | null)?.error;
  throw new ToolError(error ? `${res.status || 'no answer'} ${error.code}: ${error.message}` : `the API answered ${res.status}`);
}

/** A query string of the defined values, `?a=1&b=x` or ''. */
export function query(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** `:id` path segments are the caller's words: encoded, so an id cannot reach another route. */
export const seg = (id: string) => encodeURIComponent(id);

/** At most `max` characters of a text, and whether it was cut. */
export function bounded(text: string | null | undefined, max: number): { text: string | null; truncated: boolean } {
  if (text === null || text === undefined) return { text: null, truncated: false };
  return text.length > max ? { text: `${text.slice(0, max)}\n[... ${text.length - max} more characters]`, truncated: true } : { text, truncated: false };
}

/** The tools a key of this permission may use: those whose every route it reaches. */
export function offered(tools: Tool[], permission: Permission): Tool[] {
  if (permission === 'full_access') return tools;
  return tools.filter((t) => t.routes.every((r) => ROUTE_SCOPES[r]?.[permission] !== undefined));
}
