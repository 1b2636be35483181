// Account endpoints of API-SPEC.md 4.7 and DESIGN.md 1: login and logout for the dashboard's session
// cookie, the passphrase change, API keys (created and revoked only from a session, listed with a key too),
// the account (read-only, key or session), the profile, and resuming paused sending (session only).
import { z } from 'zod';
import type { Context } from 'koa';
import type { App } from '../context.ts';
import { iso, isoOrNull } from '../clock.ts';
import { ApiError, notFound, unauthorized, validationError } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { checkOrigin, principalOf, requireAuth, requireSession, SESSION_COOKIE } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { readSmallJson } from '../http/body.ts';
import { pageOf, parsePage } from '../http/pagination.ts';
import { listKeys, type ApiKey } from './keys.ts';
import { parseKeyPermission } from './key-scope.ts';
import { createKeyRecorded, revokeKeyRecorded } from './key-changes.ts';
import { actorOf, recordAudit } from './audit.ts';
import { createSession, findSession, listSessions, revokeSession, revokeSessionById, revokeUserSessions } from './sessions.ts';
import { findUserByEmail, getUser, insertUser, setPasswordHash, userEmailProblem, type User } from './users.ts';
import { createWorkspace, DEFAULT_WORKSPACE, findWorkspace, getWorkspace } from './workspaces.ts';
import { decoyHash, hashPassword, verifyPassword } from './passwords.ts';
import { hasUsers, SETUP_LINK_COMMAND, setupTokenIsLive, takeSetupToken } from './setup.ts';
import { passphraseProblem } from './passphrase.ts';
import { PasswordGate, SIGNED_IN_RANK } from './password-gate.ts';
import type { LoginThrottle } from './login-throttle.ts';
import { accountOf, accountState, type BoxFacts } from './overview.ts';
import { resumeSending } from './reputation.ts';

const SetupBody = z.object({ token: z.string().min(1).max(200), email: z.string().max(254), password: z.string().max(4096) }).strict();
const LoginBody = z.object({
  email: z.string().min(1).max(254),
  password: z.string().min(1).max(1024),
});

const PasswordBody = z.object({ current_password: z.string().min(1).max(1024), new_password: z.string().max(4096) }).strict();

const KeyBody = z.object({
  name: z
    .string()
    .trim()
    .min(1, 'is required')
    .max(100)
    .regex(/^[^\p{Cc}]*$/u, 'must not contain control characters'),
  // Judged against the workspace's domains and inboxes by parseKeyPermission.
  permission: z.unknown().optional(),
  domain_id: z.unknown().optional(),
  inbox_ids: z.unknown().optional(),
});

const presentKey = (k: ApiKey) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  permission: k.permission,
  domainId: k.domainId,
  inboxIds: k.inboxIds,
  createdAt: iso(k.createdAt),
  lastUsedAt: isoOrNull(k.lastUsedAt),
});

