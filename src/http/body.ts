// Request bodies: JSON only, size-capped, and not nested deeper than any request of ours needs, so a
// hostile body is a 4xx before a handler sees it (catalogue API-17).
import type { Middleware } from 'koa';
import { koaBody, HttpMethodEnum } from 'koa-body';
import { ApiError } from '../errors.ts';

const MAX_DEPTH = 32;

/**
 * Bodies are capped at `limitBytes`, or for an authenticated caller at the limit of the first `larger` entry
 * whose pattern matches the path (a stranger never gets to send 50 MiB).
 */
export function jsonBody(opts: { limitBytes: number; larger?: Array<{ path: RegExp; limitBytes: number }> }): Middleware {
  const parser = (limit: number) =>
    koaBody({
      json: true,
      urlencoded: false,
      text: false,
      multipart: false,
      jsonStrict: true,
      jsonLimit: limit,
      parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
    });
  const standard = parser(opts.limitBytes);
  const larger = (opts.larger ?? []).map((l) => ({ path: l.path, parse: parser(l.limitBytes) }));
  return async (ctx, next) => {
    const parse = (ctx.state.principal && larger.find((l) => l.path.test(ctx.path))?.parse) || standard;
    // ctx.is() is null when the request has no body; an empty one (Content-Length: 0) is none either.
    const hasBody = ctx.is() !== null && ctx.request.length !== 0;
    if (hasBody && ctx.is('application/json', '+json') === false) {
      throw new ApiError(415, 'unsupported_media_type', 'Request body must be JSON (Content-Type: application/json)');
    }
    // The server left `Expect: 100-continue` to us (createHttpServer): the caller may now send its body.
    if (hasBody && ctx.get('Expect').toLowerCase() === '100-continue') ctx.res.writeContinue();
    await parse(ctx, async () => {});
    if (tooDeep(ctx.request.body, MAX_DEPTH)) throw new ApiError(400, 'invalid_json', `Request body is nested deeper than ${MAX_DEPTH} levels`);
    await next();
  };
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
