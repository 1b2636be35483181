// Test-only: every table the box keeps, its rows hashed, read through the store so that either engine can be
// asked "did this request change anything?". A row's columns in order, bytes as hex; the rows of a table
// sorted, since PostgreSQL may return the same rows in another order after an update that changed nothing.
import { createHash } from 'node:crypto';
import { all, column } from '../db/query.ts';
import type { Store } from '../db/store.ts';

/** The table names, SQLite's FTS5 virtual tables left out (their shadow tables hold the same rows). */
const tableNames = () =>
  column<string>({
    sqlite: "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
    postgres: "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
  });

const rowText = (row: Record<string, unknown>) => JSON.stringify(Object.values(row), (_k, v) => (Buffer.isBuffer(v) ? v.toString('hex') : typeof v === 'bigint' ? String(v) : v));

/** Each table's digest but those in `leaveOut`, by name. */
export async function tableDigests(store: Pick<Store, 'read'>, leaveOut: string[] = []): Promise<Record<string, string>> {
  const sums: Record<string, string> = {};
  for (const table of await store.read(tableNames())) {
    if (leaveOut.includes(table)) continue;
    const rows = (await store.read(all<Record<string, unknown>>(`SELECT * FROM "${table}"`))).map(rowText).sort();
    const hash = createHash('sha256');
    for (const row of rows) hash.update(row);
    sums[table] = hash.digest('hex');
  }
  return sums;
}