export function accountRoutes(app: App, throttle: LoginThrottle, box: BoxFacts) {
  const { store, clock, config } = app;
  const r = apiRouter();
  const secure = config.publicUrl.startsWith('https:');
  const ttlMs = config.sessionTtlHours * 60 * 60 * 1000;

  // Every password hash of the box goes through this gate (password-gate.ts): login, setup, the passphrase
  // change and the decoy.
  const hashes = new PasswordGate({ observe: (outcome) => app.metrics?.passwordHash(outcome) });
  app.metrics?.watchPasswordHashes(() => hashes.state);

  r.post('/auth/login', async (ctx) => {
    // Login CSRF: a foreign page must not sign a browser into an attacker's account.
    checkOrigin(ctx, config.publicUrl);
    // An address past its failure limit is refused before its body is read (catalogue API-21).
    const refused = await throttle.refusesAddress(ctx.ip);
    if (refused) throw tooManyLogins(refused.retryAfterSeconds);
    const body = parseInput(LoginBody, await readSmallJson(ctx));
    const email = body.email.trim().toLowerCase();
    const attempt = await throttle.begin(ctx.ip, email);
    if (attempt.refuse) throw tooManyLogins(attempt.retryAfterSeconds);
    let user: (User & { passwordHash: string }) | null;
    try {
      if (attempt.delayMs) await new Promise((resolve) => setTimeout(resolve, attempt.delayMs));
      user = await store.read(findUserByEmail(email));
      // An unknown address is checked against the decoy, in the same queue: it costs what a wrong password does.
      const stored = user?.passwordHash;
      const right = await hashes.run(attempt.rank, async () => verifyPassword(body.password, stored ?? (await decoyHash())), clientGone(ctx));
      if (!right || !user) user = null;
    } catch (err) {
      // Turned away by a full queue, or the client left: the password was never checked.
      if (err instanceof ApiError && (err.status === 503 || err.code === 'request_aborted')) attempt.abandon();
      else await attempt.fail();
      throw err;
    }
    if (!user) {
      await attempt.fail();
      throw new ApiError(401, 'invalid_credentials', 'Invalid email or password');
    }
    attempt.succeed();

    // A session id is never reused across logins (fixation): whatever this browser held is revoked.
    const previous = ctx.cookies.get(SESSION_COOKIE);
    const { workspaceId, id: userId } = user;
    const { session, workspace } = await store.write(function* () {
      if (previous) yield* revokeSession(clock, previous);
      const session = yield* createSession(clock, { workspaceId, userId, ttlMs });
      return { session, workspace: (yield* getWorkspace(workspaceId))! };
    });
    setSessionCookie(ctx, session.token, Math.floor(ttlMs / 1000), secure);
    ctx.body = { user: { id: user.id, email: user.email }, workspace: { id: workspace.id, name: workspace.name }, expiresAt: iso(session.expiresAt) };
  });

  // First start (setup.ts): whether the box still needs its owner, and creating the owner with the token.
  r.get('/setup', async (ctx) => {
    ctx.body = { needed: !(await store.read(hasUsers())) };
  });

  // Cheap checks first (catalogue AUTH-13): a box with an owner refuses before reading the body, a wrong token
  // before the passphrase is hashed. The token is taken only in the transaction that creates the owner.
  r.post('/setup', async (ctx) => {
    checkOrigin(ctx, config.publicUrl);
    if (await store.read(hasUsers())) throw invalidSetupToken();
    const body = parseInput(SetupBody, await readSmallJson(ctx));
    if (!(await store.read(setupTokenIsLive(clock, body.token)))) throw invalidSetupToken();
    const email = body.email.trim().toLowerCase();
    const badEmail = userEmailProblem(email);
    if (badEmail) throw validationError('email', badEmail);
    const weak = passphraseProblem(body.password, email);
    if (weak) throw validationError('password', weak);
    // Whoever holds the live token is the owner to be: first in the queue.
    const passwordHash = await hashes.run(SIGNED_IN_RANK, () => hashPassword(body.password), clientGone(ctx));
    const owner = await store.write(function* () {
      if (!(yield* takeSetupToken(clock, body.token))) return null;
      const workspace = (yield* findWorkspace(DEFAULT_WORKSPACE)) ?? (yield* createWorkspace(clock, DEFAULT_WORKSPACE));
      const user = yield* insertUser(clock, { workspaceId: workspace.id, email, passwordHash });
      // The owner creates itself, with the setup link.
      yield* recordAudit(clock.now(), { type: 'user', id: user.id, ip: ctx.ip }, { workspaceId: workspace.id, action: 'user.created', target: { type: 'user', id: user.id, name: user.email }, data: { by: 'setup_link' } });
      return { workspace, user };
    });
    if (!owner) throw invalidSetupToken();
    const session = await store.write(() => createSession(clock, { workspaceId: owner.workspace.id, userId: owner.user.id, ttlMs }));
    setSessionCookie(ctx, session.token, Math.floor(ttlMs / 1000), secure);
    app.log.info('first start: the owner was created', { email, workspace: owner.workspace.name });
    ctx.status = 201;
    ctx.body = { user: { id: owner.user.id, email: owner.user.email }, workspace: { id: owner.workspace.id, name: owner.workspace.name }, expiresAt: iso(session.expiresAt) };
  });

  // The passphrase change: the current passphrase is checked as a login is (the same throttle counts a wrong
  // one against this address and account, so a stolen session is no guessing oracle), the new one by the box's
  // rule. Every other session of the user ends, and this browser's is renewed (a fresh id, as at login), so a
  // copy of its cookie stops working too.
  r.post('/auth/password', requireSession(config.publicUrl), async (ctx) => {
    const p = principalOf(ctx);
    if (p.kind !== 'session') throw notFound(); // unreachable past requireSession; narrows the type
    const refused = await throttle.refusesAddress(ctx.ip);
    if (refused) throw tooManyLogins(refused.retryAfterSeconds);
    const body = parseInput(PasswordBody, ctx.request.body);
    const user = await store.read(
      (function* () {
        return (yield* findUserByEmail((yield* getUser(p.workspaceId, p.userId))!.email))!;
      })(),
    );
    const weak = passphraseProblem(body.new_password, user.email);
    if (weak) throw validationError('new_password', weak);
    if (body.new_password === body.current_password) throw validationError('new_password', 'must differ from the current passphrase');
    const attempt = await throttle.begin(ctx.ip, user.email);
    if (attempt.refuse) throw tooManyLogins(attempt.retryAfterSeconds);
    let right: boolean;
    try {
      if (attempt.delayMs) await new Promise((resolve) => setTimeout(resolve, attempt.delayMs));
      right = await hashes.run(attempt.rank, () => verifyPassword(body.current_password, user.passwordHash), clientGone(ctx));
    } catch (err) {
      if (err instanceof ApiError && (err.status === 503 || err.code === 'request_aborted')) attempt.abandon();
      else await attempt.fail();
      throw err;
    }
    if (!right) {
      await attempt.fail();
      throw new ApiError(401, 'invalid_credentials', 'The current passphrase is not correct');
    }
    attempt.succeed();
    const passwordHash = await hashes.run(SIGNED_IN_RANK, () => hashPassword(body.new_password), clientGone(ctx));
    const token = ctx.cookies.get(SESSION_COOKIE) ?? '';
    const changed = await store.write(function* () {
      // While it hashed, this session may have been signed out, or the passphrase changed from elsewhere.
      if ((yield* findSession(clock, token))?.id !== p.sessionId) return 'signed_out';
      if (!(yield* setPasswordHash(user.id, passwordHash, user.passwordHash))) return 'changed_meanwhile';
      const sessionsRevoked = yield* revokeUserSessions(clock, user.id, p.sessionId);
      yield* revokeSessionById(clock, user.id, p.sessionId);
      yield* recordAudit(clock.now(), actorOf(p, ctx.ip), { workspaceId: user.workspaceId, action: 'user.password_changed', target: { type: 'user', id: user.id, name: user.email }, data: { sessionsRevoked } });
      return { sessionsRevoked, session: yield* createSession(clock, { workspaceId: user.workspaceId, userId: user.id, ttlMs }) };
    });
    if (changed === 'signed_out') throw unauthorized();
    if (changed === 'changed_meanwhile') throw new ApiError(409, 'passphrase_changed', 'The passphrase was changed meanwhile; sign in again with the new one');
    setSessionCookie(ctx, changed.session.token, Math.floor(ttlMs / 1000), secure);
    app.log.info('passphrase changed from the dashboard', { userId: user.id, sessionsRevoked: changed.sessionsRevoked });
    ctx.body = { ok: true, sessionsRevoked: changed.sessionsRevoked };
  });

  r.get('/sessions', requireSession(config.publicUrl), async (ctx) => {
    const p = principalOf(ctx);
    if (p.kind !== 'session') throw notFound();
    const data = (await store.read(listSessions(clock, p.userId))).map((s) => ({ id: s.id, createdAt: iso(s.createdAt), expiresAt: iso(s.expiresAt), current: s.id === p.sessionId }));
    ctx.body = { data, count: data.length, hasMore: false };
  });

  r.delete('/sessions/:id', requireSession(config.publicUrl), async (ctx) => {
    const p = principalOf(ctx);
    if (p.kind !== 'session') throw notFound('Session');
    const revoked = await store.write(function* () {
      if (!(yield* revokeSessionById(clock, p.userId, ctx.params.id))) return false;
      yield* recordAudit(clock.now(), actorOf(p, ctx.ip), { workspaceId: p.workspaceId, action: 'session.revoked', target: { type: 'session', id: ctx.params.id, name: null } });
      return true;
    });
    if (!revoked) throw notFound('Session');
    ctx.body = { ok: true };
  });

  r.post('/auth/logout', async (ctx) => {
    const token = ctx.cookies.get(SESSION_COOKIE);
    if (token) {
      checkOrigin(ctx, config.publicUrl);
      await store.write(() => revokeSession(clock, token));
    }
    setSessionCookie(ctx, '', 0, secure);
    ctx.body = { ok: true };
  });

  r.post('/keys', requireSession(config.publicUrl), async (ctx) => {
    const { name, ...scope } = parseInput(KeyBody, ctx.request.body);
    const p = principalOf(ctx);
    const permission = await store.read(parseKeyPermission(p.workspaceId, scope));
    const key = await store.write(() => createKeyRecorded(clock, actorOf(p, ctx.ip), p.workspaceId, name, permission));
    ctx.status = 201;
    ctx.body = { ...presentKey(key), key: key.key };
  });

  r.get('/keys', requireAuth(config.publicUrl), async (ctx) => {
    const page = parsePage(ctx.query);
    const p = principalOf(ctx);
    // A scoped key reads its own metadata alone: the others' names and scopes are the workspace owner's.
    const only = p.kind === 'key' && p.scope.permission !== 'full_access' ? p.keyId : undefined;
    ctx.body = pageOf((await store.read(listKeys(p.workspaceId, page, only))).map(presentKey), page);
  });

  r.delete('/keys/:id', requireSession(config.publicUrl), async (ctx) => {
    const p = principalOf(ctx);
    if (!(await store.write(() => revokeKeyRecorded(clock, actorOf(p, ctx.ip), p.workspaceId, ctx.params.id)))) throw notFound('API key');
    ctx.body = { ok: true };
  });

  r.get('/account', requireAuth(config.publicUrl), async (ctx) => {
    ctx.body = await store.read(accountOf(config, box, principalOf(ctx).workspaceId, clock.now()));
  });

  r.get('/profile', requireSession(config.publicUrl), async (ctx) => {
    const p = principalOf(ctx);
    if (p.kind !== 'session') throw notFound(); // unreachable past requireSession; narrows the type
    const { user, workspace, state } = await store.read(
      (function* () {
        return { user: (yield* getUser(p.workspaceId, p.userId))!, workspace: (yield* getWorkspace(p.workspaceId))!, state: yield* accountState(config, p.workspaceId, clock.now()) };
      })(),
    );
    ctx.body = {
      user: { id: user.id, email: user.email, createdAt: iso(user.createdAt) },
      ...state,
      workspace: { id: workspace.id, name: workspace.name, createdAt: iso(workspace.createdAt) },
      // The dashboard's try-mode banner (mailwright try): mail to other domains is kept, not sent.
      tryMode: box.tryMode === true,
    };
  });

  // Reputation paused sending; the owner, having fixed the cause, turns it back on (API-SPEC.md 5.3: session only).
  r.post('/account/sending/resume', requireSession(config.publicUrl), async (ctx) => {
    const p = principalOf(ctx);
    const workspaceId = p.workspaceId;
    const resumed = await store.write(function* () {
      const done = yield* resumeSending(workspaceId, clock.now());
      if (done) yield* recordAudit(clock.now(), actorOf(p, ctx.ip), { workspaceId, action: 'sending.resumed', target: { type: 'workspace', id: workspaceId, name: null } });
      return done;
    });
    if (resumed) app.log.info('sending resumed by the owner', { workspaceId });
    ctx.body = { ok: true, resumed };
  });

  return r;
}

