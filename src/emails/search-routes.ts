// GET /emails (API-SPEC.md 4.2): the query parameters validated once into ListParams (a 400 naming the first
// bad one), then one page of list.ts. Mounted by start/front-doors.ts beside emails/routes.ts.
import type { App } from '../context.ts';
import { validationError } from '../errors.ts';
import { isId } from '../db/ids.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth, scopeOf } from '../http/auth.ts';
import { parsePage } from '../http/pagination.ts';
import { normaliseDomain } from '../mail/domain-name.ts';
import { CATEGORIES, STATUSES, listEmails, type ListParams, type Status } from './list.ts';
import type { Category } from './rows.ts';
import { parseQuery } from './search-operators.ts';
import { hasBacklog } from './search-backlog.ts';

const MAX_LIST_VALUES = 20;
const MAX_FILTER_CHARS = 320;
const CONTROL = /[\u0000-\u001f\u007f]/;

export function emailListRoutes(app: App) {
  const r = apiRouter();
  r.get('/emails', requireAuth(app.config.publicUrl), async (ctx) => {
    const p = parseListParams(ctx.query, app.clock.now());
    // Words, `from` and `to` are found through the full-text index: what was acknowledged must be in it first.
    if ((p.search || p.from || p.to) && (await app.store.read(hasBacklog()))) await indexBacklogNow(app);
    const principal = principalOf(ctx);
    // In one transaction: the page's statements see one moment, and a search's planner setting lasts for it only.
    ctx.body = await app.store.read(listEmails(principal.workspaceId, { ...p, scope: scopeOf(principal) }), { snapshot: true });
  });
  return r;
}

/**
 * Has the writer thread index the whole backlog of the full-text index (emails/search-backlog.ts) in one
 * transaction, or with `all: false` start on it a batch at a time between its other calls.
 */
export async function indexBacklogNow(app: Pick<App, 'writer' | 'clock' | 'log'>, opts: { all?: boolean } = {}): Promise<void> {
  await app.writer.commit([{ kind: 'search.index', payload: { all: opts.all ?? true } }], { now: app.clock.now(), log: app.log });
}

/**
 * The query string of GET /emails -> ListParams; throws a 400 validation_error naming the parameter. `now`:
 * what `query`'s newer_than: and older_than: count back from.
 */
export function parseListParams(query: Record<string, unknown>, now = Date.now()): ListParams {
  const p: ListParams = { ...parsePage(query), includeSpam: false };
  const direction = one(query, 'direction');
  if (direction !== undefined) p.direction = oneOf('direction', direction, ['in', 'out'] as const);
  const status = one(query, 'status');
  if (status !== undefined) p.status = oneOf<Status>('status', status, STATUSES);

  const domains = list(query, 'domain');
  if (domains) {
    p.domainNames = [];
    p.domainIds = [];
    for (const d of domains) {
      if (d.startsWith('dom_')) {
        if (!isId('dom', d)) throw validationError('domain', `"${d}" is not a domain id`);
        p.domainIds.push(d);
      } else {
        const name = normaliseDomain(d);
        if (!name.ok) throw validationError('domain', `"${d}" ${name.reason}`);
        p.domainNames.push(name.name);
      }
    }
  }
  const inbox = one(query, 'inbox_id');
  if (inbox !== undefined) {
    if (!isId('inb', inbox)) throw validationError('inbox_id', 'must be an inbox id (inb_...)');
    p.inboxId = inbox;
  }
  const labels = list(query, 'label');
  if (labels) {
    p.labelNames = [];
    p.labelIds = [];
    for (const l of labels) {
      if (l.length > 100 || CONTROL.test(l)) throw validationError('label', 'must be label names (at most 100 characters, no control characters) or lbl_ ids');
      (isId('lbl', l) ? p.labelIds : p.labelNames).push(l);
    }
  }
  const categories = list(query, 'category');
  if (categories) p.categories = [...new Set(categories.map((c) => oneOf<Category>('category', c, CATEGORIES)))];

  p.archived = flag(query, 'archived');
  p.important = flag(query, 'important');
  p.includeSpam = flag(query, 'include_spam') ?? false;
  p.unread = flag(query, 'unread');
  // Beyond the spec (DESIGN.md "trash"): true lists the Trash alone; false (the default) leaves it out.
  const trashed = flag(query, 'trashed');
  p.trash = trashed ? 'only' : 'exclude';
  for (const name of ['from', 'to'] as const) {
    const value = one(query, name)?.trim();
    if (!value) continue;
    if (value.length > MAX_FILTER_CHARS || CONTROL.test(value)) throw validationError(name, `must be part of an address or name: at most ${MAX_FILTER_CHARS} characters, no control characters`);
    p[name] = [value];
  }
  p.after = time(query, 'after');
  p.before = time(query, 'before');
  const search = one(query, 'query');
  if (search !== undefined && search.trim()) withQuery(p, search, trashed, now);
  return p;
}

