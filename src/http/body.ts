// Request bodies: JSON only, size-capped, and not nested deeper than any request of ours needs, so a
// hostile body is a 4xx before a handler sees it (catalogue API-17). A body over the standard cap (a send
// with attachments) is held under the box-wide budget of body-memory.ts while its request runs (RES-16). The
// routes a stranger may call (login, setup) read theirs with readSmallJson, a few KB in a few seconds, once
// their cheap checks pass (API-21).
import type { Context, Middleware, Next } from 'koa';
import { koaBody, HttpMethodEnum } from 'koa-body';
import { ApiError } from '../errors.ts';
import { uploadsBusy, withBodyShare, type BodyMemory } from './body-memory.ts';
import { readRawBody } from './raw-body.ts';

const MAX_DEPTH = 32;
/** A login or setup body: an address, a passphrase of up to 1,024 characters (even escaped) and a token. */
export const SMALL_BODY_BYTES = 8 * 1024;
/** Time for such a body to arrive once invited: a slow line sends 8 KB in well under a second. */
export const SMALL_BODY_TIMEOUT_MS = 10_000;
const STRICT_JSON = /^[\x20\x09\x0a\x0d]*[[{]/;

/**
 * Bodies are capped at `limitBytes`, or for an authenticated caller at the limit of the first `larger` entry
 * whose pattern matches the path (a stranger never gets to send 50 MiB). With `memory`, a larger body is also
 * capped at the whole budget and holds its share of it from before it is read until its request is answered.
 */
export function jsonBody(opts: { limitBytes: number; larger?: Array<{ path: RegExp; limitBytes: number }>; memory?: BodyMemory }): Middleware {
  const parsers = new Map<number, Middleware>();
  const parser = (limit: number) => {
    let parse = parsers.get(limit);
    if (!parse) {
      parse = koaBody({
        json: true,
        urlencoded: false,
        text: false,
        multipart: false,
        jsonStrict: true,
        jsonLimit: limit,
        parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
      });
      parsers.set(limit, parse);
    }
    return parse;
  };
  const parseWith = async (ctx: Context, next: Next, limit: number) => {
    // The server left `Expect: 100-continue` to us (createHttpServer): the caller may now send its body.
    if (hasBody(ctx) && ctx.get('Expect').toLowerCase() === '100-continue') ctx.res.writeContinue();
    await parser(limit)(ctx, async () => {});
    ctx.state.bodyParsed = true;
    if (tooDeep(ctx.request.body, MAX_DEPTH)) throw new ApiError(400, 'invalid_json', `Request body is nested deeper than ${MAX_DEPTH} levels`);
    await next();
  };
  const { memory } = opts;
  return async (ctx, next) => {
    const larger = ctx.state.principal ? opts.larger?.find((l) => l.path.test(ctx.path)) : undefined;
    if (hasBody(ctx) && ctx.is('application/json', '+json') === false) {
      throw new ApiError(415, 'unsupported_media_type', 'Request body must be JSON (Content-Type: application/json)');
    }
    if (!larger) return parseWith(ctx, next, opts.limitBytes);
    if (!memory || !hasBody(ctx)) return parseWith(ctx, next, larger.limitBytes);
    const limit = Math.min(larger.limitBytes, memory.total);
    await withBodyShare(ctx, memory, async (share) => {
      if (!share.growTo(holds(ctx, opts.limitBytes, limit))) throw uploadsBusy(ctx);
      await parseWith(ctx, next, limit);
    });
  };
}

// ctx.is() is null when the request has no body; an empty one (Content-Length: 0) is none either.
const hasBody = (ctx: Context) => ctx.is() !== null && ctx.request.length !== 0;

/**
 * What a larger body takes of the budget: its declared length, none when that is within the standard cap (every
 * path takes those) or over the limit (refused unread); one chunked or compressed may grow to the limit as it is
 * read and inflated, out of our sight inside the parser, so it takes the limit.
 */
function holds(ctx: Context, standardBytes: number, limit: number): number {
  const declared = ctx.request.length;
  const encoding = ctx.get('Content-Encoding').toLowerCase();
  if (declared === undefined || (encoding !== '' && encoding !== 'identity')) return limit;
  return declared > standardBytes && declared <= limit ? declared : 0;
}

/**
 * The JSON body of a route a stranger may call, read by the route itself after its checks that need no body
 * (server.ts leaves such bodies unread). Over `maxBytes` it is 413 from Content-Length alone, or as soon as
 * the count passes it; still arriving after `timeoutMs` it is 408; either way the connection is closed. No
 * body is `{}`, so the route's validation names the missing fields.
 */
export async function readSmallJson(ctx: Context, limits = { maxBytes: SMALL_BODY_BYTES, timeoutMs: SMALL_BODY_TIMEOUT_MS }): Promise<unknown> {
  // An authenticated caller on a path spelt another way (`/auth/login/`) had it parsed by jsonBody already.
  if (ctx.state.bodyParsed) return ctx.request.body;
  if (ctx.is() === null || ctx.request.length === 0) return {};
  if (ctx.is('application/json', '+json') === false) throw new ApiError(415, 'unsupported_media_type', 'Request body must be JSON (Content-Type: application/json)');
  const encoding = ctx.get('Content-Encoding').toLowerCase();
  if (encoding && encoding !== 'identity') throw new ApiError(415, 'unsupported_media_type', 'Unsupported request body encoding');
  const raw = await readRawBody(ctx, {
    ...limits,
    tooLarge: () => new ApiError(413, 'payload_too_large', `Request body is too large: at most ${limits.maxBytes} bytes here`),
    tooSlow: () => new ApiError(408, 'request_timeout', `The request body did not arrive within ${Math.round(limits.timeoutMs / 1000)} s`),
  });
  const text = raw.toString('utf8');
  if (!text.trim()) return {};
  if (!STRICT_JSON.test(text)) throw new ApiError(400, 'invalid_json', 'Request body must be a JSON object or array');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError(400, 'invalid_json', 'Request body is not valid JSON');
  }
  if (hasProtoKey(value)) throw new ApiError(400, 'invalid_json', 'Request body must not contain "__proto__" keys');
  if (tooDeep(value, MAX_DEPTH)) throw new ApiError(400, 'invalid_json', `Request body is nested deeper than ${MAX_DEPTH} levels`);
  return value;
}

// As co-body's parser (bourne) refuses them for the other routes: such keys are harmless until an object is merged.
function hasProtoKey(value: unknown): boolean {
  const stack = [value];
  while (stack.length) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Object.hasOwn(v, '__proto__')) return true;
    stack.push(...Object.values(v));
  }
  return false;
}

function tooDeep(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= max) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}