const tooManyLogins = (retryAfterSeconds: number) =>
  new ApiError(429, 'too_many_login_attempts', 'Too many failed logins; try again later', { headers: { 'retry-after': String(retryAfterSeconds) } });

const invalidSetupToken = () =>
  new ApiError(403, 'invalid_setup_token', `This setup link is not valid: it was used already, it expired, a newer one replaced it, or the box has an owner. Run '${SETUP_LINK_COMMAND}' on the box for a new one while it has no owner.`);

/** Aborts when the client closes the connection before its answer is sent, so its queued hash is dropped. */
function clientGone(ctx: Context): AbortSignal {
  const gone = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableEnded) gone.abort();
  });
  return gone.signal;
}

// Written by hand rather than with ctx.cookies.set: behind a TLS-terminating proxy the connection to us
// is plain HTTP, and the cookies library refuses Secure there unless X-Forwarded-Proto is trusted.
function setSessionCookie(ctx: Context, token: string, maxAgeSeconds: number, secure: boolean): void {
  const parts = [`${SESSION_COOKIE}=${token}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAgeSeconds}`];
  if (maxAgeSeconds === 0) parts.push('Expires=Thu, 01 Jan 1970 00:00:00 GMT');
  if (secure) parts.push('Secure');
  ctx.append('Set-Cookie', parts.join('; '));
}
