// Workspaces: the tenant every other row belongs to. A `default` workspace exists from the first start.
import type { Clock } from '../clock.ts';
import { get, run, type Query } from '../db/query.ts';
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

export function* createWorkspace(clock: Clock, name: string): Query<Workspace> {
  const problem = checkWorkspaceName(name);
  if (problem) throw new Error(`workspace name ${problem}`);
  if (yield* findWorkspace(name)) throw new Error(`a workspace named "${name}" already exists`);
  const row: Row = { id: newId('ws', clock.now()), name, created_at: clock.now() };
  yield* run('INSERT INTO workspaces (id, name, created_at) VALUES (@id, @name, @created_at)', row);
  return toWorkspace(row);
}

export function* getWorkspace(id: string): Query<Workspace | null> {
  const row = yield* get<Row>('SELECT id, name, created_at FROM workspaces WHERE id = ?', id);
  return row ? toWorkspace(row) : null;
}

/** By id or by name, for the CLI's --workspace. */
export function* findWorkspace(idOrName: string): Query<Workspace | null> {
  if (isId('ws', idOrName)) return yield* getWorkspace(idOrName);
  const row = yield* get<Row>('SELECT id, name, created_at FROM workspaces WHERE name = ?', idOrName);
  return row ? toWorkspace(row) : null;
}

/** In a write transaction that holds the write lock from its start (SQLite: IMMEDIATE), so two processes starting at once make one. */
export function* ensureDefaultWorkspace(clock: Clock): Query<Workspace> {
  return (yield* findWorkspace(DEFAULT_WORKSPACE)) ?? (yield* createWorkspace(clock, DEFAULT_WORKSPACE));
}