/** Adds what `query` says to the parameters: each operator is one more condition (AND). */
function withQuery(p: ListParams, input: string, trashed: boolean | undefined, now: number) {
  const { search, operators: ops } = parseQuery(input, now);
  if (search) p.search = search;
  if (!ops) return;
  p.operators = ops;
  if (ops.from.length) p.from = [...(p.from ?? []), ...ops.from];
  if (ops.to.length) p.to = [...(p.to ?? []), ...ops.to];
  if (ops.after !== undefined) p.after = Math.max(p.after ?? -Infinity, ops.after);
  if (ops.before !== undefined) p.before = Math.min(p.before ?? Infinity, ops.before);
  // in:anywhere, in:spam and in:trash reach past the list's defaults (spam and the Trash left out); an
  // explicit trashed=false still leaves the Trash out, so trashed=false with in:trash finds nothing.
  const asks = (flag: string) => ops.flags.some((f) => f.flag === flag && !f.not);
  if (ops.anywhere || asks('spam') || asks('trash')) p.includeSpam = true;
  if (trashed !== false && p.trash === 'exclude' && (ops.anywhere || asks('trash'))) p.trash = asks('trash') ? 'only' : 'include';
}

/** A parameter given once; an empty value counts as not given. */
function one(query: Record<string, unknown>, name: string): string | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string') throw validationError(name, 'give it once (a list is one comma-separated value)');
  return raw;
}

/** A comma-separated list (also accepted as a repeated parameter). */
function list(query: Record<string, unknown>, name: string): string[] | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  const values = [...new Set((Array.isArray(raw) ? raw.join(',') : String(raw)).split(',').map((v) => v.trim()).filter(Boolean))];
  if (!values.length) throw validationError(name, 'must be one value or a comma-separated list');
  if (values.length > MAX_LIST_VALUES) throw validationError(name, `at most ${MAX_LIST_VALUES} values`);
  return values;
}

function oneOf<T extends string>(name: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) throw validationError(name, `must be one of ${allowed.join(', ')}; got "${value.slice(0, 50)}"`);
  return value as T;
}

function flag(query: Record<string, unknown>, name: string): boolean | undefined {
  const value = one(query, name);
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') throw validationError(name, 'must be true or false');
  return value === 'true';
}

// ISO 8601 / RFC 3339: a date (midnight UTC) or a date and time, with an optional zone (none means UTC).
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

function time(query: Record<string, unknown>, name: string): number | undefined {
  const value = one(query, name);
  if (value === undefined) return undefined;
  const bad = () => validationError(name, 'must be an ISO 8601 date or timestamp, such as 2026-11-21 or 2026-11-21T10:00:00Z');
  const m = ISO_TIME.exec(value.trim());
  if (!m) throw bad();
  const [y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone = 'Z'] = m.slice(1);
  const ms = Date.UTC(+y, +mo - 1, +d, +h, +mi, +s, Number(frac.padEnd(3, '0').slice(0, 3)));
  const check = new Date(ms);
  if (check.getUTCFullYear() !== +y || check.getUTCMonth() !== +mo - 1 || check.getUTCDate() !== +d || +h > 23 || +mi > 59 || +s > 59) throw bad();
  let offset = 0;
  if (zone !== 'Z' && zone !== 'z') {
    const [oh, om = '0'] = [zone.slice(1, 3), zone.slice(3).replace(':', '')];
    if (+oh > 23 || +om > 59) throw bad();
    offset = (zone[0] === '-' ? -1 : 1) * (+oh * 60 + +om) * 60_000;
  }
  return ms - offset;
}
