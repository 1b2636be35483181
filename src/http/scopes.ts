// Which API routes a scoped key reaches: one table, read by one guard that runs after routing and
// before the body is read. A route missing from the table is full access only, and scopes.test.ts fails on
// it, so a new route gets a decision. Sessions and full-access keys pass; what a route shows or does within
// the scope (lists, sends) is the route's, with the scope the principal carries.
import type { Context, Middleware } from 'koa';
import { ApiError, notFound } from '../errors.ts';
import type { Principal } from './auth.ts';

/**
 * How a scoped key reaches a route: `route`, the route narrows itself to the scope (lists, sends); `email`,
 * the `:id` must be an email the key may see; `inbox`, one of its inboxes; `attachment`, a file of such an email;
 * `webhook`, a webhook for one of its inboxes.
 * Otherwise 404, as if it did not exist.
 */
export type Reach = 'route' | 'email' | 'inbox' | 'attachment' | 'webhook';
export type ScopedPermission = 'sending_access' | 'inbox_access';
/** `own`: open to strangers or for a session alone; the route's own guard answers every key (403 session_required). */
export type RouteScope = Partial<Record<ScopedPermission, Reach>> & { own?: true };

const FULL: RouteScope = {};
const OWN: RouteScope = { own: true };
const MAIL: RouteScope = { sending_access: 'email', inbox_access: 'email' };
const EVERY: RouteScope = { sending_access: 'route', inbox_access: 'route' };

/** `METHOD /path` (as the routers write it, under /api/v1) -> what scoped keys may do there. */
export const ROUTE_SCOPES: Record<string, RouteScope> = {
  // Open to strangers or to a session alone: their own guards decide; keys of any kind are refused there.
  'POST /auth/login': OWN, 'GET /setup': OWN, 'POST /setup': OWN, 'POST /auth/password': OWN, 'POST /auth/logout': OWN,
  'GET /sessions': OWN, 'DELETE /sessions/:id': OWN, 'GET /audit': OWN, 'POST /keys': OWN, 'DELETE /keys/:id': OWN, 'GET /profile': OWN,
  'POST /billing/checkout': OWN, 'POST /billing/cancel': OWN, 'POST /billing/stripe/webhook': OWN,
  // API-SPEC 5.4: any key reads the account and key metadata; a scoped key lists itself alone.
  'GET /account': EVERY, 'GET /keys': EVERY,
  // The MCP server: it offers each key the tools whose routes it may call, and each tool's call is judged here again.
  'POST /mcp': EVERY,
  'POST /account/sending/resume': OWN, 'GET /analytics': FULL, 'GET /queue': FULL, 'GET /doctor': FULL,
  // Sending: a sending key from its domain, an inbox key from its inboxes' addresses.
  'POST /emails': EVERY, 'POST /emails/batch': EVERY,
  // One email: a sending key's own sends, an inbox key's inboxes' mail.
  'GET /emails/:id': MAIL, 'GET /emails/:id/events': MAIL, 'POST /emails/:id/cancel': MAIL,
  'GET /emails/:id/raw': { inbox_access: 'email' }, 'GET /emails/:id/html': { inbox_access: 'email' },
  'PATCH /emails/:id': { inbox_access: 'email' },
  // Answering one email is a send from its inbox: an inbox key for its inboxes' mail; a sending key cannot read it.
  'POST /emails/:id/reply': { inbox_access: 'email' }, 'POST /emails/:id/forward': { inbox_access: 'email' },
  'DELETE /emails/:id': FULL, 'POST /emails/trash/empty': FULL, 'POST /emails/:id/labels': FULL,
  'GET /emails': { inbox_access: 'route' }, 'GET /threads/:id': { inbox_access: 'route' },
  'GET /attachments/:id': { inbox_access: 'attachment' }, 'DELETE /attachments/:id': FULL,
  'GET /inboxes': { inbox_access: 'route' }, 'GET /inboxes/:id': { inbox_access: 'inbox' },
  'POST /inboxes': FULL, 'PATCH /inboxes/:id': FULL, 'DELETE /inboxes/:id': FULL, 'PUT /inboxes/:id/forwarding': FULL,
  // The live stream and webhooks: an inbox key's see its inboxes' events alone.
  'GET /events/stream': { inbox_access: 'route' },
  'POST /webhooks': { inbox_access: 'route' }, 'GET /webhooks': { inbox_access: 'route' },
  'GET /webhooks/:id': { inbox_access: 'webhook' }, 'PATCH /webhooks/:id': { inbox_access: 'webhook' },
  'DELETE /webhooks/:id': { inbox_access: 'webhook' }, 'POST /webhooks/:id/rotate-secret': { inbox_access: 'webhook' },
  'POST /webhooks/:id/test': { inbox_access: 'webhook' }, 'GET /webhooks/:id/deliveries': { inbox_access: 'webhook' },
  'POST /webhooks/:id/deliveries/:delivery_id/replay': { inbox_access: 'webhook' }, 'POST /webhooks/:id/replay': { inbox_access: 'webhook' },
  // The workspace's configuration and its shared objects: full access.
  'POST /domains': FULL, 'GET /domains': FULL, 'GET /domains/:id': FULL, 'PATCH /domains/:id': FULL, 'DELETE /domains/:id': FULL,
  'POST /domains/:id/verify': FULL, 'POST /domains/:id/dkim/rotate': FULL, 'POST /domains/:id/inbound/setup': FULL,
  'POST /domains/:id/inbound/verify': FULL, 'GET /dns/provider': FULL, 'GET /dns/domain-connect/connect': FULL, 'GET /sending-identities': FULL,
  'GET /domains/:id/dmarc-reports': FULL, 'GET /domains/:id/dmarc-reports/summary': FULL, 'GET /domains/:id/dmarc-reports/:reportId': FULL,
  'GET /domains/:id/tls-reports': FULL, 'GET /domains/:id/rejected-reports': FULL,
  'POST /drafts': FULL, 'GET /drafts': FULL, 'GET /drafts/:id': FULL, 'PUT /drafts/:id': FULL, 'DELETE /drafts/:id': FULL,
  'POST /drafts/:id/attachments': FULL, 'POST /drafts/:id/send': FULL,
  'GET /suppressions': FULL, 'GET /suppressions/:email': FULL, 'POST /suppressions': FULL, 'DELETE /suppressions/:email': FULL,
  'GET /spam/allow': FULL, 'GET /spam/allow/:entry': FULL, 'POST /spam/allow': FULL, 'DELETE /spam/allow/:entry': FULL,
  'GET /spam/block': FULL, 'GET /spam/block/:entry': FULL, 'POST /spam/block': FULL, 'DELETE /spam/block/:entry': FULL, 'GET /spam/filter': FULL,
  'GET /labels': FULL, 'GET /labels/:id': FULL, 'POST /labels': FULL, 'PATCH /labels/:id': FULL, 'DELETE /labels/:id': FULL,
  'POST /labels/:id/rules': FULL, 'DELETE /labels/:id/rules/:rule_id': FULL,
  'GET /templates': FULL, 'POST /templates': FULL, 'GET /templates/:id': FULL, 'GET /templates/:id/versions/:version_id': FULL,
  'PUT /templates/:id/draft': FULL, 'POST /templates/:id/draft': FULL, 'POST /templates/:id/render': FULL, 'POST /templates/:id/test': FULL,
  'POST /templates/:id/publish': FULL, 'POST /templates/:id/archive': FULL, 'POST /templates/:id/restore': FULL,
};

