// Who is calling: a bearer API key or the dashboard's session cookie. The lookups are injected (account/
// owns keys and sessions; http/ imports no resource). Every failure, whatever its cause, is the same 401
// so a caller learns nothing about which keys exist; cookie-authenticated writes must come from our origin.
import type { Context, Middleware } from 'koa';
import { ApiError, unauthorized } from '../errors.ts';

export const SESSION_COOKIE = 'service_session_v2';

/** What a key may reach (account/key-scope.ts KeyScope, which resolves it; http/scopes.ts decides with it). */
export type Scope =
  | { permission: 'full_access' }
  | { permission: 'sending_access'; keyId: string; domainId: string | null; domain: string | null }
  | { permission: 'inbox_access'; inboxIds: string[]; addresses: string[] };

export type Principal =
  | { kind: 'key'; workspaceId: string; keyId: string; scope: Scope }
  | { kind: 'session'; workspaceId: string; userId: string; sessionId: string };

export interface Authenticator {
  byKey(secret: string): Promise<Principal | null>;
  bySession(token: string): Promise<Principal | null>;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Resolves the credential (if any) into ctx.state.principal; never throws, the guards below decide. */
export function resolveAuth(auth: Authenticator): Middleware {
  return async (ctx, next) => {
    ctx.state.principal = await identify(ctx, auth);
    await next();
  };
}

async function identify(ctx: Context, auth: Authenticator): Promise<Principal | null> {
  const headers = ctx.req.rawHeaders.filter((_, i) => i % 2 === 0 && ctx.req.rawHeaders[i].toLowerCase() === 'authorization');
  if (headers.length > 1) return null;
  const authorization = ctx.get('Authorization');
  if (headers.length === 1) {
    // RFC 7235: the scheme is case-insensitive; the token is ours to judge.
    const m = /^Bearer ([!-~]+)$/i.exec(authorization);
    return m ? auth.byKey(m[1]) : null;
  }
  const token = ctx.cookies.get(SESSION_COOKIE);
  return token ? auth.bySession(token) : null;
}

/**
 * DESIGN.md "authentication before routing": without a valid credential every request but the listed ones
 * is 401, whether or not its route exists, and before its body is read.
 */
export function requireCredential(opts: { except: Array<{ method: string; path: string }> }): Middleware {
  return async (ctx, next) => {
    if (!ctx.state.principal && !opts.except.some((e) => e.method === ctx.method && e.path === ctx.path)) throw unauthorized();
    await next();
  };
}

/** How a send came in, as the email records it: a browser session is the dashboard, a key an application. */
export const sendChannel = (p: Principal): 'dashboard' | 'api' => (p.kind === 'session' ? 'dashboard' : 'api');

/** The scope of the caller: a session (the dashboard) has full access. */
export const scopeOf = (p: Principal): Scope => (p.kind === 'key' ? p.scope : { permission: 'full_access' });

export function principalOf(ctx: Context): Principal {
  const p = ctx.state.principal as Principal | null | undefined;
  if (!p) throw unauthorized();
  return p;
}

/** K: an API key or a browser session. */
export function requireAuth(publicUrl: string): Middleware {
  return async (ctx, next) => {
    const p = principalOf(ctx);
    if (p.kind === 'session') checkOrigin(ctx, publicUrl);
    await next();
  };
}

/** S: a browser session only (API-SPEC.md section 5.3). */
export function requireSession(publicUrl: string): Middleware {
  return async (ctx, next) => {
    const p = principalOf(ctx);
    if (p.kind !== 'session') {
      throw new ApiError(403, 'session_required', 'This operation needs a browser session (sign in to the dashboard); API keys cannot perform it');
    }
    checkOrigin(ctx, publicUrl);
    await next();
  };
}

/**
 * CSRF guard for cookie-authenticated writes (DESIGN.md section 2; catalogue API-05). A browser says where a
 * request comes from: Sec-Fetch-Site when it supports it, else Origin. A request with neither header is not
 * from a browser (curl with the cookie, a script), and a cross-site page cannot make a browser drop them, so
 * it is allowed. Referer is not consulted: browsers send Origin on every cross-origin write.
 */
export function checkOrigin(ctx: Context, publicUrl: string): void {
  if (SAFE_METHODS.has(ctx.method)) return;
  const site = ctx.get('Sec-Fetch-Site').toLowerCase();
  const origin = ctx.get('Origin');
  const foreign = site ? site !== 'same-origin' && site !== 'none' : origin !== '' && ![new URL(publicUrl).origin, `${ctx.protocol}://${ctx.host}`].includes(origin);
  if (foreign) {
    throw new ApiError(403, 'invalid_origin', 'Cross-origin request refused: a cookie-authenticated write must come from the dashboard origin');
  }
}
