// The error envelope of DESIGN.md on every failed response: {error: {message, status, code, errors?}}.
// Bad input maps to a 4xx with a stable code; anything unexpected is logged with the request id and
// answered 500 without a stack trace or any internal text. A full disk is 507 with retry-after (one warn
// line, no stack); our other faults are also handed to the Koa app's 'error' listeners (start/front-doors.ts: health).
import type { Middleware } from 'koa';
import { ApiError } from '../errors.ts';
import type { Log } from '../log.ts';
import { errorCode, storageFault } from '../db/health.ts';

// co-body / raw-body tag their errors with `type`; these are the client's fault, not ours.
const BODY_ERRORS: Record<string, [number, string, string]> = {
  'entity.parse.failed': [400, 'invalid_json', 'Request body is not valid JSON'],
  'entity.too.large': [413, 'payload_too_large', 'Request body is too large'],
  'entity.verify.failed': [400, 'invalid_json', 'Request body is not valid JSON'],
  'encoding.unsupported': [415, 'unsupported_media_type', 'Unsupported request body encoding'],
  'charset.unsupported': [415, 'unsupported_media_type', 'Unsupported request body charset'],
  'request.aborted': [400, 'request_aborted', 'The request body was not received in full'],
  'request.size.invalid': [400, 'invalid_request', 'Request body length does not match Content-Length'],
  'stream.encoding.set': [500, 'internal_error', 'Internal server error'],
};

export function errorEnvelope(log: Log): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new ApiError(404, 'not_found', 'Not found');
    } catch (err) {
      const { status, code, message, errors, headers, findings, findingsOmitted } = describe(err);
      // An ApiError is an answer we chose (a 501, an unreachable DNS provider); only the unexpected is logged.
      if (status === 507) log.warn('request refused: the disk is full', { requestId: ctx.state.requestId, method: ctx.method, path: ctx.path, cause: errorCode(err) });
      else if (storageFault(err) === 'unreachable') log.warn('request refused: the database is out of reach', { requestId: ctx.state.requestId, method: ctx.method, path: ctx.path, cause: (err as Error).message });
      else if (status >= 500 && !(err instanceof ApiError)) {
        log.error('request failed', { requestId: ctx.state.requestId, method: ctx.method, path: ctx.path, err });
        if (err instanceof Error) ctx.app.emit('error', err, ctx);
      }
      for (const [name, value] of Object.entries(headers ?? {})) ctx.set(name, value);
      ctx.status = status;
      ctx.body = { error: { message, status, code, ...(errors ? { errors } : {}), ...(findings ? { findings, findingsOmitted: findingsOmitted ?? 0 } : {}) } };
    }
  };
}

/** PostgreSQL's character_not_in_repertoire: what it says of a NUL character in a text parameter. */
const NUL_IN_TEXT = '22021';

/** How long a client should wait after a 507 before it tries again. */
const DISK_FULL_RETRY_AFTER_S = 60;
/** And after a 503 for a database out of reach: a restart or a failover takes seconds. */
const UNREACHABLE_RETRY_AFTER_S = 5;

function describe(err: unknown): Pick<ApiError, 'status' | 'code' | 'message' | 'errors' | 'headers' | 'findings' | 'findingsOmitted'> {
  if (err instanceof ApiError) return err;
  // SQLITE_FULL (from this thread's commit or the writer thread's) or ENOSPC: nothing was stored.
  if (storageFault(err) === 'unreachable') {
    return { status: 503, code: 'service_unavailable', message: 'The database is out of reach; nothing was stored. Try again shortly.', headers: { 'retry-after': String(UNREACHABLE_RETRY_AFTER_S) } };
  }
  if (storageFault(err) === 'full') {
    return { status: 507, code: 'insufficient_storage', message: 'The server is out of disk space; nothing was stored. Try again later.', headers: { 'retry-after': String(DISK_FULL_RETRY_AFTER_S) } };
  }
  const e = err as { type?: string; status?: number; expose?: boolean; message?: string };
  // PostgreSQL's text cannot hold U+0000 (22021): such a value can be neither found nor stored; the transaction undid all.
  if (errorCode(err) === NUL_IN_TEXT) return { status: 400, code: 'validation_error', message: 'Text in the request must not contain the NUL character (U+0000)' };
  if (e?.type && BODY_ERRORS[e.type]) {
    const [status, code, message] = BODY_ERRORS[e.type];
    return { status, code, message };
  }
  // co-body's own parse failures: not an object or array, or a __proto__ key (refused by bourne).
  if (err instanceof SyntaxError && e.status === 400) {
    const proto = /prototype/.test(err.message);
    return { status: 400, code: 'invalid_json', message: proto ? 'Request body must not contain "__proto__" keys' : 'Request body must be a JSON object or array' };
  }
  // Koa's own ctx.throw / router errors (405, 501) carry a status and are meant to be shown.
  if (e?.expose && typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    const code = e.status === 405 ? 'method_not_allowed' : e.status === 404 ? 'not_found' : 'invalid_request';
    return { status: e.status, code, message: String(e.message) };
  }
  return { status: 500, code: 'internal_error', message: 'Internal server error' };
}
