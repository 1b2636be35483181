// Request bodies: JSON only, size-capped, and not nested deeper than any request of ours needs, so a
// hostile body is a 4xx before a handler sees it (catalogue API-17). A body over the standard cap (a send
// with attachments) is held under the box-wide budget of body-memory.ts while its request runs (RES-16).
import type { Context, Middleware, Next } from 'koa';
import { koaBody, HttpMethodEnum } from 'koa-body';
import { ApiError } from '../errors.ts';
import { uploadsBusy, withBodyShare, type BodyMemory } from './body-memory.ts';

const MAX_DEPTH = 32;

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
