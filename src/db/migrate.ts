// Numbered schema migrations (src/db/migrations/NNNN_name.sql), each applied in its own IMMEDIATE
// transaction together with its bookkeeping row, so a crash leaves the schema at one version or the next.
// Safe to run from the CLI while `serve` runs: whoever takes the write lock first applies, the other skips.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { Db } from './open.ts';

const DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(dir = DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 4)), name: f.slice(5, -4), sql: readFileSync(join(dir, f), 'utf8') }));
}

/**
 * Applies every pending migration; returns the versions it applied. `onApply` hears each one before it runs:
 * some rebuild a table or an index of the whole mailbox and take minutes on a large box.
 */
export function migrate(db: Db, now = Date.now(), migrations = listMigrations(), onApply?: (m: Migration) => void): number[] {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  const current = () => Number(db.prepare('SELECT coalesce(max(version), 0) FROM schema_migrations').pluck().get());
  const newest = migrations.at(-1)?.version ?? 0;
  if (current() > newest) {
    throw new Error(`the database is at schema version ${current()}, newer than this release knows (${newest}); run the newer release`);
  }
  const applied: number[] = [];
  for (const m of migrations) {
    db.transaction(() => {
      if (db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version)) return;
      onApply?.(m);
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, now);
      applied.push(m.version);
    }).immediate();
  }
  return applied;
}
