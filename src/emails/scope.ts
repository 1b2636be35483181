// The mail a scoped API key may see: a sending key the emails it sent, an inbox key the mail of its
// inboxes and what was sent from their addresses. One SQL term for lists and one check for a single email,
// thread or attachment, so every route narrows the same way.
import { get, type Query } from '../db/query.ts';
import type { KeyScope } from '../account/key-scope.ts';

/** The WHERE term (on alias `e`) limiting emails to the scope, with its parameters; null for full access. */
export function emailScopeTerm(scope: KeyScope): { sql: string; args: unknown[] } | null {
  if (scope.permission === 'sending_access') return { sql: 'e.sent_by_key = ?', args: [scope.keyId] };
  if (scope.permission === 'inbox_access') {
    return {
      sql: `(e.inbox_id IN (SELECT value FROM json_each(?)) OR (e.direction = 'out' AND lower(e.from_address) IN (SELECT value FROM json_each(?))))`,
      args: [JSON.stringify(scope.inboxIds), JSON.stringify(scope.addresses)],
    };
  }
  return null;
}

export function* emailVisible(workspaceId: string, scope: KeyScope, id: string): Query<boolean> {
  const term = emailScopeTerm(scope);
  return !!(yield* get(`SELECT 1 FROM emails e WHERE e.workspace_id = ? AND e.id = ?${term ? ` AND ${term.sql}` : ''}`, workspaceId, id, ...(term?.args ?? [])));
}

/** An email attachment (att_) of an email within the scope; a composer draft's file is never an inbox key's. */
export function* attachmentVisible(workspaceId: string, scope: KeyScope, id: string): Query<boolean> {
  const term = emailScopeTerm(scope);
  return !!(yield* get(
    `SELECT 1 FROM email_attachments a JOIN emails e ON e.id = a.email_id WHERE a.workspace_id = ? AND a.id = ?${term ? ` AND ${term.sql}` : ''}`,
    workspaceId,
    id,
    ...(term?.args ?? []),
  ));
}

/** Keeps the messages of a thread that the scope may see. */
export function* withinScope<T extends { id: string }>(workspaceId: string, scope: KeyScope, emails: T[]): Query<T[]> {
  if (scope.permission === 'full_access') return emails;
  const visible: T[] = [];
  for (const e of emails) if (yield* emailVisible(workspaceId, scope, e.id)) visible.push(e);
  return visible;
}
