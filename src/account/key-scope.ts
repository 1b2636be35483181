// What an API key may do: its permission as stored, the scope a request carries once the key is
// found (inbox addresses resolved), the checks of POST /keys, and the one check of a send's From that the
// API, the composer and SMTP submission share. Which routes each permission reaches is http/scopes.ts's.
import { all, get, type Query } from '../db/query.ts';
import { ApiError, validationError } from '../errors.ts';

export const PERMISSIONS = ['full_access', 'sending_access', 'inbox_access'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** As stored and shown (GET /keys). */
export interface KeyPermission {
  permission: Permission;
  domainId: string | null;
  inboxIds: string[] | null;
}

/** What a request with the key may reach: a sending key its sends, an inbox key its inboxes' mail. */
export type KeyScope =
  | { permission: 'full_access' }
  | { permission: 'sending_access'; keyId: string; domainId: string | null; domain: string | null }
  | { permission: 'inbox_access'; inboxIds: string[]; addresses: string[] };

export const MAX_INBOXES_PER_KEY = 100;

/** The scope of a stored key, its inboxes' addresses and its domain's name looked up now (a deleted one is gone). */
export function* resolveScope(workspaceId: string, keyId: string, p: KeyPermission): Query<KeyScope> {
  if (p.permission === 'sending_access') {
    const domain = p.domainId === null ? null : ((yield* get<{ name: string }>('SELECT name FROM domains WHERE workspace_id = ? AND id = ?', workspaceId, p.domainId))?.name ?? '');
    // A key for a domain since deleted keeps no power to send at all ('' matches no From).
    return { permission: 'sending_access', keyId, domainId: p.domainId, domain };
  }
  if (p.permission === 'inbox_access') {
    const ids = p.inboxIds ?? [];
    const rows = yield* all<{ id: string; address: string }>('SELECT id, address FROM inboxes WHERE workspace_id = ? AND id IN (SELECT value FROM json_each(?))', workspaceId, JSON.stringify(ids));
    return { permission: 'inbox_access', inboxIds: rows.map((r) => r.id), addresses: rows.map((r) => r.address.toLowerCase()) };
  }
  return { permission: 'full_access' };
}

/**
 * POST /keys's `permission`, `domain_id` and `inbox_ids` -> what to store; a 400 naming the field for an unknown
 * permission, a field that does not belong to it, or a domain or inbox this workspace does not have.
 */
export function* parseKeyPermission(workspaceId: string, body: { permission?: unknown; domain_id?: unknown; inbox_ids?: unknown }): Query<KeyPermission> {
  const permission = body.permission ?? 'full_access';
  if (typeof permission !== 'string' || !(PERMISSIONS as readonly string[]).includes(permission)) {
    throw validationError('permission', `must be one of ${PERMISSIONS.join(', ')}`);
  }
  const p = permission as Permission;
  const domainId = body.domain_id ?? null;
  const inboxIds = body.inbox_ids ?? null;
  if (domainId !== null && p !== 'sending_access') throw validationError('domain_id', 'is only for permission sending_access');
  if (inboxIds !== null && p !== 'inbox_access') throw validationError('inbox_ids', 'is only for permission inbox_access');
  if (p === 'sending_access' && domainId !== null) {
    if (typeof domainId !== 'string' || !(yield* get('SELECT 1 FROM domains WHERE workspace_id = ? AND id = ?', workspaceId, domainId))) {
      throw validationError('domain_id', 'must be the id of a domain of this workspace');
    }
  }
  if (p === 'inbox_access') {
    if (!Array.isArray(inboxIds) || inboxIds.length === 0) throw validationError('inbox_ids', 'is required for inbox_access: a non-empty array of inbox ids');
    if (inboxIds.length > MAX_INBOXES_PER_KEY) throw validationError('inbox_ids', `at most ${MAX_INBOXES_PER_KEY} inboxes per key`);
    const unique = [...new Set(inboxIds)];
    for (const [i, id] of unique.entries()) {
      if (typeof id !== 'string' || !(yield* get('SELECT 1 FROM inboxes WHERE workspace_id = ? AND id = ?', workspaceId, id))) {
        throw validationError(`inbox_ids.${i}`, 'must be the id of an inbox of this workspace');
      }
    }
    return { permission: p, domainId: null, inboxIds: unique as string[] };
  }
  return { permission: p, domainId: p === 'sending_access' ? (domainId as string | null) : null, inboxIds: null };
}

export const insufficientScope = (needed: string, what: string) =>
  new ApiError(403, 'insufficient_scope', `This API key cannot ${what}: it needs ${needed}`);

/**
 * May a key with this scope send from `from`? A sending key for one domain only from that domain; an inbox
 * key only from its inboxes' addresses. Throws 403 insufficient_scope naming what would be needed.
 */
export function checkSendFrom(scope: KeyScope, from: string): void {
  const address = from.toLowerCase();
  const domain = address.slice(address.lastIndexOf('@') + 1);
  if (scope.permission === 'sending_access' && scope.domain !== null && domain !== scope.domain) {
    throw insufficientScope(`full_access or sending_access for ${domain}`, `send from ${address}: it may send only from the domain ${scope.domain || '(deleted)'}`);
  }
  if (scope.permission === 'inbox_access' && !scope.addresses.includes(address)) {
    throw insufficientScope(`full_access, sending_access or inbox_access to the inbox ${address}`, `send from ${address}: it may send only from its inboxes (${scope.addresses.join(', ') || 'none left'})`);
  }
}