/** `METHOD /path` of the routes (as routers hold them, under `prefix`) that the table has no decision for. */
export function undecided(routes: Array<{ path: string | RegExp; methods: string[] }>, prefix = '', table = ROUTE_SCOPES): string[] {
  return routes.flatMap((l) =>
    typeof l.path !== 'string' ? [`${l.methods.join(',')} ${String(l.path)}`] : l.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${(l.path as string).slice(prefix.length)}`).filter((k) => !(k in table)),
  );
}

/** Asks the store whether a scoped key may see one email or inbox of its workspace (injected: http/ imports no resource). */
export type Visible = (p: Principal & { kind: 'key' }, kind: Exclude<Reach, 'route'>, id: string) => Promise<boolean>;

interface Layer {
  path: string | RegExp;
  methods: string[];
}

/**
 * The guard, mounted under the API prefix before the body parser: every route layer matched for this method
 * must let the key's permission in, and an `email`/`inbox` reach must find the `:id` within the scope.
 */
export function scopeGuard(prefix: string, visible: Visible, table = ROUTE_SCOPES): Middleware {
  return async (ctx, next) => {
    const p = ctx.state.principal as Principal | null | undefined;
    if (!p || p.kind !== 'key' || p.scope.permission === 'full_access') return next();
    const permission = p.scope.permission;
    const layers = ((ctx as Context & { matched?: Layer[] }).matched ?? []).filter((l) => l.methods.includes(ctx.method) && typeof l.path === 'string');
    for (const layer of layers) {
      const path = (layer.path as string).slice(prefix.length);
      const method = ctx.method === 'HEAD' ? 'GET' : ctx.method;
      const decided = table[`${method} ${path}`];
      if (decided?.own) continue;
      const reach = decided?.[permission];
      if (!reach) throw insufficient(method, path, permission, table);
      if (reach === 'route') continue;
      const id = paramOf(path, layer.path as string, ctx.path);
      if (id === null || !(await visible(p, reach, id))) throw notFound(NAMES[reach]);
    }
    await next();
  };
}

const NAMES = { email: 'Email', inbox: 'Inbox', attachment: 'Attachment', webhook: 'Webhook' };

function insufficient(method: string, path: string, permission: ScopedPermission, table: Record<string, RouteScope>): ApiError {
  const others = (['sending_access', 'inbox_access'] as const).filter((q) => q !== permission && table[`${method} ${path}`]?.[q]);
  const needed = ['full_access', ...others].join(' or ');
  return new ApiError(403, 'insufficient_scope', `This API key (${permission}) cannot call ${method} ${path}: it needs ${needed}`);
}

/** The value of `:id` in the request path, by the position of that segment in the route's path. */
function paramOf(path: string, fullRoute: string, requestPath: string): string | null {
  const at = fullRoute.split('/').indexOf(':id');
  if (at < 0 || !path.includes(':id')) return null;
  const value = requestPath.split('/')[at];
  try {
    return value === undefined ? null : decodeURIComponent(value);
  } catch {
    return null;
  }
}
