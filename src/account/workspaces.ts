// Workspaces: the tenant every other row belongs to. A `default` workspace exists from the first start.
import type { Clock } from '../clock.ts';
import type { Db } from '../db/open.ts';
import { isId, newId } from '../db/ids.ts';

export interface Workspace {
  id: string;
  name: string;
  createdAt: number;
}

interface Row {
  id: string;
  name: string;
  created_at: number;
}

const toWorkspace = (r: Row): Workspace => ({ id: r.id, name: r.name, createdAt: r.created_at });

export const DEFAULT_WORKSPACE = 'default';

/** A name is a short label for people: 1-64 printable characters, no leading or trailing space. */
function checkWorkspaceName(name: string): string | null {
  if (!/^\S(?:[^\p{Cc}]{0,62}\S)?$/u.test(name)) return 'must be 1 to 64 printable characters';
  if (name.startsWith('ws_')) return 'must not start with ws_ (that is how ids look)';
  return null;
}

export function createWorkspace(db: Db, clock: Clock, name: string): Workspace {
  const problem = checkWorkspaceName(name);
  if (problem) throw new Error(`workspace name ${problem}`);
  if (findWorkspace(db, name)) throw new Error(`a workspace named "${name}" already exists`);
  const row: Row = { id: newId('ws', clock.now()), name, created_at: clock.now() };
  db.prepare('INSERT INTO workspaces (id, name, created_at) VALUES (@id, @name, @created_at)').run(row);
  return toWorkspace(row);
}

export function getWorkspace(db: Db, id: string): Workspace | null {
  const row = db.prepare('SELECT id, name, created_at FROM workspaces WHERE id = ?').get(id) as Row | undefined;
  return row ? toWorkspace(row) : null;
}

/** By id or by name, for the CLI's --workspace. */
export function findWorkspace(db: Db, idOrName: string): Workspace | null {
  if (isId('ws', idOrName)) return getWorkspace(db, idOrName);
  const row = db.prepare('SELECT id, name, created_at FROM workspaces WHERE name = ?').get(idOrName) as Row | undefined;
  return row ? toWorkspace(row) : null;
}

export function ensureDefaultWorkspace(db: Db, clock: Clock): Workspace {
  return db.transaction(() => findWorkspace(db, DEFAULT_WORKSPACE) ?? createWorkspace(db, clock, DEFAULT_WORKSPACE)).immediate();
}
